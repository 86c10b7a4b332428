// Copy, CopyOnDeviceLike, Alias, StopGradient and EnsureCPUOutput on CUDA, any data type. GPU to
// GPU copies are queued on the op's stream (a peer copy when Copy's input lives on another GPU);
// copies to the host wait for the op's stream first. Schemas and gradient makers are in
// copy_op.cc.
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/tensor_copy.h"
#include "operators/tensor/copy_op.h"

namespace halfcaf {

namespace {

// Copy: X on any GPU -> Y on the op's GPU.
class CopyCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    const Tensor& X = TensorInputAnyDevice(*this, 0);
    HALFCAF_ENFORCE(X.device().type == DeviceType::CUDA, "input 0 '", input_name(0), "' is on ",
                    X.device().ToString(), " but a CUDA Copy copies between GPUs (use "
                    "CopyCPUToGPU for host tensors)");
    gpu::CopyTensorAsync(X, Output(0), context_.stream());
  }
};

// CopyOnDeviceLike: X on the op's GPU -> Y on the device that holds `like` (CPU or a GPU).
class CopyOnDeviceLikeCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Device dst = TensorInputAnyDevice(*this, 1).device();
    Tensor* Y = OutputBlob(0)->GetMutableTensor(dst);
    if (dst.type == DeviceType::CUDA) {
      gpu::CopyTensorAsync(X, Y, context_.stream());
    } else {
      context_.FinishDevice();  // producers of X on this stream are done
      Y->CopyFrom(X);
    }
  }
};

class AliasCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    Tensor* Y = Output(0);
    if (Y != &X) Y->ShareData(X);
  }
};

class StopGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override { gpu::CopyTensorAsync(Input(0), Output(0), context_.stream()); }
};

// EnsureCPUOutput: X on the CPU or on the op's GPU -> Y on the CPU.
class EnsureCPUOutputCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    const Tensor& X = TensorInputAnyDevice(*this, 0);
    HALFCAF_ENFORCE(X.device().type == DeviceType::CPU || X.device() == context_.device(),
                    "input 0 '", input_name(0), "' is on ", X.device().ToString(),
                    " but EnsureCPUOutput on ", context_.device().ToString(),
                    " takes a CPU tensor or one on its own GPU");
    if (X.device().type == DeviceType::CUDA) context_.FinishDevice();
    OutputBlob(0)->GetMutableTensor(Device())->CopyFrom(X);
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(Copy, CopyCUDAOp);
REGISTER_CUDA_OPERATOR(CopyOnDeviceLike, CopyOnDeviceLikeCUDAOp);
REGISTER_CUDA_OPERATOR(Alias, AliasCUDAOp);
REGISTER_CUDA_OPERATOR(StopGradient, StopGradientCUDAOp);
REGISTER_CUDA_OPERATOR(EnsureCPUOutput, EnsureCPUOutputCUDAOp);

}  // namespace halfcaf
