#include "operators/math/minmax_op.h"

#include <algorithm>
#include <string>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/nan_math.h"
#include "operators/cpu_parallel.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

void EnforceSameShapeAndType(const OperatorBase& op, const std::vector<const Tensor*>& xs,
                             int first) {
  const Tensor& X0 = *xs.at(0);
  EnforceFloatType(X0, ("input " + std::to_string(first)).c_str());
  for (size_t k = 1; k < xs.size(); ++k) {
    const Tensor& Xk = *xs[k];
    const int i = first + static_cast<int>(k);
    HALFCAF_ENFORCE(Xk.dims() == X0.dims() && Xk.dtype() == X0.dtype(), op.type(), ": input ", i,
                    " '", op.input_name(i), "' is ", Xk.DebugString(), " but input ", first, " '",
                    op.input_name(first), "' is ", X0.DebugString(),
                    ": all inputs must have one shape and type");
  }
}

void EnforceSelectGradientInputs(const OperatorBase& op, const Tensor& Y, const Tensor& dY,
                                 const std::vector<const Tensor*>& xs) {
  EnforceFloatType(Y, "Y");
  EnforceFloatType(dY, "dY");
  HALFCAF_ENFORCE(dY.dims() == Y.dims(), op.type(), ": Y and dY must have the same shape, got ",
                  DimsString(Y.dims()), " and ", DimsString(dY.dims()));
  for (size_t k = 0; k < xs.size(); ++k) {
    const Tensor& Xk = *xs[k];
    const int i = 2 + static_cast<int>(k);
    HALFCAF_ENFORCE(Xk.dims() == Y.dims() && Xk.dtype() == Y.dtype(), op.type(), ": input ", i,
                    " '", op.input_name(i), "' (forward input X", k + 1, ") is ", Xk.DebugString(),
                    " but Y is ", Y.DebugString(), ": they must have one shape and type");
  }
}

namespace {

// NaN wins, as in nan_math.h; min(a, b) = -max(-a, -b) exactly.
template <bool kMax>
float Select(float a, float b) {
  return kMax ? MaxNaN(a, b) : -MaxNaN(-a, -b);
}

}  // namespace

template <bool kMax>
void MaxMinOp<kMax>::RunOnDevice() {
  std::vector<const Tensor*> xs;
  for (int i = 0; i < InputSize(); ++i) xs.push_back(&Input(i));
  EnforceSameShapeAndType(*this, xs, 0);
  const Tensor& X0 = Input(0);
  const DataType dtype = X0.dtype();
  const int64_t n = X0.numel();
  // Input 0 may be the output: the writer's buffer starts as a copy of it (float: the same
  // storage), and the other inputs are folded in one at a time.
  const float* x0 = ReadAsFloat(X0, &x_);
  FloatWriter y(Output(0, X0.dims()), dtype, &y_);
  float* yd = y.data();
  if (yd != x0) std::copy(x0, x0 + n, yd);
  for (int i = 1; i < InputSize(); ++i) {
    const float* xi = ReadAsFloat(Input(i), &x_);
    ParallelFor(n, 1.0, [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) yd[j] = Select<kMax>(yd[j], xi[j]);
    });
  }
  y.Commit();
}

template <bool kMax>
void MaxMinGradientOp<kMax>::RunOnDevice() {
  const int n_in = InputSize() - 2;  // = OutputSize(), by the schema
  const Tensor& Y = Input(0);
  const Tensor& dY = Input(1);
  std::vector<const Tensor*> xs;
  for (int i = 2; i < InputSize(); ++i) xs.push_back(&Input(i));
  EnforceSelectGradientInputs(*this, Y, dY, xs);
  const std::vector<int64_t> dims = Y.dims();
  const int64_t n = Y.numel();
  const float* y = ReadAsFloat(Y, &y_);
  const float* dy = ReadAsFloat(dY, &dy_);
  for (int k = 0; k < n_in; ++k) {
    const float* x = ReadAsFloat(*xs[k], &x_);
    FloatWriter dx(Output(k, dims), dY.dtype(), &dx_);
    float* dxd = dx.data();
    ParallelFor(n, 1.0, [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) dxd[j] = GatedGradient(x[j] == y[j], y[j], dy[j]);
    });
    dx.Commit();
  }
}

