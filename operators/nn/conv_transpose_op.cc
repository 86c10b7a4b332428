#include "operators/nn/conv_transpose_op.h"

#include <algorithm>
#include <optional>

#include "core/checked_math.h"
#include "core/float_io.h"
#include "core/gradient.h"
#include "core/math.h"
#include "core/scratch.h"
#include "operators/nn/channel_block.h"
#include "operators/nn/conv_op.h"
#include "operators/nn/im2col.h"

namespace halfcaf {

namespace {

// adjs | adj | adj_h + adj_w, as the other per-dim arguments: one form only, default 0.
std::vector<int64_t> ReadAdjs(const ArgumentHelper& args, const std::string& label, int nd) {
  const bool named = args.HasArgument("adj_h") || args.HasArgument("adj_w");
  const int forms =
      (args.HasArgument("adjs") ? 1 : 0) + (args.HasArgument("adj") ? 1 : 0) + (named ? 1 : 0);
  HALFCAF_ENFORCE(forms <= 1, label,
                  ": give only one of 'adjs', 'adj' or adj_h/adj_w, not several");
  if (args.HasArgument("adjs")) {
    std::vector<int64_t> adj = args.GetRepeatedArgument<int64_t>("adjs");
    HALFCAF_ENFORCE(static_cast<int>(adj.size()) == nd, label, ": adjs ", DimsString(adj),
                    " must have one entry per kernel dim (", nd, ")");
    return adj;
  }
  if (args.HasArgument("adj"))
    return std::vector<int64_t>(nd, args.GetSingleArgument<int64_t>("adj", 0));
  if (!named) return std::vector<int64_t>(nd, 0);
  HALFCAF_ENFORCE(args.HasArgument("adj_h") && args.HasArgument("adj_w"), label,
                  ": adj_h/adj_w must be given together");
  HALFCAF_ENFORCE(nd == 2, label, ": adj_h/adj_w describe a 2-D kernel, but 'kernels' asks for ",
                  nd, " 'adjs' entries; use 'adjs'");
  return {args.GetSingleArgument<int64_t>("adj_h", 0), args.GetSingleArgument<int64_t>("adj_w", 0)};
}

Im2ColShape MakeIm2ColShape(const ConvPoolGeometry& g) {
  return Im2ColShape{g.in[0],       g.in[1],       g.kernel[0],   g.kernel[1],
                     g.dilation[0], g.dilation[1], g.pad_head(0), g.pad_head(1),
                     g.stride[0],   g.stride[1],   g.out[0],      g.out[1]};
}

Im2ColNdShape MakeIm2ColNdShape(const ConvPoolGeometry& g) {
  return Im2ColNdShape{
      g.in,       g.kernel,
      g.dilation, std::vector<int64_t>(g.pads.begin(), g.pads.begin() + g.in.size()),
      g.stride,   g.out};
}

// Im2Col (Y-sized NCHW image -> columns) or, with to_image, Col2Im (columns added into the image)
// of `channels` channels: the fast 2-D functions for 2-D kernels, the N-d ones otherwise.
void NchwColumns(const ConvPoolGeometry& g, bool to_image, int64_t channels, const float* src,
                 float* dst) {
  if (g.num_spatial_dims() == 2) {
    const Im2ColShape s = MakeIm2ColShape(g);
    to_image ? Col2ImNCHW(s, channels, src, dst) : Im2ColNCHW(s, channels, src, dst);
  } else {
    const Im2ColNdShape s = MakeIm2ColNdShape(g);
    to_image ? Col2ImNdNCHW(s, channels, src, dst) : Im2ColNdNCHW(s, channels, src, dst);
  }
}

// The sizes of one run: groups, channels (X: M, Y: C) and per group, spatial sizes (X: P, Y: Q)
// and the rows of one group's column matrix (K).
struct RunSizes {
  RunSizes(const ConvTransposeArgs& a, const ConvTransposeGeometry& tg)
      : G(a.cp.group),
        M(tg.M),
        Mg(M / G),
        C(tg.conv.C),
        Cg(C / G),
        P(tg.conv.out_size()),
        Q(tg.conv.in_size()),
        K(Cg * tg.conv.kernel_size()) {}
  int64_t G, M, Mg, C, Cg, P, Q, K;
};

}  // namespace

ConvTransposeArgs ParseConvTransposeArgs(const ArgumentHelper& args, const std::string& label) {
  ConvTransposeArgs a;
  a.cp = ParseConvPoolArgs(args, ConvPoolKind::kConv, label);
  const ConvPoolArgs& p = a.cp;
  HALFCAF_ENFORCE(p.legacy_pad != LegacyPadding::CAFFE_LEGACY_POOLING, label,
                  ": legacy_pad CAFFE_LEGACY_POOLING (3) does not apply to ConvTranspose (as in "
                  "Caffe2); use NOTSET, VALID or SAME");
  HALFCAF_ENFORCE(p.filter_order == p.order, label,
                  ": filter_order does not apply to ConvTranspose (its filter is in its order)");
  const int nd = p.num_spatial_dims();
  HALFCAF_ENFORCE(p.order == StorageOrder::NCHW || nd == 2, label,
                  ": NHWC order supports only 2-D transposed convolution, got a ", nd, "-D kernel ",
                  DimsString(p.kernel), "; use order NCHW");
  a.adj = ReadAdjs(args, label, nd);
  for (int d = 0; d < nd; ++d) {
    const int64_t limit = std::max(p.stride[d], p.dilation[d]);
    HALFCAF_ENFORCE(a.adj[d] >= 0 && a.adj[d] <= limit, label, ": adjs ", DimsString(a.adj),
                    " must each be in [0, max(stride, dilation)] (strides ", DimsString(p.stride),
                    ", dilations ", DimsString(p.dilation), ")");
  }
  return a;
}

ConvTransposeArgs ParseConvTransposeArgs(const OperatorDef& def) {
  const std::string label =
      def.name().empty() ? def.type() : MakeString(def.type(), " '", def.name(), "'");
  return ParseConvTransposeArgs(ArgumentHelper(def), label);
}

ConvTransposeGeometry ComputeConvTransposeGeometry(const ConvTransposeArgs& a,
                                                   const std::vector<int64_t>& x,
                                                   const std::vector<int64_t>& w) {
  const ConvPoolArgs& p = a.cp;
  const bool nchw = p.order == StorageOrder::NCHW;
  const int nd = p.num_spatial_dims();
  const std::string& label = p.op_label;
  HALFCAF_ENFORCE(static_cast<int>(x.size()) == nd + 2, label, ": X must have ", nd + 2, " dims ",
                  nchw ? "(N, M, spatial...)" : "(N, H, W, M)", " for a ", nd, "-D kernel in ",
                  StorageOrderName(p.order), " order, got ", DimsString(x));
  const char* layout = nchw ? "(M, C/group, kernel...)" : "(M, kH, kW, C/group)";
  HALFCAF_ENFORCE(static_cast<int>(w.size()) == nd + 2, label, ": filter must have ", nd + 2,
                  " dims ", layout, ", got ", DimsString(w));
  ConvTransposeGeometry g;
  g.M = nchw ? x[1] : x.back();
  HALFCAF_ENFORCE(w[0] == g.M, label, ": filter ", DimsString(w), " ", layout, " has ", w[0],
                  " input channels, but X ", DimsString(x), " has M = ", g.M);
  HALFCAF_ENFORCE(g.M % p.group == 0, label, ": X has M = ", g.M,
                  " channels, which is not divisible by group ", p.group);
  const int64_t cg = nchw ? w[1] : w.back();
  ConvPoolGeometry& c = g.conv;
  c.N = x[0];
  c.C = CheckedMul(cg, p.group, label, "output channels");
  c.out.assign(x.begin() + (nchw ? 2 : 1), x.begin() + (nchw ? 2 : 1) + nd);
  c.kernel = p.kernel;
  c.stride = p.stride;
  c.dilation = p.dilation;
  c.pads = p.pads;  // VALID / SAME: parsed as 0
  c.in.resize(nd);
  for (int d = 0; d < nd; ++d) {
    const int64_t fk = w[(nchw ? 2 : 1) + d];
    HALFCAF_ENFORCE(fk == p.kernel[d], label, ": filter ", DimsString(w), " ", layout,
                    " does not match the kernel ", DimsString(p.kernel),
                    " given by the arguments (spatial dim ", d, ": ", fk, " vs ", p.kernel[d], ")");
    const std::string where = MakeString(label, ": X ", DimsString(x), ", spatial dim ", d, ": ");
    HALFCAF_ENFORCE(c.out[d] >= 1, where, "the input size must be >= 1");
    const int64_t dk =
        CheckedAdd(CheckedMul(p.dilation[d], p.kernel[d] - 1, where, "kernel"), 1, where, "kernel");
    const int64_t full = CheckedAdd(CheckedMul(c.out[d] - 1, p.stride[d], where, "output size"),
                                    dk + a.adj[d], where, "output size");
    c.in[d] = full - CheckedAdd(c.pad_head(d), c.pad_tail(d), where, "pads");
    HALFCAF_ENFORCE(c.in[d] >= 1, where, "the output size (in - 1) * stride + dilated kernel + adj",
                    " - pads = ", full, " - ", c.pad_head(d), " - ", c.pad_tail(d), " = ", c.in[d],
                    " must be >= 1 (pads ", DimsString(p.pads), ")");
  }
  g.y_dims = {c.N};
  if (nchw) g.y_dims.push_back(c.C);
  g.y_dims.insert(g.y_dims.end(), c.in.begin(), c.in.end());
  if (!nchw) g.y_dims.push_back(c.C);
  return g;
}

void CheckConvTransposeBias(const ConvTransposeArgs& a, const ConvTransposeGeometry& g,
                            const std::vector<int64_t>& b) {
  HALFCAF_ENFORCE(b.size() == 1 && b[0] == g.conv.C, a.cp.op_label, ": bias must have dims [",
                  g.conv.C, "] (one per output channel), got ", DimsString(b));
}

void CheckConvTransposeGradientDY(const ConvTransposeArgs& a, const ConvTransposeGeometry& g,
                                  const std::vector<int64_t>& dy) {
  HALFCAF_ENFORCE(dy == g.y_dims, a.cp.op_label, ": dY has dims ", DimsString(dy),
                  " but the transposed convolution gives Y ", DimsString(g.y_dims));
}

ConvTransposeOp::ConvTransposeOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), a_(ParseConvTransposeArgs(args_, DebugName())) {
  RefuseChannelBlock(*this);
}

void ConvTransposeOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& W = Input(1);
  EnforceFloatType(X, "ConvTranspose input X");
  EnforceFloatType(W, "ConvTranspose filter");
  const ConvTransposeGeometry tg = ComputeConvTransposeGeometry(a_, X.dims(), W.dims());
  const ConvPoolGeometry& g = tg.conv;
  const float* b = nullptr;
  if (InputSize() == 3) {
    const Tensor& B = Input(2);
    EnforceFloatType(B, "ConvTranspose bias");
    CheckConvTransposeBias(a_, tg, B.dims());
    b = ReadAsFloat(B, &b_);
  }
  const float* x = ReadAsFloat(X, &x_);
  const float* w = ReadAsFloat(W, &w_);
  FloatWriter yw(Output(0, tg.y_dims), X.dtype(), &y_);
  float* y = yw.data();
  const RunSizes z(a_, tg);
  const int64_t G = z.G, M = z.M, Mg = z.Mg, C = z.C, Cg = z.Cg, P = z.P, Q = z.Q, K = z.K;
  float* col_data =
      ScratchFloats(static_cast<size_t>(CheckedMul(K, P, "col2im buffer")), &col_);  // scratch
  std::fill_n(y, CheckedMul(g.N * C, Q, "Y"), 0.f);
  using math::Trans;

  if (a_.cp.order == StorageOrder::NCHW) {
    for (int64_t n = 0; n < g.N; ++n) {
      for (int64_t gr = 0; gr < G; ++gr) {
        // col (K x P) = W_g^T (K x Mg) * X_g (Mg x P), then scattered into Y's group channels.
        math::Gemm(Trans::kYes, Trans::kNo, K, P, Mg, 1.f, w + gr * Mg * K,
                   x + (n * M + gr * Mg) * P, 0.f, col_data);
        NchwColumns(g, true, Cg, col_data, y + (n * C + gr * Cg) * Q);
      }
      if (b) {
        for (int64_t c = 0; c < C; ++c) {
          float* row = y + (n * C + c) * Q;
          for (int64_t q = 0; q < Q; ++q) row[q] += b[c];
        }
      }
    }
  } else {
    const Im2ColShape s = MakeIm2ColShape(g);  // NHWC is 2-D only
    for (int64_t n = 0; n < g.N; ++n) {
      const float* ximg = x + n * P * M;
      float* yimg = y + n * Q * C;
      for (int64_t gr = 0; gr < G; ++gr) {
        // col (P x K) = X_g (P x Mg, leading dim M) * W_g (Mg x K)
        math::GemmEx(Trans::kNo, Trans::kNo, P, K, Mg, 1.f, ximg + gr * Mg, M, w + gr * Mg * K, K,
                     0.f, col_data, K);
        Col2ImNHWC(s, C, gr * Cg, Cg, col_data, yimg);
      }
      if (b) {
        for (int64_t q = 0; q < Q; ++q) math::Axpy(C, 1.f, b, yimg + q * C);
      }
    }
  }
  yw.Commit();
}

