#include "operators/nn/dropout_op.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include "core/float_io.h"
#include "core/gradient.h"

namespace halfcaf {

float ReadDropoutRatio(const OperatorBase& op) {
  const float ratio = op.GetSingleArgument<float>("ratio", 0.5f);
  HALFCAF_ENFORCE(ratio >= 0.f && ratio < 1.f, op.type(),
                  ": argument 'ratio' must be in [0, 1), got ", ratio);
  return ratio;
}

DropoutOp::DropoutOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      ratio_(ReadDropoutRatio(*this)),
      is_test_(GetSingleArgument<int>("is_test", 0) != 0) {
  HALFCAF_ENFORCE(is_test_ || OutputSize() == 2,
                  "Dropout in training mode (is_test=0) needs 2 outputs (Y, mask), got ",
                  OutputSize());
}

void DropoutOp::RunOnDevice() {
  const Tensor& X = Input(0);
  EnforceFloatType(X, "X");
  const std::vector<int64_t> dims = X.dims();
  const DataType dtype = X.dtype();
  const int64_t n = X.numel();
  if (is_test_) {
    if (OutputSize() == 2) {
      bool* mask = Output(1, dims)->mutable_data<bool>();
      std::fill_n(mask, n, true);
    }
    if (!IsInputOutputAlias(0, 0)) Output(0)->CopyFrom(X);
    return;
  }
  const float* x = ReadAsFloat(X, &x_);
  bool* mask = Output(1, dims)->mutable_data<bool>();
  FloatWriter y(Output(0, dims), dtype, &y_);
  float* yd = y.data();
  const float scale = 1.f / (1.f - ratio_);
  // One 32-bit draw per element, kept when below (1 - ratio) * 2^32: the keep probability is exact
  // to 2^-32, and it costs a tenth of std::bernoulli_distribution (two draws and a double each).
  const uint64_t threshold = static_cast<uint64_t>(
      std::llround((1.0 - static_cast<double>(ratio_)) * 4294967296.0));
  auto& rng = context_.RandGenerator();
  for (int64_t i = 0; i < n; ++i) mask[i] = static_cast<uint64_t>(rng()) < threshold;
  for (int64_t i = 0; i < n; ++i) {
    yd[i] = x[i] * (mask[i] ? scale : 0.f);  // NaN * 0 stays NaN, as in PyTorch
  }
  y.Commit();
}

DropoutGradOp::DropoutGradOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      ratio_(ReadDropoutRatio(*this)),
      is_test_(GetSingleArgument<int>("is_test", 0) != 0) {
  HALFCAF_ENFORCE(is_test_ || InputSize() == 2,
                  "DropoutGrad in training mode (is_test=0) needs 2 inputs (dY, mask), got ",
                  InputSize());
}

void DropoutGradOp::RunOnDevice() {
  const Tensor& dY = Input(0);
  EnforceFloatType(dY, "dY");
  if (is_test_) {
    if (!IsInputOutputAlias(0, 0)) Output(0)->CopyFrom(dY);
    return;
  }
  const Tensor& mask_t = Input(1);
  HALFCAF_ENFORCE(mask_t.dtype() == DataType::BOOL, "mask must be bool, got ",
                  mask_t.DebugString());
  HALFCAF_ENFORCE(mask_t.dims() == dY.dims(), "mask and dY must have the same shape, got ",
                  DimsString(mask_t.dims()), " and ", DimsString(dY.dims()));
  const std::vector<int64_t> dims = dY.dims();
  const DataType dtype = dY.dtype();
  const int64_t n = dY.numel();
  const bool* mask = mask_t.data<bool>();
  const float* dy = ReadAsFloat(dY, &dy_);
  FloatWriter dx(Output(0, dims), dtype, &dx_);
  float* dxd = dx.data();
  const float scale = 1.f / (1.f - ratio_);
  for (int64_t i = 0; i < n; ++i) dxd[i] = dy[i] * (mask[i] ? scale : 0.f);
  dx.Commit();
}

namespace {

class GetDropoutGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    if (args().GetSingleArgument<int>("is_test", 0) != 0) {
      return SingleGradientDef("DropoutGrad", {GO(0)}, {GI(0)});
    }
    return SingleGradientDef("DropoutGrad", {GO(0), O(1)}, {GI(0)});
  }
};

std::vector<TensorShape> DropoutShapes(const OperatorDef& def, const std::vector<TensorShape>& in) {
  std::vector<TensorShape> out{in.at(0)};
  if (def.output_size() == 2) out.push_back(TensorShape{in[0].dims, DataType::BOOL});
  return out;
}

}  // namespace

REGISTER_CPU_OPERATOR(Dropout, DropoutOp);
REGISTER_CPU_OPERATOR(DropoutGrad, DropoutGradOp);
REGISTER_GRADIENT(Dropout, GetDropoutGradient);

OPERATOR_SCHEMA(Dropout)
    .NumInputs(1)
    .NumOutputs(1, 2)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(DropoutShapes)
    .PointwiseCost(1)
    .SetDoc(
        "Dropout. Training (is_test=0): every element is kept with probability 1 - ratio, "
        "Y = X * mask / (1 - ratio), and the bool mask (true = kept) is output 1, which is "
        "required. Test (is_test=1): Y = X; the mask output is optional and, unlike Caffe2 "
        "(which leaves it unwritten), is filled with true when given. The random draws "
        "come from the operator's generator, seeded by device_option.random_seed when set. "
        "Float and float16.")
    .Arg("ratio", "float, default 0.5: probability of dropping an element, in [0, 1)")
    .Arg("is_test", "int, default 0: 1 turns dropout off (Y is a copy of X)")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "output, same shape and type as X")
    .Output(1, "mask", "bool, shape of X: true where X was kept (training; optional in test)");

OPERATOR_SCHEMA(DropoutGrad)
    .NumInputs(1, 2)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(1)
    .SetDoc(
        "Gradient of Dropout. Training: dX = dY * mask / (1 - ratio). Test (is_test=1): "
        "dX = dY (a mask input, if given, is ignored). Takes the forward op's ratio and "
        "is_test.")
    .Arg("ratio", "float, default 0.5: the forward op's ratio")
    .Arg("is_test", "int, default 0: the forward op's is_test")
    .Input(0, "dY", "gradient of Y")
    .Input(1, "mask", "bool mask from Dropout (training only)")
    .Output(0, "dX", "gradient of X, same shape and type as dY");

}  // namespace halfcaf