namespace {

// <Type>Gradient(Y, dY, X1, ..., Xn) -> (dX1, ..., dXn).
class GetMaxMinGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<std::string> inputs{O(0), GO(0)}, outputs;
    for (int i = 0; i < NumInputs(); ++i) {
      EnforceInputKeptForGradient(def_, i);
      inputs.push_back(I(i));
      outputs.push_back(GI(i));
    }
    return SingleGradientDef(def_.type() + "Gradient", inputs, outputs);
  }
};

OpCost NaryPointwiseCost(const OperatorDef&, const std::vector<TensorShape>& in) {
  OpCost c;
  const double n = static_cast<double>(in.at(0).numel());
  c.flops = n * static_cast<double>(in.size() - 1);
  c.bytes_read = n * static_cast<double>(in.size()) * DataTypeSize(in[0].dtype);
  c.bytes_written = n * DataTypeSize(in[0].dtype);
  return c;
}

// Output k: input k + 2's dims (= Y's) with dY's type.
std::vector<TensorShape> SelectGradientShapes(const OperatorDef&,
                                              const std::vector<TensorShape>& in) {
  std::vector<TensorShape> out;
  for (size_t i = 2; i < in.size(); ++i) out.push_back(TensorShape{in[i].dims, in.at(1).dtype});
  return out;
}

// Registers the schemas of `type` (Max or Min, computing the element-wise `what`) and of its
// gradient operator.
void DescribeMaxMin(const std::string& type, const std::string& what) {
  OpSchemaRegistry::NewSchema(type, __FILE__, __LINE__)
      .NumInputs(1, 1 << 30)
      .NumOutputs(1)
      .AllowInplace({{0, 0}})
      .IdenticalTypeAndShapeOfInput(0)
      .CostInferenceFunction(NaryPointwiseCost)
      .SetDoc("Element-wise " + what + " of all inputs, which must share one shape and type "
              "(float or float16); NaN in any input gives NaN. May run in place on input 0, "
              "though then it cannot be differentiated (the gradient compares every input with "
              "Y). Gradient " + type + "Gradient(Y, dY, X1..Xn) -> dX1..dXn: dY goes to every "
              "input equal to Y.")
      .Input(0, "data_0", "first input; further inputs data_1, data_2, ... of the same shape")
      .Output(0, what.substr(0, 3),  // Caffe2's names: "max", "min"
              "element-wise " + what + ", same shape and type as the inputs");
  OpSchemaRegistry::NewSchema(type + "Gradient", __FILE__, __LINE__)
      .NumInputs(3, 1 << 30)
      .NumOutputs(1, 1 << 30)
      .NumInputsOutputs([](int in, int out) { return out == in - 2; })
      .TensorInferenceFunction(SelectGradientShapes)
      .CostInferenceFunction(NaryPointwiseCost)
      .SetDoc("Gradient of " + type + ": dXi = dY where Xi == Y, else 0 (NaN where Y or dY is "
              "NaN). Every input tied for the " + what + " gets the whole dY, as in Caffe2. One "
              "output per forward input, with dY's type.")
      .Input(0, "Y", type + "'s output")
      .Input(1, "dY", "gradient of Y")
      .Input(2, "X1", type + "'s first input; then X2, ..., Xn")
      .Output(0, "dX1", "gradient of X1; then dX2, ..., dXn");
}

[[maybe_unused]] const bool g_max_min_schemas = [] {
  DescribeMaxMin("Max", "maximum");
  DescribeMaxMin("Min", "minimum");
  return true;
}();

}  // namespace

REGISTER_CPU_OPERATOR(Max, MaxMinOp<true>);
REGISTER_CPU_OPERATOR(Min, MaxMinOp<false>);
REGISTER_CPU_OPERATOR(MaxGradient, MaxMinGradientOp<true>);
REGISTER_CPU_OPERATOR(MinGradient, MaxMinGradientOp<false>);
REGISTER_GRADIENT(Max, GetMaxMinGradient);
REGISTER_GRADIENT(Min, GetMaxMinGradient);

}  // namespace halfcaf
