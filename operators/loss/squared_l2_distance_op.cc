#include "operators/loss/squared_l2_distance_op.h"

#include "core/float_io.h"
#include "core/gradient.h"

namespace halfcaf {

void SquaredL2DistanceShape(const Tensor& X, const Tensor& Y, const std::string& op,
                            int64_t* N, int64_t* D) {
  EnforceFloatType(X, "X");
  EnforceFloatType(Y, "Y");
  HALFCAF_ENFORCE(X.dims() == Y.dims(), op, ": X and Y must have the same shape, got ",
                  DimsString(X.dims()), " and ", DimsString(Y.dims()));
  HALFCAF_ENFORCE(X.ndim() >= 1, op,
                  ": X must be at least 1-d (rows along dimension 0), got a "
                  "0-d tensor");
  *N = X.dim(0);
  *D = *N > 0 ? X.numel() / *N : 0;
}

void SquaredL2DistanceOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& Y = Input(1);
  int64_t N, D;
  SquaredL2DistanceShape(X, Y, DebugName(), &N, &D);
  const float* x = ReadAsFloat(X, &x_);
  const float* y = ReadAsFloat(Y, &y_);
  Tensor* Dist = Output(0, {N});
  float* d = Dist->mutable_data<float>();
  for (int64_t i = 0; i < N; ++i) {
    double acc = 0;
    for (int64_t j = 0; j < D; ++j) {
      const double diff = static_cast<double>(x[i * D + j]) - y[i * D + j];
      acc += diff * diff;
    }
    d[i] = static_cast<float>(0.5 * acc);
  }
}

void SquaredL2DistanceGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& Y = Input(1);
  const Tensor& dDist = Input(2);
  int64_t N, D;
  SquaredL2DistanceShape(X, Y, DebugName(), &N, &D);
  EnforceFloatType(dDist, "dDist");
  HALFCAF_ENFORCE(dDist.numel() == N, DebugName(), ": dDist must hold one value per row (", N,
                  "), got dims ", DimsString(dDist.dims()));
  const float* x = ReadAsFloat(X, &x_);
  const float* y = ReadAsFloat(Y, &y_);
  const float* dd = ReadAsFloat(dDist, &dd_);
  Tensor* dX = Output(0, X.dims());
  Tensor* dY = Output(1, Y.dims());
  FloatWriter gx(dX, X.dtype(), &dx_);
  FloatWriter gy(dY, Y.dtype(), &dy_);
  float* gxd = gx.data();
  float* gyd = gy.data();
  for (int64_t i = 0; i < N; ++i) {
    for (int64_t j = 0; j < D; ++j) {
      const int64_t k = i * D + j;
      const float g = dd[i] * (x[k] - y[k]);
      gxd[k] = g;
      gyd[k] = -g;
    }
  }
  gx.Commit();
  gy.Commit();
}

namespace {

class GetSquaredL2DistanceGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("SquaredL2DistanceGradient", {I(0), I(1), GO(0)}, {GI(0), GI(1)});
  }
};

}  // namespace

std::vector<TensorShape> RowDistanceShape(const OperatorDef&, const std::vector<TensorShape>& in) {
  const auto& d = in.at(0).dims;
  return {TensorShape{{d.empty() ? int64_t{1} : d[0]}, DataType::FLOAT}};
}

std::vector<TensorShape> RowDistanceGradientShape(const OperatorDef&,
                                                  const std::vector<TensorShape>& in) {
  return {in.at(0), in.at(1)};
}

OpCost RowDistanceCost(const OperatorDef&, const std::vector<TensorShape>& in) {
  OpCost c;
  const double n = static_cast<double>(in.at(0).numel());
  c.flops = 3 * n;
  c.bytes_read = n * (DataTypeSize(in[0].dtype) + DataTypeSize(in.at(1).dtype));
  c.bytes_written = (in[0].dims.empty() ? 1.0 : static_cast<double>(in[0].dims[0])) * 4.0;
  return c;
}

REGISTER_CPU_OPERATOR(SquaredL2Distance, SquaredL2DistanceOp);
REGISTER_CPU_OPERATOR(SquaredL2DistanceGradient, SquaredL2DistanceGradientOp);
REGISTER_GRADIENT(SquaredL2Distance, GetSquaredL2DistanceGradient);

OPERATOR_SCHEMA(SquaredL2Distance)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction(RowDistanceShape)
    .CostInferenceFunction(RowDistanceCost)
    .SetDoc(
        "Half the squared Euclidean distance between matching rows of X and Y: "
        "Dist[i] = 0.5 * sum_j (X[i, j] - Y[i, j])^2, rows along dimension 0 (the other "
        "dimensions are flattened). X and Y must have the same shape; float or float16, the "
        "output is float.")
    .Input(0, "X", "tensor, at least 1-d")
    .Input(1, "Y", "tensor of X's shape")
    .Output(0, "Dist", "float (N), N = X.dims[0]");

OPERATOR_SCHEMA(SquaredL2DistanceGradient)
    .NumInputs(3)
    .NumOutputs(2)
    .TensorInferenceFunction(RowDistanceGradientShape)
    .CostInferenceFunction(RowDistanceCost)
    .SetDoc(
        "Gradient of SquaredL2Distance: dX[i] = dDist[i] * (X[i] - Y[i]), dY = -dX. dX has "
        "X's type, dY has Y's.")
    .Input(0, "X", "forward input X")
    .Input(1, "Y", "forward input Y")
    .Input(2, "dDist", "gradient of Dist (N)")
    .Output(0, "dX", "gradient of X")
    .Output(1, "dY", "gradient of Y");

}  // namespace halfcaf
