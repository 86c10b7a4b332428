// MixedPrecisionMomentumSGDUpdate on CUDA: one fused kernel per parameter (unscale, weight decay,
// momentum or Nesterov, FP32 master update, FP16 copy). lr, loss_scale and found_inf are read by
// the kernel on the device, so an overflowed step is skipped without a host sync. Differences from
// the CPU operator, which reads those scalars on the host: the inputs are checked even on a
// skipped step, a non-positive loss_scale is not detected, and the float16 copy output is
// allocated (with its old contents kept when it already has the master's shape) even when the
// step is skipped. The schema is in mixed_precision_sgd_op.cc.
#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/optimizer_kernels.h"
#include "operators/loss_scale_op.h"
#include "operators/mixed_precision_sgd_op.h"

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
    HALFCAF_ENFORCE(OutputSize() <= 2 || args_.copy_dtype == DataType::FLOAT16,
                    "MixedPrecisionMomentumSGDUpdate on CUDA writes a float16 copy only, got "
                    "copy_dtype ", DataTypeName(args_.copy_dtype));
    const std::vector<int64_t> dims = P.dims();
    float* m = Output(0, dims)->mutable_data<float>();
    float* p = Output(1, dims)->mutable_data<float>();
    Half* copy = OutputSize() > 2 ? Output(2, dims)->mutable_data<Half>() : nullptr;
    gpu::MixedPrecisionMomentumSGD(P.numel(), G.dtype(), G.raw_data(), m, p, LR.data<float>(),
                                   scale ? scale->data<float>() : nullptr,
                                   found_inf ? found_inf->data<float>() : nullptr, copy,
                                   args_.momentum, args_.weight_decay, args_.nesterov,
                                   context_.stream());
  }

 private:
  const MomentumUpdateArgs args_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(MixedPrecisionMomentumSGDUpdate, MixedPrecisionMomentumSGDUpdateCUDAOp);

}  // namespace halfcaf
