// LearningRate on CUDA: the schedule is evaluated on the host from the int64 iteration counter,
// which stays a CPU tensor (Iter is CPU-only, as in Caffe2), and the 0-d float lr is written on the
// device by a one-element fill kernel (the value travels as a kernel argument: no copy, no sync).
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/math_gpu.h"
#include "operators/optimizer/learning_rate_op.h"

namespace halfcaf {

namespace {

class LearningRateCUDAOp final : public Operator<CUDAContext> {
 public:
  LearningRateCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), base_lr_(RequiredBaseLr(*this)), policy_(args_) {}

  void RunOnDevice() override {
    const float lr = ComputeLearningRate(CPUInput(0), base_lr_, policy_);
    gpu::Set(1, lr, Output(0, {})->mutable_data<float>(), context_.stream());
  }

 private:
  float base_lr_;
  LearningRatePolicy policy_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(LearningRate, LearningRateCUDAOp);

}  // namespace halfcaf