ConvTransposeGradientOp::ConvTransposeGradientOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      a_(ParseConvTransposeArgs(args_, DebugName())),
      no_bias_(GetSingleArgument<int>("no_bias", 0) != 0) {
  CheckConvGradientOutputs(a_.cp, no_bias_, OutputSize());
  RefuseChannelBlock(*this);
}

void ConvTransposeGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& W = Input(1);
  const Tensor& dY = Input(2);
  EnforceFloatType(X, "ConvTransposeGradient input X");
  EnforceFloatType(W, "ConvTransposeGradient filter");
  EnforceFloatType(dY, "ConvTransposeGradient dY");
  const ConvTransposeGeometry tg = ComputeConvTransposeGeometry(a_, X.dims(), W.dims());
  CheckConvTransposeGradientDY(a_, tg, dY.dims());
  const ConvPoolGeometry& g = tg.conv;
  const bool compute_dx = OutputSize() == (no_bias_ ? 2 : 3);
  const float* x = ReadAsFloat(X, &x_);
  const float* w = ReadAsFloat(W, &w_);
  const float* dy = ReadAsFloat(dY, &dy_);
  const RunSizes z(a_, tg);
  const int64_t G = z.G, M = z.M, Mg = z.Mg, C = z.C, Cg = z.Cg, P = z.P, Q = z.Q, K = z.K;

  FloatWriter dww(Output(0, W.dims()), W.dtype(), &dw_);
  float* dw = dww.data();
  std::fill_n(dw, W.numel(), 0.f);
  std::optional<FloatWriter> dbw, dxw;
  float* db = nullptr;
  if (!no_bias_) {
    dbw.emplace(Output(1, {C}), W.dtype(), &db_);
    db = dbw->data();
    std::fill_n(db, C, 0.f);
  }
  float* dx = nullptr;
  if (compute_dx) {
    dxw.emplace(Output(no_bias_ ? 1 : 2, X.dims()), X.dtype(), &dx_);
    dx = dxw->data();
  }
  float* col_data =
      ScratchFloats(static_cast<size_t>(CheckedMul(K, P, "im2col buffer")), &col_);  // scratch
  using math::Trans;

  if (a_.cp.order == StorageOrder::NCHW) {
    for (int64_t n = 0; n < g.N; ++n) {
      for (int64_t gr = 0; gr < G; ++gr) {
        NchwColumns(g, false, Cg, dy + (n * C + gr * Cg) * Q, col_data);
        const float* xg = x + (n * M + gr * Mg) * P;
        // dW_g (Mg x K) += X_g (Mg x P) * col^T; dX_g (Mg x P) = W_g (Mg x K) * col (K x P)
        math::Gemm(Trans::kNo, Trans::kYes, Mg, K, P, 1.f, xg, col_data, 1.f, dw + gr * Mg * K);
        if (dx) {
          math::Gemm(Trans::kNo, Trans::kNo, Mg, P, K, 1.f, w + gr * Mg * K, col_data, 0.f,
                     dx + (n * M + gr * Mg) * P);
        }
      }
      if (db) {
        for (int64_t c = 0; c < C; ++c) {
          const float* row = dy + (n * C + c) * Q;
          double acc = 0;
          for (int64_t q = 0; q < Q; ++q) acc += row[q];
          db[c] += static_cast<float>(acc);
        }
      }
    }
  } else {
    const Im2ColShape s = MakeIm2ColShape(g);
    for (int64_t n = 0; n < g.N; ++n) {
      const float* ximg = x + n * P * M;
      const float* dyimg = dy + n * Q * C;
      for (int64_t gr = 0; gr < G; ++gr) {
        Im2ColNHWC(s, C, gr * Cg, Cg, dyimg, col_data);
        // dW_g (Mg x K) += X_g^T (Mg x P, X's leading dim M) * col (P x K)
        math::GemmEx(Trans::kYes, Trans::kNo, Mg, K, P, 1.f, ximg + gr * Mg, M, col_data, K, 1.f,
                     dw + gr * Mg * K, K);
        if (dx) {
          // dX_g (P x Mg, leading dim M) = col (P x K) * W_g^T (K x Mg)
          math::GemmEx(Trans::kNo, Trans::kYes, P, Mg, K, 1.f, col_data, K, w + gr * Mg * K, K,
                       0.f, dx + n * P * M + gr * Mg, M);
        }
      }
      if (db) {
        for (int64_t q = 0; q < Q; ++q) math::Axpy(C, 1.f, dyimg + q * C, db);
      }
    }
  }
  dww.Commit();
  if (dbw) dbw->Commit();
  if (dxw) dxw->Commit();
}

