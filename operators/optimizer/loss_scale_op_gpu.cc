// CheckFinite and UpdateLossScale on CUDA. found_inf is a 0-d float on the device, set by kernels
// that scan the gradients (no host sync). UpdateLossScale keeps its whole state on the device
// (loss_scale, good_steps, skipped_steps) and applies LossScaleRule::Step in a single-thread
// kernel, so the training loop never waits for the host; a counter found on the host (or not yet
// an int64 counter) is moved to the device first. Schemas are in loss_scale_op.cc.
#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/elementwise_kernels.h"
#include "gpu/math_gpu.h"
#include "gpu/optimizer_kernels.h"
#include "gpu/reduce_kernels.h"
#include "operators/optimizer/loss_scale_op.h"

namespace halfcaf {

namespace {

class CheckFiniteCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    for (int i = 0; i < InputSize(); ++i) EnforceFloatType(Input(i), "every input", true);
    float* flag = Output(0, {})->mutable_data<float>();
    cudaStream_t stream = context_.stream();
    gpu::Set(1, 0.f, flag, stream);
    for (int i = 0; i < InputSize(); ++i) {
      const Tensor& g = Input(i);
      gpu::MarkNonFinite(g.numel(), g.dtype(), g.raw_data(), flag, stream);
    }
  }
};

class UpdateLossScaleCUDAOp final : public Operator<CUDAContext> {
 public:
  UpdateLossScaleCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), rule_(ParseLossScaleRule(*this)) {}

  void RunOnDevice() override {
    EnforceFloatScalar(Input(0), "loss_scale");
    const Tensor& found_inf = Input(1);
    EnforceFloatScalar(found_inf, "found_inf");
    int64_t* good = CounterOnDevice(OutputBlob(1));
    int64_t* skipped = CounterOnDevice(OutputBlob(2));
    float* scale = Output(0, {})->mutable_data<float>();
    gpu::UpdateLossScale(scale, found_inf.data<float>(), good, skipped, rule_.growth,
                         rule_.backoff, rule_.growth_interval, rule_.min_scale, rule_.max_scale,
                         context_.stream());
  }

 private:
  // The int64 (1) counter held by `blob`, on this op's GPU: a host counter keeps its value, and
  // anything else (empty, other type or size) starts from 0, as on the CPU.
  int64_t* CounterOnDevice(Blob* blob) {
    Tensor* t = blob->GetMutable<Tensor>();
    const bool is_counter =
        t->dtype() == DataType::INT64 && t->numel() == 1 && t->initialized();
    if (is_counter && t->device() == context_.device()) return t->mutable_data<int64_t>();
    const double start = is_counter && t->device().type == DeviceType::CPU
                             ? static_cast<double>(t->data<int64_t>()[0])
                             : 0.0;
    t->SetDevice(context_.device());
    t->Resize({1});
    int64_t* d = t->mutable_data<int64_t>();
    gpu::Fill(1, DataType::INT64, start, d, context_.stream());
    return d;
  }

  LossScaleRule rule_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(CheckFinite, CheckFiniteCUDAOp);
REGISTER_CUDA_OPERATOR(UpdateLossScale, UpdateLossScaleCUDAOp);

}  // namespace halfcaf
