#include "operators/nn/prelu_op.h"

#include <string>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/nan_math.h"
#include "operators/cpu_parallel.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

StorageOrder ParsePReluOrder(const OperatorBase& op) {
  return StringToStorageOrder(op.GetSingleArgument<std::string>("order", "NCHW"), op.type());
}

PReluView PReluViewOf(StorageOrder order, const std::vector<int64_t>& x_dims, int64_t slope_numel,
                      const char* what) {
  PReluView v;
  int64_t numel = 1;
  for (int64_t d : x_dims) numel *= d;
  v.outer = numel;
  if (slope_numel == 1) return v;  // shared: C = inner = 1
  const int ndim = static_cast<int>(x_dims.size());
  const int channel_dim = order == StorageOrder::NCHW ? 1 : ndim - 1;
  HALFCAF_ENFORCE(channel_dim >= 0 && channel_dim < ndim, what, ": a Slope of ", slope_numel,
                  " values needs X with a channel dimension (", StorageOrderName(order),
                  " order: dim ", order == StorageOrder::NCHW ? "1" : "-1", "), got X ",
                  DimsString(x_dims));
  v.C = x_dims[channel_dim];
  HALFCAF_ENFORCE(slope_numel == v.C, what, ": Slope must have 1 value or one per channel (",
                  v.C, " channels in X ", DimsString(x_dims), ", ", StorageOrderName(order),
                  "), got ", slope_numel, " values");
  v.inner = 1;
  for (int d = channel_dim + 1; d < ndim; ++d) v.inner *= x_dims[d];
  v.outer = v.C == 0 || v.inner == 0 ? 0 : numel / (v.C * v.inner);
  return v;
}

namespace {

class PReluOp final : public Operator<CPUContext> {
 public:
  PReluOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), order_(ParsePReluOrder(*this)) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& S = Input(1);
    EnforceFloatType(X, "X");
    EnforceFloatType(S, "Slope");
    const PReluView v = PReluViewOf(order_, X.dims(), S.numel(), "PRelu");
    const DataType dtype = X.dtype();
    const float* x = ReadAsFloat(X, &x_);
    const float* s = ReadAsFloat(S, &s_);
    Tensor* Y = Output(0, X.dims());
    FloatWriter y(Y, dtype, &y_);
    float* yd = y.data();
    ParallelFor(X.numel(), 1.0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        // NaN fails x > 0 and stays NaN through the product.
        yd[i] = x[i] > 0.f ? x[i] : s[(i / v.inner) % v.C] * x[i];
      }
    });
    y.Commit();
  }

 private:
  const StorageOrder order_;
  std::vector<float> x_, s_, y_;
};

