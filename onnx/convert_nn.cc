// ONNX network nodes: Conv, ConvTranspose, pooling, BatchNormalization (inference), Gemm, MatMul,
// Softmax / LogSoftmax, LRN.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/argument.h"
#include "core/strings.h"
#include "onnx/convert_util.h"

namespace halfcaf {
namespace onnx_import {
namespace {

// Spatial geometry of a Conv / pool node: kernel, strides, dilations and pads (begins then ends,
// as both ONNX and Caffe2 order them), auto_pad resolved against the input's dims.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;
};

Window ReadWindow(ConvertContext& c, std::vector<int64_t> kernel, bool ceil_mode) {
  Window w;
  const size_t n = kernel.size();
  w.kernel = kernel;
  w.strides = c.Ints("strides");
  w.dilations = c.Ints("dilations");
  w.pads = c.Ints("pads");
  if (w.strides.empty()) w.strides.assign(n, 1);
  if (w.dilations.empty()) w.dilations.assign(n, 1);
  if (w.pads.empty()) w.pads.assign(2 * n, 0);
  if (w.strides.size() != n || w.dilations.size() != n || w.pads.size() != 2 * n) {
    c.Unsupported(MakeString("strides, dilations or pads do not match the ", n,
                             " spatial dims of the kernel"));
  }
  for (size_t i = 0; i < n; ++i) {
    if (w.kernel[i] < 1 || w.strides[i] < 1 || w.dilations[i] < 1) {
      c.Unsupported("kernel, stride and dilation must be >= 1");
    }
  }
  for (int64_t p : w.pads) {
    if (p < 0) c.Unsupported("negative pads are not supported");
  }
  const std::string auto_pad = c.String("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    std::fill(w.pads.begin(), w.pads.end(), 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const std::vector<int64_t>& dims = c.Dims(0, "auto_pad " + auto_pad + " depends on it");
    for (size_t i = 0; i < n; ++i) {
      const int64_t in = dims[2 + i];
      const int64_t out = (in + w.strides[i] - 1) / w.strides[i];
      const int64_t total = std::max<int64_t>(
          0, (out - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 - in);
      const int64_t small = total / 2, big = total - small;
      w.pads[i] = auto_pad == "SAME_UPPER" ? small : big;
      w.pads[n + i] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad != "NOTSET") {
    c.Unsupported("auto_pad '" + auto_pad + "' is not supported");
  }
  if (ceil_mode) {
    // The output size rounds up: the windows that start inside the (padded) input but run past
    // its end get extra end padding, which pooling ignores.
    const std::vector<int64_t>& dims = c.Dims(0, "ceil_mode depends on it");
    for (size_t i = 0; i < n; ++i) {
      const int64_t span = dims[2 + i] + w.pads[i] + w.pads[n + i] -
                           ((w.kernel[i] - 1) * w.dilations[i] + 1);
      if (span < 0) continue;
      const int64_t out = (span + w.strides[i] - 1) / w.strides[i] + 1;
      const int64_t need = (out - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 -
                           (dims[2 + i] + w.pads[i] + w.pads[n + i]);
      if (need > 0) w.pads[n + i] += need;
    }
  }
  return w;
}

std::vector<Argument> WindowArgs(const Window& w) {
  return {MakeArgument("kernels", w.kernel), MakeArgument("strides", w.strides),
          MakeArgument("pads", w.pads), MakeArgument("order", "NCHW")};
}

// Conv's weight dims (M, C / group, k1, ...): from the constant or the static shape.
std::vector<int64_t> WeightDims(ConvertContext& c) {
  if (const Tensor* w = c.Const(1)) return w->dims();
  return c.Dims(1, "the kernel size comes from the weight's shape");
}

}  // namespace

HALFCAF_ONNX_CONVERTER(Conv) {
  c.OnlyAttributes({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  c.RequireFloat(0);
  c.RequireFloat(1);
  const std::vector<int64_t> wd = WeightDims(c);
  if (wd.size() < 3) c.Unsupported("the weight must have at least 3 dims");
  std::vector<int64_t> kernel(wd.begin() + 2, wd.end());
  const std::vector<int64_t> given = c.Ints("kernel_shape");
  if (!given.empty() && given != kernel) {
    c.Unsupported("kernel_shape " + DimsString(given) + " differs from the weight's " +
                  DimsString(kernel));
  }
  const Window w = ReadWindow(c, kernel, false);
  std::vector<Argument> args = WindowArgs(w);
  args.push_back(MakeArgument("dilations", w.dilations));
  args.push_back(MakeArgument("group", c.Int("group", 1)));
  std::vector<std::string> inputs{c.Input(0), c.Input(1)};
  if (c.HasInput(2)) {
    c.RequireFloat(2);
    inputs.push_back(c.Input(2));
  } else {
    args.push_back(MakeArgument("no_bias", 1));
  }
  c.Emit(c.Op("Conv", inputs, {c.Output(0)}, args));
}

HALFCAF_ONNX_CONVERTER(ConvTranspose) {
  c.OnlyAttributes({"auto_pad", "dilations", "group", "kernel_shape", "output_padding",
                    "output_shape", "pads", "strides"});
  RequireOperator(c, "ConvTranspose");
  c.RequireFloat(0);
  c.RequireFloat(1);
  const std::vector<int64_t> wd = WeightDims(c);
  if (wd.size() < 3) c.Unsupported("the weight must have at least 3 dims");
  std::vector<int64_t> kernel(wd.begin() + 2, wd.end());
  const size_t n = kernel.size();
  const std::vector<int64_t> given = c.Ints("kernel_shape");
  if (!given.empty() && given != kernel) {
    c.Unsupported("kernel_shape " + DimsString(given) + " differs from the weight's " +
                  DimsString(kernel));
  }
  // Pads from `pads`, or from output_shape / auto_pad (ONNX's total-padding rule).
  const std::string auto_pad = c.String("auto_pad", "NOTSET");
  std::vector<int64_t> strides = c.Ints("strides"), dilations = c.Ints("dilations");
  std::vector<int64_t> pads = c.Ints("pads"), adj = c.Ints("output_padding");
  if (strides.empty()) strides.assign(n, 1);
  if (dilations.empty()) dilations.assign(n, 1);
  if (pads.empty()) pads.assign(2 * n, 0);
  if (adj.empty()) adj.assign(n, 0);
  if (strides.size() != n || dilations.size() != n || pads.size() != 2 * n || adj.size() != n) {
    c.Unsupported("strides, dilations, pads or output_padding do not match the kernel's rank");
  }
  std::vector<int64_t> out_shape = c.Ints("output_shape");
  if (out_shape.size() == n + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const std::vector<int64_t>& dims = c.Dims(0, "output_shape / auto_pad pads depend on it");
    if (out_shape.empty()) {
      for (size_t i = 0; i < n; ++i) out_shape.push_back(dims[2 + i] * strides[i]);
    }
    if (out_shape.size() != n) c.Unsupported("output_shape does not match the kernel's rank");
    for (size_t i = 0; i < n; ++i) {
      const int64_t total = strides[i] * (dims[2 + i] - 1) + adj[i] +
                            (kernel[i] - 1) * dilations[i] + 1 - out_shape[i];
      if (total < 0) {  // a larger output: the extra rows and columns come from output_padding
        adj[i] -= total;
        pads[i] = pads[n + i] = 0;
        continue;
      }
      const bool upper = auto_pad == "SAME_UPPER";
      pads[i] = upper ? total / 2 : total - total / 2;
      pads[n + i] = upper ? total - total / 2 : total / 2;
    }
  } else if (auto_pad == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  } else if (auto_pad != "NOTSET") {
    c.Unsupported("auto_pad '" + auto_pad + "' is not supported");
  }
  std::vector<Argument> args{MakeArgument("kernels", kernel), MakeArgument("strides", strides),
                             MakeArgument("pads", pads), MakeArgument("adjs", adj),
                             MakeArgument("dilations", dilations),
                             MakeArgument("group", c.Int("group", 1)),
                             MakeArgument("order", "NCHW")};
  std::vector<std::string> inputs{c.Input(0), c.Input(1)};
  if (c.HasInput(2)) inputs.push_back(c.Input(2));
  c.Emit(c.Op("ConvTranspose", inputs, {c.Output(0)}, args));
}

static void Pool(ConvertContext& c, const std::string& type, bool global) {
  c.RequireFloat(0);
  if (c.HasOutput(1)) c.Unsupported("the Indices output is not supported");
  if (global) {
    c.OnlyAttributes({});
    c.Emit(c.Op(type, {c.Input(0)}, {c.Output(0)},
                {MakeArgument("global_pooling", 1), MakeArgument("order", "NCHW")}));
    return;
  }
  const bool max = type == "MaxPool";
  if (max) {
    c.OnlyAttributes({"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads",
                      "storage_order", "strides"});
  } else {
    c.OnlyAttributes({"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads",
                      "strides"});
  }
  const std::vector<int64_t> kernel = c.Ints("kernel_shape");
  if (kernel.empty()) c.Unsupported("kernel_shape is required");
  const bool ceil_mode = c.Int("ceil_mode", 0) != 0;
  Window w = ReadWindow(c, kernel, ceil_mode);
  std::string x = c.Input(0);
  const bool padded = std::any_of(w.pads.begin(), w.pads.end(), [](int64_t p) { return p != 0; });
  if (!max && c.Int("count_include_pad", 0) != 0 && padded) {
    // halfcaf's AveragePool divides by the window's elements inside the input; ONNX's
    // count_include_pad=1 by the whole window, padding included. Padding with zeros first
    // (PadImage) puts every window inside the input, so the two agree.
    if (kernel.size() != 2) {
      c.Unsupported(MakeString("count_include_pad=1 with padding is supported for 2-D pooling "
                               "only (PadImage pads NCHW images), got a ",
                               kernel.size(), "-D kernel"));
    }
    if (ceil_mode && ReadWindow(c, kernel, false).pads != w.pads) {
      c.Unsupported("count_include_pad=1 with ceil_mode windows that run past the padding is not "
                    "supported (whether the part past the padding counts is not defined)");
    }
    RequireOperator(c, "PadImage");
    x = c.Temp("padded");
    c.Emit(c.Op("PadImage", {c.Input(0)}, {x},
                {MakeArgument("pads", w.pads), MakeArgument("mode", "constant"),
                 MakeArgument("value", 0.f), MakeArgument("order", "NCHW")}));
    std::fill(w.pads.begin(), w.pads.end(), 0);
  }
  std::vector<Argument> args = WindowArgs(w);
  // Only MaxPool has dilations before opset 19 (OnlyAttributes refuses them on AveragePool).
  if (std::any_of(w.dilations.begin(), w.dilations.end(), [](int64_t d) { return d != 1; })) {
    args.push_back(MakeArgument("dilations", w.dilations));
  }
  c.Emit(c.Op(type, {x}, {c.Output(0)}, args));
}

HALFCAF_ONNX_CONVERTER(MaxPool) { Pool(c, "MaxPool", false); }
HALFCAF_ONNX_CONVERTER(AveragePool) { Pool(c, "AveragePool", false); }
HALFCAF_ONNX_CONVERTER(GlobalMaxPool) { Pool(c, "MaxPool", true); }
HALFCAF_ONNX_CONVERTER(GlobalAveragePool) { Pool(c, "AveragePool", true); }

// Test mode (an eval export) is SpatialBN with is_test=1. Training mode (training_mode=1 from
// opset 14, or the training outputs of opsets 9-13: what PyTorch's TrainingMode.TRAINING export
// writes) is SpatialBN in training mode, as ONNX defines it: batch statistics, the running ones
// updated in place (running * momentum + batch * (1 - momentum), the biased batch variance; ONNX
// and Caffe2 weight the running value by momentum alike) and copied to the node's running
// outputs where something reads them; the batch mean is the saved-mean output. The
// saved-variance output of opsets 9-13 has no counterpart (halfcaf saves the inverse std) and
// stays unset. `momentum` is kept on the op in both modes for fine-tuning
// (models/imported_model.h).
HALFCAF_ONNX_CONVERTER(BatchNormalization) {
  c.OnlyAttributes({"epsilon", "momentum", "spatial", "training_mode", "is_test",
                    "consumed_inputs"});
  if (c.Int("spatial", 1) != 1) c.Unsupported("spatial=0 is not supported");
  for (int i = 0; i < 5; ++i) c.RequireFloat(i);
  const float momentum = c.Float("momentum", 0.9f);
  if (!(momentum >= 0.f && momentum <= 1.f)) c.Unsupported("momentum must be in [0, 1]");
  const bool training = c.Int("training_mode", 0) != 0 || c.NumOutputs() > 1;
  std::vector<Argument> args{MakeArgument("is_test", training ? 0 : 1),
                             MakeArgument("epsilon", c.Float("epsilon", 1e-5f)),
                             MakeArgument("momentum", momentum), MakeArgument("order", "NCHW")};
  const std::vector<std::string> in{c.Input(0), c.Input(1), c.Input(2), c.Input(3), c.Input(4)};
  if (!training) {
    c.Emit(c.Op("SpatialBN", in, {c.Output(0)}, args));
    return;
  }
  if (c.Const(0) != nullptr) c.Unsupported("training mode on a constant input");
  const bool opset14 = c.Has("training_mode");
  const std::string saved_mean = !opset14 && c.HasOutput(3) ? c.Output(3) : c.Temp("saved_mean");
  c.Emit(c.Op("SpatialBN", in,
              {c.Output(0), c.Input(3), c.Input(4), saved_mean, c.Temp("saved_inv_std")}, args));
  c.MarkVariable(c.Input(3));
  c.MarkVariable(c.Input(4));
  for (int k = 1; k <= 2; ++k) {
    if (c.OutputUsed(k)) c.Emit(c.Op("Copy", {c.Input(k + 2)}, {c.Output(k)}));
  }
}

// A constant of n zeros (float), for FC ops without a bias.
static std::string Zeros(ConvertContext& c, int64_t n) {
  const std::string name = c.Temp("zero_bias");
  Tensor z(std::vector<int64_t>{n}, DataType::FLOAT);
  std::fill(z.mutable_data<float>(), z.mutable_data<float>() + n, 0.f);
  c.SetConst(name, z);
  return name;
}

// Y = alpha * op(A) op(B) + beta * C, on FC (B as (N, K)) or FCTransposed (B as (K, N)).
HALFCAF_ONNX_CONVERTER(Gemm) {
  c.OnlyAttributes({"alpha", "beta", "transA", "transB", "broadcast"});
  for (int i = 0; i < c.NumInputs(); ++i) c.RequireFloat(i);
  const float alpha = c.Float("alpha", 1.f), beta = c.Float("beta", 1.f);
  const bool trans_b = c.Int("transB", 0) != 0;
  std::string a = c.Input(0);
  if (c.Int("transA", 0) != 0) {
    const std::string t = c.Temp("a_transposed");
    c.Emit(c.Op("Transpose", {a}, {t}, {MakeArgument("axes", std::vector<int64_t>{1, 0})}));
    a = t;
  }
  const std::vector<int64_t> bd =
      c.Const(1) ? c.Const(1)->dims() : c.Dims(1, "the output width comes from B's shape");
  if (bd.size() != 2) c.Unsupported("B must be 2-D");
  const int64_t n = trans_b ? bd[0] : bd[1];
  const std::string fc = trans_b ? "FC" : "FCTransposed";
  // A bias the FC can take: C of N values (or one), alpha 1.
  const TensorShape* cs = c.HasInput(2) ? c.Shape(2) : nullptr;
  const bool vector_c = cs && (cs->numel() == n || cs->numel() == 1) &&
                        (cs->dims.size() <= 1 || (cs->dims.size() == 2 && cs->dims[0] == 1));
  if (alpha == 1.f && (!c.HasInput(2) || beta == 0.f || vector_c)) {
    std::string bias;
    if (!c.HasInput(2) || beta == 0.f) {
      bias = Zeros(c, n);
    } else {
      bias = c.Temp("bias");
      if (cs->dims == std::vector<int64_t>{n} && beta == 1.f) {
        bias = c.Input(2);  // already the FC's bias (keeps the model's parameter name)
      } else if (cs->numel() == n) {
        c.Emit(c.Op("Reshape", {c.Input(2)}, {bias, c.Temp("old_shape")},
                    {MakeArgument("shape", std::vector<int64_t>{n})}));
      } else {  // one value, repeated
        const std::string zeros = Zeros(c, n);
        c.Emit(c.Op("Add", {zeros, c.Input(2)}, {bias}, {MakeArgument("broadcast", 1)}));
      }
      if (beta != 1.f) {
        const std::string scaled = c.Temp("bias_scaled");
        c.Emit(c.Op("Scale", {bias}, {scaled}, {MakeArgument("scale", beta)}));
        bias = scaled;
      }
    }
    c.Emit(c.Op(fc, {a, c.Input(1), bias}, {c.Output(0)}));
    return;
  }
  // General: alpha * A B, then + beta * C with broadcasting.
  const std::string product = c.Temp("product");
  c.Emit(c.Op(fc, {a, c.Input(1), Zeros(c, n)}, {product}));
  std::string scaled = product;
  if (alpha != 1.f) {
    scaled = c.Temp("product_scaled");
    c.Emit(c.Op("Scale", {product}, {scaled}, {MakeArgument("scale", alpha)}));
  }
  if (!c.HasInput(2) || beta == 0.f) {
    c.Emit(c.Op("Copy", {scaled}, {c.Output(0)}));
    return;
  }
  std::string cc = c.Input(2);
  if (beta != 1.f) {
    cc = c.Temp("c_scaled");
    c.Emit(c.Op("Scale", {c.Input(2)}, {cc}, {MakeArgument("scale", beta)}));
  }
  if (!cs) c.Unsupported("the shape of C is not known at import");
  const std::vector<int64_t>& ad = c.Dims(0, "Gemm's output shape");
  if (ad.size() != 2) c.Unsupported("A must be 2-D, not " + DimsString(ad));
  const std::vector<int64_t> out_dims{ad[c.Int("transA", 0) ? 1 : 0], n};
  if (!CaffeBroadcastable(out_dims, cs->dims)) {
    c.Unsupported("C of shape " + DimsString(cs->dims) + " does not broadcast to " +
                  DimsString(out_dims) + " in a way halfcaf supports");
  }
  c.Emit(c.Op("Add", {scaled, cc}, {c.Output(0)},
              {MakeArgument("broadcast", cs->dims == out_dims ? 0 : 1)}));
}

// MatMul of an N-D A with a 2-D B (FCTransposed over A's last dim); batched products need
// BatchMatMul.
HALFCAF_ONNX_CONVERTER(MatMul) {
  c.OnlyAttributes({});
  c.RequireFloat(0);
  c.RequireFloat(1);
  const std::vector<int64_t>& ad = c.Dims(0, "MatMul's form depends on the ranks");
  const std::vector<int64_t> bd = c.Const(1) ? c.Const(1)->dims() : c.Dims(1, "MatMul's form");
  if (ad.size() >= 2 && bd.size() == 2) {
    c.Emit(c.Op("FCTransposed", {c.Input(0), c.Input(1), Zeros(c, bd[1])}, {c.Output(0)},
                {MakeArgument("axis", static_cast<int64_t>(ad.size() - 1))}));
    return;
  }
  if (ad.size() >= 3 && ad.size() == bd.size() &&
      std::equal(ad.begin(), ad.end() - 2, bd.begin())) {
    RequireOperator(c, "BatchMatMul");
    c.Emit(c.Op("BatchMatMul", {c.Input(0), c.Input(1)}, {c.Output(0)}));
    return;
  }
  c.Unsupported("MatMul of shapes " + DimsString(ad) + " and " + DimsString(bd) +
                " is not supported");
}

// Softmax and LogSoftmax. Before opset 13 the input is seen as 2-D at `axis` (Caffe2's
// semantics); from 13 the softmax runs along `axis` alone, which is the same when it is the
// last axis, and otherwise is brought there by a transpose.
static void SoftmaxLike(ConvertContext& c, bool log) {
  c.OnlyAttributes({"axis"});
  c.RequireFloat(0);
  if (log) RequireOperator(c, "Log");
  const bool new_semantics = c.opset() >= 13;
  int64_t axis = c.Int("axis", new_semantics ? -1 : 1);
  std::string x = c.Input(0), y = log ? c.Temp("softmax") : c.Output(0);
  std::vector<int64_t> perm;
  const TensorShape* s = c.Shape(0);
  if (axis < 0 || new_semantics) {
    if (!s) c.Unsupported("the input's rank is not known at import");
    const int64_t rank = static_cast<int64_t>(s->dims.size());
    axis = NormalizeAxis(c, axis, rank);
    bool trailing_ones = true;
    for (int64_t k = axis + 1; k < rank; ++k) trailing_ones &= s->dims[k] == 1;
    if (new_semantics && !trailing_ones) {
      perm.resize(static_cast<size_t>(rank));
      std::iota(perm.begin(), perm.end(), 0);
      std::swap(perm[axis], perm[rank - 1]);
      const std::string t = c.Temp("to_last");
      c.Emit(c.Op("Transpose", {x}, {t}, {MakeArgument("axes", perm)}));
      x = t;
      axis = rank - 1;
    }
  }
  const std::string soft = perm.empty() ? y : c.Temp("softmax_last");
  c.Emit(c.Op("Softmax", {x}, {soft}, {MakeArgument("axis", axis)}));
  if (!perm.empty()) c.Emit(c.Op("Transpose", {soft}, {y}, {MakeArgument("axes", perm)}));
  if (log) c.Emit(c.Op("Log", {y}, {c.Output(0)}));
}

HALFCAF_ONNX_CONVERTER(Softmax) { SoftmaxLike(c, false); }
HALFCAF_ONNX_CONVERTER(LogSoftmax) { SoftmaxLike(c, true); }

HALFCAF_ONNX_CONVERTER(LRN) {
  c.OnlyAttributes({"alpha", "beta", "bias", "size"});
  RequireOperator(c, "LRN");
  c.RequireFloat(0);
  c.Emit(c.Op("LRN", {c.Input(0)}, {c.Output(0)},
              {MakeArgument("size", c.Int("size", 0)), MakeArgument("alpha", c.Float("alpha", 1e-4f)),
               MakeArgument("beta", c.Float("beta", 0.75f)), MakeArgument("bias", c.Float("bias", 1.f)),
               MakeArgument("order", "NCHW")}));
}

}  // namespace onnx_import
}  // namespace halfcaf
