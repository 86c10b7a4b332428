#include "operators/math/weighted_sum_op.h"

#include <climits>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/math.h"

namespace halfcaf {

namespace {

// The value of a one-element weight tensor.
float ReadWeight(const Tensor& w, int index, std::vector<float>* scratch) {
  HALFCAF_ENFORCE(w.numel() == 1, "weight w", index, " must have exactly one element, got dims ",
                  DimsString(w.dims()));
  HALFCAF_ENFORCE(IsFloatType(w.dtype()), "weight w", index, " must be float, got ",
                  w.DebugString());
  return ReadAsFloat(w, scratch)[0];
}

}  // namespace

void WeightedSumOp::RunOnDevice() {
  const int n = InputSize() / 2;
  const Tensor& X0 = Input(0);
  const DataType dtype = X0.dtype();
  const int64_t size = X0.numel();
  x_.resize(n);
  std::vector<const float*> xs(n);
  std::vector<float> ws(n);
  for (int i = 0; i < n; ++i) {
    const Tensor& X = Input(2 * i);
    EnforceFloatType(X, ("X" + std::to_string(i)).c_str());
    HALFCAF_ENFORCE(X.dims() == X0.dims(), "X", i, " has dims ", DimsString(X.dims()),
                    " but X0 has dims ", DimsString(X0.dims()), ": all X_i must have one shape");
    xs[i] = ReadAsFloat(X, &x_[i]);
    ws[i] = ReadWeight(Input(2 * i + 1), i, &w_);
  }
  FloatWriter y(Output(0, X0.dims()), dtype, &y_);
  // In place (Y is X0, as the optimizers use it): sum into a separate buffer first.
  bool overlaps = false;
  for (const float* x : xs) overlaps |= (x == y.data());
  float* out = y.data();
  if (overlaps) {
    acc_.resize(static_cast<size_t>(size));
    out = acc_.data();
  }
  for (int64_t j = 0; j < size; ++j) out[j] = ws[0] * xs[0][j];
  for (int i = 1; i < n; ++i) math::Axpy(size, ws[i], xs[i], out);
  if (overlaps) std::copy(acc_.begin(), acc_.end(), y.data());
  y.Commit();
}

void WeightedSumGradientOp::RunOnDevice() {
  const int n = (InputSize() - 1) / 2;
  HALFCAF_ENFORCE(OutputSize() == n || OutputSize() == 2 * n, "WeightedSumGradient with ", n,
                  " (X, w) pairs has ", n, " outputs (dX_i) or ", 2 * n,
                  " (dX_i then dw_i), got ", OutputSize());
  const bool grad_on_w = OutputSize() == 2 * n;
  const Tensor& dY = Input(0);
  EnforceFloatType(dY, "dY");
  const float* dy = ReadAsFloat(dY, &dy_);
  const int64_t size = dY.numel();
  for (int i = 0; i < n; ++i) {
    const Tensor& X = Input(1 + 2 * i);
    const Tensor& W = Input(2 + 2 * i);
    EnforceFloatType(X, ("X" + std::to_string(i)).c_str());
    HALFCAF_ENFORCE(X.dims() == dY.dims(), "X", i, " has dims ", DimsString(X.dims()),
                    " but dY has dims ", DimsString(dY.dims()));
    const float w = ReadWeight(W, i, &w_);
    if (grad_on_w) {
      const float* x = ReadAsFloat(X, &x_);
      double dot = 0;
      for (int64_t j = 0; j < size; ++j) dot += static_cast<double>(dy[j]) * x[j];
      FloatWriter dw(Output(n + i, W.dims()), W.dtype(), &dw_);
      dw.data()[0] = static_cast<float>(dot);
      dw.Commit();
    }
    FloatWriter dx(Output(i, X.dims()), X.dtype(), &dx_);
    float* dxd = dx.data();
    for (int64_t j = 0; j < size; ++j) dxd[j] = w * dy[j];
    dx.Commit();
  }
}

namespace {

class GetWeightedSumGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    const bool grad_on_w = args().GetSingleArgument<bool>("grad_on_w", false);
    std::vector<std::string> inputs{GO(0)};
    for (int i = 0; i < NumInputs(); ++i) inputs.push_back(I(i));
    std::vector<std::string> outputs;
    for (int i = 0; i < NumInputs(); i += 2) outputs.push_back(GI(i));
    if (grad_on_w) {
      for (int i = 1; i < NumInputs(); i += 2) outputs.push_back(GI(i));
    }
    return SingleGradientDef("WeightedSumGradient", inputs, outputs);
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(WeightedSum, WeightedSumOp);
REGISTER_CPU_OPERATOR(WeightedSumGradient, WeightedSumGradientOp);
REGISTER_GRADIENT(WeightedSum, GetWeightedSumGradient);

OPERATOR_SCHEMA(WeightedSum)
    .NumInputs(2, INT_MAX)
    .NumOutputs(1)
    .NumInputsOutputs([](int in, int) { return in % 2 == 0; })
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShapeOfInput(0)
    .CostInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      OpCost c;
      const double n = static_cast<double>(in[0].numel());
      const double item = static_cast<double>(DataTypeSize(in[0].dtype));
      c.flops = 2.0 * n * (in.size() / 2);
      c.bytes_read = n * item * (in.size() / 2);
      c.bytes_written = n * item;
      return c;
    })
    .SetDoc("Weighted sum Y = w0 * X0 + w1 * X1 + ... of same-shape tensors with one-element "
            "float weights. X may be float or float16 (summed in float, rounded once); Y has "
            "X0's type. Y may be X0 (in place), as in optimizer updates.")
    .Arg("grad_on_w", "bool, default 0: the gradient also produces dw_i = sum(dY * X_i)")
    .Input(0, "X0", "first tensor")
    .Input(1, "w0", "weight of X0, one element")
    .Output(0, "Y", "weighted sum, X0's shape and type");

OPERATOR_SCHEMA(WeightedSumGradient)
    .NumInputs(3, INT_MAX)
    .NumOutputs(1, INT_MAX)
    .NumInputsOutputs([](int in, int out) {
      return in % 2 == 1 && (out == (in - 1) / 2 || out == in - 1);
    })
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      const int n = (static_cast<int>(in.size()) - 1) / 2;
      std::vector<TensorShape> out;
      for (int i = 0; i < n; ++i) out.push_back(in[1 + 2 * i]);
      if (def.output_size() == 2 * n) {
        for (int i = 0; i < n; ++i) out.push_back(in[2 + 2 * i]);
      }
      return out;
    })
    .CostInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      OpCost c;
      const double n = static_cast<double>(in[0].numel());
      const double item = static_cast<double>(DataTypeSize(in[0].dtype));
      const double pairs = (in.size() - 1) / 2;
      const bool dw = def.output_size() == static_cast<int>(in.size()) - 1;
      c.flops = n * pairs * (dw ? 3.0 : 1.0);
      c.bytes_read = n * item * (1 + (dw ? pairs : 0));
      c.bytes_written = n * item * pairs;
      return c;
    })
    .SetDoc("Gradient of WeightedSum: dX_i = w_i * dY, and when there are twice as many outputs "
            "as (X, w) pairs (grad_on_w), dw_i = sum(dY * X_i). dX_i has X_i's type, dw_i w_i's "
            "shape and type.")
    .Input(0, "dY", "gradient of Y")
    .Input(1, "X0", "forward input X0 (then w0, X1, w1, ...)")
    .Output(0, "dX0", "gradient of X0 (then dX1, ..., then dw0, dw1, ... with grad_on_w)");

}  // namespace halfcaf
