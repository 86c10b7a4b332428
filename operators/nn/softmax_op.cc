#include "operators/nn/softmax_op.h"

#include <algorithm>
#include <cmath>

#include "core/float_io.h"
#include "core/gradient.h"

namespace halfcaf {

void SoftmaxRows(const float* x, int64_t N, int64_t D, float* y, float* row_lse) {
  for (int64_t i = 0; i < N; ++i) {
    const float* xi = x + i * D;
    float* yi = y + i * D;
    float mx = -INFINITY;
    for (int64_t j = 0; j < D; ++j) mx = std::max(mx, xi[j]);
    double sum = 0;
    for (int64_t j = 0; j < D; ++j) {
      yi[j] = std::exp(xi[j] - mx);
      sum += yi[j];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t j = 0; j < D; ++j) yi[j] *= inv;
    if (row_lse) row_lse[i] = mx + static_cast<float>(std::log(sum));
  }
}

int SoftmaxMatrixShape(const std::vector<int64_t>& dims, int axis, const std::string& op,
                       int64_t* N, int64_t* D) {
  const int nd = static_cast<int>(dims.size());
  HALFCAF_ENFORCE(nd >= 1 && axis >= -nd && axis < nd, op, ": axis ", axis,
                  " is out of range for input dims ", DimsString(dims));
  const int a = axis < 0 ? axis + nd : axis;
  *N = 1;
  *D = 1;
  for (int i = 0; i < a; ++i) *N *= dims[i];
  for (int i = a; i < nd; ++i) *D *= dims[i];
  return a;
}

SoftmaxOp::SoftmaxOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), axis_(GetSingleArgument<int>("axis", 1)) {}

void SoftmaxOp::RunOnDevice() {
  const Tensor& X = Input(0);
  EnforceFloatType(X, "X");
  int64_t N, D;
  SoftmaxMatrixShape(X.dims(), axis_, DebugName(), &N, &D);
  const float* x = ReadAsFloat(X, &x_);
  Tensor* Y = Output(0, X.dims());
  FloatWriter y(Y, X.dtype(), &y_);
  SoftmaxRows(x, N, D, y.data());
  y.Commit();
}

SoftmaxGradientOp::SoftmaxGradientOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), axis_(GetSingleArgument<int>("axis", 1)) {}

void SoftmaxGradientOp::RunOnDevice() {
  const Tensor& Y = Input(0);
  const Tensor& dY = Input(1);
  EnforceFloatType(Y, "Y");
  EnforceFloatType(dY, "dY");
  HALFCAF_ENFORCE(Y.dims() == dY.dims(), DebugName(), ": Y and dY must have the same shape, got ",
                  DimsString(Y.dims()), " and ", DimsString(dY.dims()));
  int64_t N, D;
  SoftmaxMatrixShape(Y.dims(), axis_, DebugName(), &N, &D);
  const float* y = ReadAsFloat(Y, &y_);
  const float* dy = ReadAsFloat(dY, &dy_);
  Tensor* dX = Output(0, Y.dims());
  FloatWriter dx(dX, Y.dtype(), &dx_);
  float* dxd = dx.data();
  for (int64_t i = 0; i < N; ++i) {
    const float* yi = y + i * D;
    const float* dyi = dy + i * D;
    double dot = 0;
    for (int64_t j = 0; j < D; ++j) dot += static_cast<double>(yi[j]) * dyi[j];
    const float fdot = static_cast<float>(dot);
    float* dxi = dxd + i * D;
    for (int64_t j = 0; j < D; ++j) dxi[j] = yi[j] * (dyi[j] - fdot);
  }
  dx.Commit();
}

namespace {

class GetSoftmaxGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("SoftmaxGradient", {O(0), GO(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(Softmax, SoftmaxOp);
REGISTER_CPU_OPERATOR(SoftmaxGradient, SoftmaxGradientOp);
REGISTER_GRADIENT(Softmax, GetSoftmaxGradient);

OPERATOR_SCHEMA(Softmax)
    .NumInputs(1)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .PointwiseCost(4)
    .SetDoc(
        "Softmax along the trailing block of dimensions: X is viewed as a matrix (N, D) = "
        "(prod(dims[:axis]), prod(dims[axis:])) and every row is normalised to "
        "exp(x - max) / sum(exp(x - max)) (the maximum is subtracted first, so large inputs "
        "do not overflow). Float and float16 (computed in float).")
    .Arg("axis",
         "int, default 1: first dimension of the normalised block (negative counts from "
         "the end)")
    .Input(0, "X", "input tensor, at least 1-d")
    .Output(0, "Y", "probabilities, same shape and type as X");

OPERATOR_SCHEMA(SoftmaxGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .IdenticalTypeAndShapeOfInput(0)
    .PointwiseCost(4)
    .SetDoc(
        "Gradient of Softmax: dX = Y * (dY - rowsum(dY * Y)), rows as in Softmax (same "
        "`axis`). dX has Y's type.")
    .Arg("axis", "int, default 1: as in Softmax")
    .Input(0, "Y", "forward output")
    .Input(1, "dY", "gradient of Y")
    .Output(0, "dX", "gradient of X");

}  // namespace halfcaf