namespace {

// Caffe2's ConvTranspose and Conv gradient makers follow one rule (3 inputs -> (dfilter, dbias[,
// dX]), 2 -> (dfilter[, dX]) with no_bias=1, no dX with no_gradient_to_input=1), and Conv's emits
// "<type>Gradient": ConvTranspose uses Conv's maker, looked up when a gradient is asked for (so
// the order of static registration does not matter).
[[maybe_unused]] const bool g_conv_transpose_gradient = [] {
  GradientRegistry::Register(
      "ConvTranspose", [](const OperatorDef& def, const std::vector<GradientWrapper>& g_output) {
        const GradientMakerCreator* conv = GradientRegistry::Find("Conv");
        HALFCAF_ENFORCE(conv != nullptr,
                        "ConvTranspose's gradient uses Conv's gradient maker, which is missing");
        return (*conv)(def, g_output);
      });
  return true;
}();

std::vector<TensorShape> ConvTransposeShapeInference(const OperatorDef& def,
                                                     const std::vector<TensorShape>& in) {
  const ConvTransposeArgs a = ParseConvTransposeArgs(def);
  const ConvTransposeGeometry g =
      ComputeConvTransposeGeometry(a, InferenceNchwDims(def, in.at(0).dims), in.at(1).dims);
  const int64_t block = ChannelBlockOf(def, in[0].dims);
  return {TensorShape{block == 0 ? g.y_dims : BlockedDimsOf(g.y_dims, block, def.type(), "Y"),
                      in[0].dtype}};
}

// 2 * N * M * prod(X spatial) * (C / group) * prod(kernel): one multiply-add per tap, as the
// convolution it is the adjoint of.
OpCost ConvTransposeCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  const ConvTransposeArgs a = ParseConvTransposeArgs(def);
  const ConvTransposeGeometry g =
      ComputeConvTransposeGeometry(a, InferenceNchwDims(def, in.at(0).dims), in.at(1).dims);
  OpCost c;
  c.flops =
      2.0 * g.conv.N * g.M * g.conv.out_size() * (g.conv.C / a.cp.group) * g.conv.kernel_size();
  const double item = DataTypeSize(in[0].dtype);
  const double w_elems = static_cast<double>(in[1].numel());
  const double b_elems = in.size() > 2 ? static_cast<double>(in[2].numel()) : 0.0;
  c.bytes_read = (static_cast<double>(in[0].numel()) + w_elems + b_elems) * item;
  c.bytes_written = static_cast<double>(CheckedNumel(g.y_dims, "Y")) * item;
  c.params_bytes = (w_elems + b_elems) * item;
  return c;
}

