// L1Distance and its gradient on CUDA (gpu/distance_loss_kernels.cu); the schemas and the rules
// are in l1_distance_op.cc.
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/distance_loss_kernels.h"
#include "operators/loss/l1_distance_op.h"

namespace halfcaf {

namespace {

class L1DistanceCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& Y = Input(1);
    int64_t N, D;
    CheckL1Distance(*this, X, Y, nullptr, &N, &D);
    float* z = Output(0, {N})->mutable_data<float>();
    gpu::L1Distance(N, D, X.dtype(), X.raw_data(), Y.dtype(), Y.raw_data(), z, context_.stream());
  }
};

class L1DistanceGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& Y = Input(1);
    const Tensor& dZ = Input(2);
    int64_t N, D;
    CheckL1Distance(*this, X, Y, &dZ, &N, &D);
    void* dx = Output(0, X.dims())->raw_mutable_data(X.dtype());
    void* dy = Output(1, Y.dims())->raw_mutable_data(Y.dtype());
    gpu::L1DistanceGradient(N, D, X.dtype(), X.raw_data(), Y.dtype(), Y.raw_data(), dZ.dtype(),
                            dZ.raw_data(), dx, dy, context_.stream());
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(L1Distance, L1DistanceCUDAOp);
REGISTER_CUDA_OPERATOR(L1DistanceGradient, L1DistanceGradientCUDAOp);

}  // namespace halfcaf
