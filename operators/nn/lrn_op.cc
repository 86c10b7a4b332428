#include "operators/nn/lrn_op.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/checked_math.h"
#include "core/float_io.h"
#include "core/gradient.h"
#include "operators/cpu_parallel.h"

namespace halfcaf {

LrnArgs ParseLrnArgs(const ArgumentHelper& args, const std::string& op_label) {
  LrnArgs a;
  a.op_label = op_label;
  HALFCAF_ENFORCE(args.HasArgument("size"), op_label,
                  ": the argument 'size' (channels per normalization window) is required");
  a.size = args.GetSingleArgument<int>("size", 0);
  HALFCAF_ENFORCE(a.size >= 1, op_label, ": size must be >= 1, got ", a.size);
  a.alpha = args.GetSingleArgument<float>("alpha", 0.f);
  a.beta = args.GetSingleArgument<float>("beta", 0.f);
  a.bias = args.GetSingleArgument<float>("bias", 1.f);
  a.order = StringToStorageOrder(args.GetSingleArgument<std::string>("order", "NCHW"), op_label);
  return a;
}

LrnView LrnViewOf(const LrnArgs& a, const std::vector<int64_t>& dims, const char* what) {
  const bool nchw = a.order == StorageOrder::NCHW;
  HALFCAF_ENFORCE(dims.size() >= 2, a.op_label, ": ", what, " must have at least 2 dims ",
                  nchw ? "(N, C, spatial...)" : "(N, spatial..., C)", ", got ", DimsString(dims));
  LrnView v;
  if (nchw) {
    v.outer = dims[0];
    v.C = dims[1];
    v.inner = CheckedNumel(std::vector<int64_t>(dims.begin() + 2, dims.end()), what);
  } else {
    v.outer = CheckedNumel(std::vector<int64_t>(dims.begin(), dims.end() - 1), what);
    v.C = dims.back();
    v.inner = 1;
  }
  return v;
}

void CheckLrnGradientInputs(const LrnArgs& a, const Tensor& X,
                            const std::vector<const Tensor*>& others,
                            const std::vector<const char*>& names) {
  EnforceFloatType(X, "LRNGradient input X");
  for (size_t i = 0; i < others.size(); ++i) {
    EnforceFloatType(*others[i], names[i]);
    HALFCAF_ENFORCE(others[i]->dims() == X.dims(), a.op_label, ": ", names[i], " has dims ",
                    DimsString(others[i]->dims()), " but X has ", DimsString(X.dims()),
                    " (they must match)");
  }
}

namespace {

// scale = bias + alpha / size * (window sums of x^2), each channel's window summed in channel
// order (the CUDA kernels sum in the same order).
void LrnScale(const LrnArgs& a, const LrnView& v, const float* x, float* scale) {
  const float k = a.alpha / static_cast<float>(a.size);
  const int64_t C = v.C, inner = v.inner, pre = a.pre_pad(), size = a.size;
  ParallelFor(v.outer, static_cast<double>(C * inner * size), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      for (int64_t c = 0; c < C; ++c) {
        float* s = scale + (o * C + c) * inner;
        std::fill_n(s, inner, 0.f);
        const int64_t lo = std::max<int64_t>(0, c - pre), hi = std::min(C, c - pre + size);
        for (int64_t c2 = lo; c2 < hi; ++c2) {
          const float* xr = x + (o * C + c2) * inner;
          for (int64_t i = 0; i < inner; ++i) s[i] += xr[i] * xr[i];
        }
        for (int64_t i = 0; i < inner; ++i) s[i] = a.bias + k * s[i];
      }
    }
  });
}

}  // namespace

LRNOp::LRNOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), a_(ParseLrnArgs(args_, DebugName())) {}

void LRNOp::RunOnDevice() {
  const Tensor& X = Input(0);
  EnforceFloatType(X, "LRN input X");
  const LrnView v = LrnViewOf(a_, X.dims(), "X");
  const float* x = ReadAsFloat(X, &x_);
  // The scale goes straight into the optional output when it is float, else through scratch.
  std::optional<FloatWriter> sw;
  float* scale = nullptr;
  if (OutputSize() > 1) {
    sw.emplace(Output(1, X.dims()), X.dtype(), &scale_);
    scale = sw->data();
  } else {
    scale_.resize(static_cast<size_t>(X.numel()));
    scale = scale_.data();
  }
  LrnScale(a_, v, x, scale);
  FloatWriter yw(Output(0, X.dims()), X.dtype(), &y_);
  float* y = yw.data();
  for (int64_t i = 0; i < X.numel(); ++i) y[i] = x[i] * std::pow(scale[i], -a_.beta);
  yw.Commit();
  if (sw) sw->Commit();
}

LRNGradientOp::LRNGradientOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), a_(ParseLrnArgs(args_, DebugName())) {}