class PReluGradientOp final : public Operator<CPUContext> {
 public:
  PReluGradientOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), order_(ParsePReluOrder(*this)) {}

  void RunOnDevice() override {
    const Tensor& Y = Input(0);
    const Tensor& dY = Input(1);
    const Tensor& X = Input(2);
    const Tensor& S = Input(3);
    EnforceFloatType(Y, "Y");
    EnforceFloatType(dY, "dY");
    EnforceFloatType(X, "X");
    EnforceFloatType(S, "Slope");
    HALFCAF_ENFORCE(Y.dims() == X.dims() && dY.dims() == X.dims(),
                    "PReluGradient: Y, dY and X must have the same shape, got ",
                    DimsString(Y.dims()), ", ", DimsString(dY.dims()), " and ",
                    DimsString(X.dims()));
    const PReluView v = PReluViewOf(order_, X.dims(), S.numel(), "PReluGradient");
    const float* x = ReadAsFloat(X, &x_);
    const float* dy = ReadAsFloat(dY, &dy_);
    const float* s = ReadAsFloat(S, &s_);
    const DataType s_type = S.dtype();
    const std::vector<int64_t> s_dims = S.dims();
    Tensor* dX = Output(0, X.dims());
    FloatWriter dx(dX, dY.dtype(), &dx_);
    float* dxd = dx.data();
    ParallelFor(X.numel(), 1.0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const float xv = x[i];
        dxd[i] = xv > 0.f ? dy[i] : IsNaN(xv) ? xv : s[(i / v.inner) % v.C] * dy[i];
      }
    });
    // dSlope[c] = sum of dY * X over the channel's elements with X <= 0 (NaN X included, so
    // that it shows), accumulated in double.
    std::vector<double> acc(static_cast<size_t>(v.C), 0.0);
    ParallelFor(v.C, static_cast<double>(v.outer * v.inner), [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        double sum = 0.0;
        for (int64_t o = 0; o < v.outer; ++o) {
          const int64_t base = (o * v.C + c) * v.inner;
          for (int64_t k = 0; k < v.inner; ++k) {
            const float xv = x[base + k];
            if (!(xv > 0.f)) sum += static_cast<double>(dy[base + k]) * xv;
          }
        }
        acc[c] = sum;
      }
    });
    dx.Commit();
    Tensor* dS = Output(1, s_dims);
    FloatWriter ds(dS, s_type, &ds_);
    float* dsd = ds.data();
    for (int64_t c = 0; c < v.C; ++c) dsd[c] = static_cast<float>(acc[c]);
    ds.Commit();
  }

 private:
  const StorageOrder order_;
  std::vector<float> x_, dy_, s_, dx_, ds_;
};

class GetPReluGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    EnforceInputKeptForGradient(def_, 0);
    return SingleGradientDef("PReluGradient", {O(0), GO(0), I(0), I(1)}, {GI(0), GI(1)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(PRelu, PReluOp);
REGISTER_CPU_OPERATOR(PReluGradient, PReluGradientOp);
REGISTER_GRADIENT(PRelu, GetPReluGradient);

OPERATOR_SCHEMA(PRelu)
    .NumInputs(2)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShapeOfInput(0)
    .PointwiseCost(2)
    .SetDoc("Parametric rectified linear unit, element-wise: Y = X where X > 0, Slope * X "
            "elsewhere (NaN stays NaN). Slope holds either a single value used for every "
            "element, or one value per channel, the channel being dimension 1 (order NCHW) or "
            "the last dimension (order NHWC). X and Slope are float or float16 (computed in "
            "float); Y has X's type. May run in place for inference, but its gradient reads X, "
            "so asking for the gradient of an in-place PRelu is an error.")
    .Arg("order", "string, default \"NCHW\": where the channel dimension is (\"NCHW\": dim 1, "
                  "\"NHWC\": last dim)")
    .Input(0, "X", "input tensor; with a per-channel Slope it needs a channel dimension")
    .Input(1, "Slope", "1 value, or C values (C = X's channel count), any shape")
    .Output(0, "Y", "output, same shape and type as X");

OPERATOR_SCHEMA(PReluGradient)
    .NumInputs(4)
    .NumOutputs(2)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      TensorShape dx = in.at(2);
      dx.dtype = in.at(1).dtype;
      return std::vector<TensorShape>{dx, in.at(3)};
    })
    .PointwiseCost(4)
    .SetDoc("Gradient of PRelu: dX = dY where X > 0, Slope * dY elsewhere (NaN where X is "
            "NaN); dSlope[c] = sum of dY * X over the elements of channel c (all elements for a "
            "shared slope) where X <= 0, accumulated in double. Y is accepted for Caffe2 "
            "compatibility and only its shape is checked. dX has dY's type, dSlope has "
            "Slope's type and shape.")
    .Arg("order", "string, default \"NCHW\": PRelu's order")
    .Input(0, "Y", "forward output")
    .Input(1, "dY", "gradient of Y")
    .Input(2, "X", "forward input")
    .Input(3, "Slope", "forward slope")
    .Output(0, "dX", "gradient of X")
    .Output(1, "dSlope", "gradient of Slope");

}  // namespace halfcaf
