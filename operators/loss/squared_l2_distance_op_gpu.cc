// SquaredL2Distance and its gradient on CUDA (float / float16 inputs, computed in float; the row
// sums accumulate in double as on the CPU). Schemas and the gradient maker are in
// squared_l2_distance_op.cc.
#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/elementwise_kernels.h"
#include "gpu/reduce_kernels.h"
#include "operators/loss/squared_l2_distance_op.h"

namespace halfcaf {

namespace {

class SquaredL2DistanceCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& Y = Input(1);
    int64_t N, D;
    SquaredL2DistanceShape(X, Y, DebugName(), &N, &D);
    Tensor* Dist = Output(0, {N});
    gpu::RowHalfSquaredDistance(N, D, X.dtype(), X.raw_data(), Y.dtype(), Y.raw_data(),
                                Dist->mutable_data<float>(), context_.stream());
  }
};

class SquaredL2DistanceGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& Y = Input(1);
    const Tensor& dDist = Input(2);
    int64_t N, D;
    SquaredL2DistanceShape(X, Y, DebugName(), &N, &D);
    EnforceFloatType(dDist, "dDist");
    HALFCAF_ENFORCE(dDist.numel() == N, DebugName(), ": dDist must hold one value per row (", N,
                    "), got dims ", DimsString(dDist.dims()));
    Tensor* dX = Output(0, X.dims());
    Tensor* dY = Output(1, Y.dims());
    gpu::RowScaledDifference(N, D, X.dtype(), X.raw_data(), Y.dtype(), Y.raw_data(),
                             dDist.dtype(), dDist.raw_data(), X.dtype(),
                             dX->raw_mutable_data(X.dtype()), Y.dtype(),
                             dY->raw_mutable_data(Y.dtype()), context_.stream());
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(SquaredL2Distance, SquaredL2DistanceCUDAOp);
REGISTER_CUDA_OPERATOR(SquaredL2DistanceGradient, SquaredL2DistanceGradientCUDAOp);

}  // namespace halfcaf
