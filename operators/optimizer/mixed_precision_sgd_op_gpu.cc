// MixedPrecisionMomentumSGDUpdate on CUDA: one fused kernel per parameter (unscale, weight decay,
// momentum or Nesterov, FP32 master update, float16 or bfloat16 copy). lr, loss_scale and found_inf are read by
// the kernel on the device, so an overflowed step is skipped without a host sync. Differences from
// the CPU operator, which reads those scalars on the host: the inputs are checked even on a
// skipped step, a non-positive loss_scale is not detected, and the 16-bit copy output is
// allocated (with its old contents kept when it already has the master's shape) even when the
// step is skipped. The schema is in mixed_precision_sgd_op.cc.
#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/optimizer_kernels.h"
#include "operators/optimizer/loss_scale_op.h"
#include "operators/optimizer/mixed_precision_sgd_op.h"

namespace halfcaf {

namespace {

class MixedPrecisionMomentumSGDUpdateCUDAOp final : public Operator<CUDAContext> {
 public:
  MixedPrecisionMomentumSGDUpdateCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), args_(*this) {}

  void RunOnDevice() override {
    const Tensor& G = Input(0);
    const Tensor& M = Input(1);
    const Tensor& LR = Input(2);
    const Tensor& P = Input(3);
    EnforceFloatScalar(LR, "lr");
    const Tensor* scale = InputSize() > 4 ? &Input(4) : nullptr;
    const Tensor* found_inf = InputSize() > 5 ? &Input(5) : nullptr;
    if (scale) EnforceFloatScalar(*scale, "loss_scale");
    if (found_inf) EnforceFloatScalar(*found_inf, "found_inf");
    CheckMixedPrecisionUpdateInputs(G, M, P);
    const DataType copy_type = args_.copy_dtype;
    if (G.dtype() == DataType::BFLOAT16 || (OutputSize() > 2 && copy_type == DataType::BFLOAT16)) {
      EnforceBFloat16Device(context_.device_id(), "MixedPrecisionMomentumSGDUpdate");
    }
    const std::vector<int64_t> dims = P.dims();
    float* m = Output(0, dims)->mutable_data<float>();
    float* p = Output(1, dims)->mutable_data<float>();
    void* copy = OutputSize() > 2 ? Output(2, dims)->raw_mutable_data(copy_type) : nullptr;
    gpu::MixedPrecisionMomentumSGD(P.numel(), G.dtype(), G.raw_data(), m, p, LR.data<float>(),
                                   scale ? scale->data<float>() : nullptr,
                                   found_inf ? found_inf->data<float>() : nullptr, copy_type,
                                   copy, args_.momentum, args_.weight_decay, args_.nesterov,
                                   context_.stream());
  }

 private:
  const MomentumUpdateArgs args_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(MixedPrecisionMomentumSGDUpdate, MixedPrecisionMomentumSGDUpdateCUDAOp);

}  // namespace halfcaf