void LRNGradientOp::RunOnDevice() {
  const bool given_scale = InputSize() == 4;
  const Tensor& X = Input(0);
  const Tensor& Y = Input(1);
  const Tensor& dY = Input(given_scale ? 3 : 2);
  if (given_scale) {
    CheckLrnGradientInputs(a_, X, {&Y, &Input(2), &dY}, {"Y", "scale", "dY"});
  } else {
    CheckLrnGradientInputs(a_, X, {&Y, &dY}, {"Y", "dY"});
  }
  const LrnView v = LrnViewOf(a_, X.dims(), "X");
  const int64_t n = X.numel();
  const float* x = ReadAsFloat(X, &x_);
  const float* y = ReadAsFloat(Y, &y_);
  const float* dy = ReadAsFloat(dY, &dy_);
  const float* scale = nullptr;
  if (given_scale) {
    scale = ReadAsFloat(Input(2), &scale_in_);
  } else {
    scale_.resize(static_cast<size_t>(n));
    LrnScale(a_, v, x, scale_.data());
    scale = scale_.data();
  }
  ratio_.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ratio_[i] = dy[i] * y[i] / scale[i];

  FloatWriter dxw(Output(0, X.dims()), X.dtype(), &dx_);
  float* dx = dxw.data();
  const float k = 2.f * a_.alpha * a_.beta / static_cast<float>(a_.size);
  // Channel c is in the windows of c' in [c - (size - 1 - pre), c + pre].
  const int64_t C = v.C, inner = v.inner, pre = a_.pre_pad(), post = a_.size - 1 - pre;
  const float* ratio = ratio_.data();
  ParallelFor(v.outer, static_cast<double>(C * inner * a_.size), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      for (int64_t c = 0; c < C; ++c) {
        const int64_t base = (o * C + c) * inner;
        const int64_t lo = std::max<int64_t>(0, c - post), hi = std::min(C, c + pre + 1);
        for (int64_t i = 0; i < inner; ++i) {
          float acc = 0.f;
          for (int64_t c2 = lo; c2 < hi; ++c2) acc += ratio[(o * C + c2) * inner + i];
          dx[base + i] = dy[base + i] * std::pow(scale[base + i], -a_.beta) - k * x[base + i] * acc;
        }
      }
    }
  });
  dxw.Commit();
}

namespace {

// Caffe2's gradient: LRNGradient(X, Y, dY) -> dX (the scale is recomputed).
class GetLRNGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("LRNGradient", {I(0), O(0), GO(0)}, {GI(0)});
  }
};

OpCost LrnCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  const LrnArgs a = ParseLrnArgs(ArgumentHelper(def), def.type());
  const double n = static_cast<double>(in.at(0).numel());
  const double item = DataTypeSize(in[0].dtype);
  OpCost c;
  // A multiply-add per window element, then the scale, the power and the product.
  c.flops = n * (2.0 * a.size + 4.0);
  c.bytes_read = n * item;
  c.bytes_written = n * item * def.output_size();
  return c;
}

const char* kLrnArgSize = "int, required (>= 1): channels per normalization window";

}  // namespace

OPERATOR_SCHEMA(LRN)
    .NumInputs(1)
    .NumOutputs(1, 2)
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      return std::vector<TensorShape>(def.output_size(), in.at(0));
    })
    .CostInferenceFunction(LrnCost)
    .SetDoc(
        "Local response normalization across channels: Y = X * scale^-beta with "
        "scale[c] = bias + alpha / size * sum of X[c']^2 over the window of channels "
        "c' = c - pre ... c - pre + size - 1, pre = floor((size - 1) / 2), channels outside the "
        "tensor counting as 0 (for odd size the window is centred on c; for even size it reaches "
        "one channel further after c than before, as ONNX's LRN). X is (N, C, spatial...) in "
        "NCHW or (N, spatial..., C) in NHWC, any rank >= 2 (Caffe2 takes 4-D). The optional "
        "second output is the scale. Float and float16 (computed in float; outputs in X's dtype). "
        "scale must stay positive (bias > 0 and alpha >= 0 guarantee it).")
    .Arg("size", kLrnArgSize)
    .Arg("alpha", "float, default 0: multiplies the window's sum of squares (divided by size)")
    .Arg("beta", "float, default 0: the exponent")
    .Arg("bias", "float, default 1: added to the scaled sum of squares")
    .Arg("order", "string, default \"NCHW\": \"NCHW\" or \"NHWC\" (any case)")
    .Input(0, "X", "input, (N, C, spatial...) or NHWC (N, spatial..., C)")
    .Output(0, "Y", "normalized X, X's shape")
    .Output(1, "scale", "optional: the scale, X's shape");

OPERATOR_SCHEMA(LRNGradient)
    .NumInputs(3, 4)
    .NumOutputs(1)
    .IdenticalTypeAndShapeOfInput(0)
    .CostInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      OpCost c = LrnCost(def, {in.at(0)});
      c.flops *= 2;
      c.bytes_read = static_cast<double>(in[0].numel()) * DataTypeSize(in[0].dtype) * in.size();
      c.bytes_written = static_cast<double>(in[0].numel()) * DataTypeSize(in[0].dtype);
      return c;
    })
    .SetDoc(
        "Gradient of LRN. Caffe2's form (X, Y, dY) -> dX recomputes the scale from X; the form "
        "(X, Y, scale, dY) -> dX uses the forward's scale output. dX[c] = dY[c] * scale[c]^-beta "
        "- 2 * alpha * beta / size * X[c] * sum of dY[c'] * Y[c'] / scale[c'] over the channels "
        "c' whose window holds c. Takes the forward op's arguments; dX has X's dtype.")
    .Arg("size", kLrnArgSize)
    .Arg("alpha", "float, default 0")
    .Arg("beta", "float, default 0")
    .Arg("bias", "float, default 1")
    .Arg("order", "string, default \"NCHW\"")
    .Input(0, "X", "forward input")
    .Input(1, "Y", "forward output")
    .Input(2, "dY | scale", "gradient of Y; with 4 inputs the forward's scale output")
    .Input(3, "dY", "with 4 inputs: gradient of Y")
    .Output(0, "dX", "gradient of X");

REGISTER_CPU_OPERATOR(LRN, LRNOp);
REGISTER_CPU_OPERATOR(LRNGradient, LRNGradientOp);
REGISTER_GRADIENT(LRN, GetLRNGradient);

}  // namespace halfcaf