std::vector<TensorShape> ConvTransposeGradientShapeInference(const OperatorDef& def,
                                                             const std::vector<TensorShape>& in) {
  const bool no_bias = ArgumentHelper(def).GetSingleArgument<int>("no_bias", 0) != 0;
  const ConvTransposeArgs a = ParseConvTransposeArgs(def);
  const ConvTransposeGeometry g =
      ComputeConvTransposeGeometry(a, InferenceNchwDims(def, in.at(0).dims), in.at(1).dims);
  std::vector<TensorShape> out{TensorShape{in[1].dims, in[1].dtype}};
  if (!no_bias) out.push_back(TensorShape{{g.conv.C}, in[1].dtype});
  if (def.output_size() > static_cast<int>(out.size())) {
    out.push_back(TensorShape{in[0].dims, in[0].dtype});
  }
  return out;
}

OpCost ConvTransposeGradientCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  OpCost c = ConvTransposeCost(def, {in.at(0), in.at(1)});
  const bool no_bias = ArgumentHelper(def).GetSingleArgument<int>("no_bias", 0) != 0;
  const bool dx = def.output_size() == (no_bias ? 2 : 3);
  c.flops *= dx ? 2 : 1;  // dfilter and dX each cost one forward
  const double item = DataTypeSize(in[0].dtype);
  c.bytes_read += static_cast<double>(in.at(2).numel()) * item;
  c.bytes_written = (static_cast<double>(in[1].numel()) + (dx ? in[0].numel() : 0)) * item;
  c.params_bytes = 0;
  return c;
}

}  // namespace

