// L1Distance (Caffe2): the L1 distance between matching rows of X and Y (same shape, rows along
// dimension 0, the other dimensions flattened): Z[i] = sum_j |X[i, j] - Y[i, j]|.
// L1DistanceGradient: (X, Y, dZ) -> (dX, dY) with dX[i, j] = dZ[i] * sign(X[i, j] - Y[i, j]) and
// dY = -dX, both 0 where |X - Y| <= 1e-12 (Caffe2's dead zone, on the float difference). X and Y
// float, float16 or bfloat16 (computed in float); Z float (N); dX has X's type, dY has Y's.
#include "operators/loss/l1_distance_op.h"

#include <cmath>

#include "core/float_io.h"
#include "core/gradient.h"
#include "operators/loss/squared_l2_distance_op.h"

namespace halfcaf {

void CheckL1Distance(const OperatorBase& op, const Tensor& X, const Tensor& Y, const Tensor* dZ,
                     int64_t* N, int64_t* D) {
  SquaredL2DistanceShape(X, Y, op.DebugName(), N, D);
  if (!dZ) return;
  EnforceFloatType(*dZ, "dZ");
  HALFCAF_ENFORCE(dZ->numel() == *N, op.DebugName(), ": dZ must hold one value per row (", *N,
                  "), got dims ", DimsString(dZ->dims()));
}

namespace {

// |X - Y| at or below this counts as equal: no gradient (Caffe2's kEps).
constexpr float kL1DeadZone = 1e-12f;

class L1DistanceOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& Y = Input(1);
    int64_t N, D;
    CheckL1Distance(*this, X, Y, nullptr, &N, &D);
    const float* x = ReadAsFloat(X, &x_);
    const float* y = ReadAsFloat(Y, &y_);
    float* z = Output(0, {N})->mutable_data<float>();
    for (int64_t i = 0; i < N; ++i) {
      double sum = 0;
      for (int64_t k = i * D; k < (i + 1) * D; ++k) {
        sum += std::fabs(static_cast<double>(x[k]) - static_cast<double>(y[k]));
      }
      z[i] = static_cast<float>(sum);
    }
  }

 private:
  std::vector<float> x_, y_;
};

class L1DistanceGradientOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& Y = Input(1);
    const Tensor& dZ = Input(2);
    int64_t N, D;
    CheckL1Distance(*this, X, Y, &dZ, &N, &D);
    const float* x = ReadAsFloat(X, &x_);
    const float* y = ReadAsFloat(Y, &y_);
    const float* dz = ReadAsFloat(dZ, &dz_);
    FloatWriter dx(Output(0, X.dims()), X.dtype(), &dx_);
    FloatWriter dy(Output(1, Y.dims()), Y.dtype(), &dy_);
    float* gx = dx.data();
    float* gy = dy.data();
    for (int64_t i = 0; i < N; ++i) {
      for (int64_t k = i * D; k < (i + 1) * D; ++k) {
        const float d = x[k] - y[k];
        const float g = d > kL1DeadZone ? dz[i] : d < -kL1DeadZone ? -dz[i] : 0.f;
        gx[k] = g;
        gy[k] = -g;
      }
    }
    dx.Commit();
    dy.Commit();
  }

 private:
  std::vector<float> x_, y_, dz_, dx_, dy_;
};

class GetL1DistanceGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("L1DistanceGradient", {I(0), I(1), GO(0)}, {GI(0), GI(1)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(L1Distance, L1DistanceOp);
REGISTER_CPU_OPERATOR(L1DistanceGradient, L1DistanceGradientOp);
REGISTER_GRADIENT(L1Distance, GetL1DistanceGradient);

OPERATOR_SCHEMA(L1Distance)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction(RowDistanceShape)
    .CostInferenceFunction(RowDistanceCost)
    .SetDoc(
        "L1 distance between matching rows of X and Y: Z[i] = sum_j |X[i, j] - Y[i, j]|, rows "
        "along dimension 0 (the other dimensions are flattened). X and Y must have the same "
        "shape; float, float16 or bfloat16 (computed in float); Z is float.")
    .Input(0, "X", "tensor, at least 1-d")
    .Input(1, "Y", "tensor of X's shape")
    .Output(0, "Z", "float (N), N = X.dims[0]");

OPERATOR_SCHEMA(L1DistanceGradient)
    .NumInputs(3)
    .NumOutputs(2)
    .TensorInferenceFunction(RowDistanceGradientShape)
    .CostInferenceFunction(RowDistanceCost)
    .SetDoc(
        "Gradient of L1Distance: dX[i, j] = dZ[i] * sign(X[i, j] - Y[i, j]), dY = -dX; both "
        "are 0 where |X - Y| <= 1e-12 (as in Caffe2). dX has X's type, dY has Y's.")
    .Input(0, "X", "forward input X")
    .Input(1, "Y", "forward input Y")
    .Input(2, "dZ", "gradient of Z (N)")
    .Output(0, "dX", "gradient of X")
    .Output(1, "dY", "gradient of Y");

}  // namespace halfcaf