OPERATOR_SCHEMA(ConvTranspose)
    .NumInputs(2, 3)
    .NumOutputs(1)
    .TensorInferenceFunction(ConvTransposeShapeInference)
    .CostInferenceFunction(ConvTransposeCost)
    .SetDoc(
        "Transposed convolution (sometimes called deconvolution): the adjoint of Conv with the "
        "same filter, strides, pads and dilations, plus an optional bias. Each input pixel's "
        "channels, multiplied by the filter, are added into a kernel-sized window of the output, "
        "windows placed stride apart; the pads then crop the result: pad_head elements from the "
        "start and pad_tail from the end of each spatial dim, so asymmetric pads (pads = [all "
        "heads, all tails], or pad_t, pad_l, pad_b, pad_r) crop asymmetrically. adj adds that many "
        "elements at the end of each spatial dim (ONNX's output_padding). Output size per "
        "spatial dim: (in - 1) * stride + dilation * (kernel - 1) + 1 + adj - pad_head - pad_tail "
        "(must be >= 1). legacy_pad VALID and SAME both mean pads 0 (Caffe2's rule; SAME does "
        "not make the output in * stride); CAFFE_LEGACY_POOLING is rejected. NCHW: X (N, M, "
        "spatial...) with 1, 2, 3 or more spatial dims (the length of 'kernels'), filter (M, "
        "C/group, kernel...), Y (N, C, out...). NHWC (2-D only): X (N, H, W, M), filter (M, kH, "
        "kW, C/group), Y (N, outH, outW, C). Caffe2 takes 2-D only and no dilation; halfcaf adds "
        "1-D/3-D and dilation (default 1, must be 1 with group != 1). Float and float16 (float "
        "accumulation; output dtype of X). CPU: GEMM + col2im per image and group; CUDA: cuDNN's "
        "backward-data convolution, with Conv's cuDNN arguments exhaustive_search, deterministic, "
        "ws_nbytes_limit and enable_tensor_core (FP32 never uses tensor-op math).")
    .Arg("kernels / kernel / kernel_h, kernel_w",
         "ints, required: kernel size per spatial dim (kernels sets the number of dims)")
    .Arg("strides / stride / stride_h, stride_w", "ints, default 1")
    .Arg("pads / pad / pad_t, pad_l, pad_b, pad_r",
         "ints, default 0: how much of the full output to crop at the start (heads) and end "
         "(tails) of each spatial dim; pads lists all heads then all tails")
    .Arg("adjs / adj / adj_h, adj_w",
         "ints, default 0: extra output elements at the end of each spatial dim, each in "
         "[0, max(stride, dilation)]")
    .Arg("dilations / dilation / dilation_h, dilation_w", "ints, default 1 (halfcaf extension)")
    .Arg("legacy_pad", "int, default 0: 0 NOTSET (use pads), 1 VALID or 2 SAME (pads 0)")
    .Arg("group", "int, default 1: M and C are split into this many independent groups")
    .Arg("order", "string, default \"NCHW\": \"NCHW\" or \"NHWC\" (any case)")
    .Arg("no_gradient_to_input", "int, default 0: the gradient op does not compute dX")
    .Input(0, "X", "input, (N, M, spatial...) or NHWC (N, H, W, M)")
    .Input(1, "filter", "weights, (M, C/group, kernel...) or NHWC (M, kH, kW, C/group)")
    .Input(2, "bias", "optional, (C)")
    .Output(0, "Y", "output with C channels");

OPERATOR_SCHEMA(ConvTransposeGradient)
    .NumInputs(3)
    .NumOutputs(1, 3)
    .TensorInferenceFunction(ConvTransposeGradientShapeInference)
    .CostInferenceFunction(ConvTransposeGradientCost)
    .SetDoc(
        "Gradient of ConvTranspose. Inputs (X, filter, dY). Outputs (dfilter, dbias[, dX]), or "
        "with no_bias=1 (dfilter[, dX]); dX is computed only when its slot is present. dX is the "
        "convolution of dY with the filter; dfilter correlates X with dY's windows; dbias sums dY "
        "per channel. Takes the forward op's arguments.")
    .Arg("no_bias", "int, default 0: the forward op had no bias (no dbias output)")
    .Input(0, "X", "forward input")
    .Input(1, "filter", "forward filter")
    .Input(2, "dY", "gradient of Y")
    .Output(0, "dfilter", "gradient of the filter")
    .Output(1, "dbias", "gradient of the bias (or dX with no_bias=1)")
    .Output(2, "dX", "gradient of X (optional)");

REGISTER_CPU_OPERATOR(ConvTranspose, ConvTransposeOp);
REGISTER_CPU_OPERATOR(ConvTransposeGradient, ConvTransposeGradientOp);

}  // namespace halfcaf
