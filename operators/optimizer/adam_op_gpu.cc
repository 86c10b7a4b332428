// Adam and MixedPrecisionAdamUpdate on CUDA: one kernel per parameter (gpu/adam_kernels.cu). The
// rates, loss scale and overflow flag are read by the kernel on the device; the step count comes
// from the Iter counter on the CPU, so the bias corrections are host values. As with the fused
// momentum update, the inputs are checked even on a skipped step. The schemas are in adam_op.cc.
#include <cmath>

#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/adam_kernels.h"
#include "gpu/cuda_context.h"
#include "operators/optimizer/adam_op.h"
#include "operators/optimizer/loss_scale_op.h"
#include "operators/optimizer/mixed_precision_sgd_op.h"

namespace halfcaf {

namespace {

class AdamCUDAOp final : public Operator<CUDAContext> {
 public:
  AdamCUDAOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), adam_(*this, 1e-5f) {}

  void RunOnDevice() override {
    const Tensor& P = Input(0);
    const Tensor& G = Input(3);
    EnforceFloatScalar(Input(4), "lr");
    const int64_t t = AdamIteration(CPUInput(5)) + 1;
    for (int i : {0, 1, 2, 3}) {
      HALFCAF_ENFORCE(Input(i).dtype() == DataType::FLOAT && Input(i).dims() == P.dims(),
                      "Adam takes float param, moments and grad of one shape, got ",
                      Input(i).DebugString(), " beside param ", P.DebugString());
    }
    const float c = static_cast<float>(std::sqrt(1.0 - std::pow(adam_.beta2, t)) /
                                       (1.0 - std::pow(adam_.beta1, t)));
    float* p = Output(0, P.dims())->mutable_data<float>();
    float* m1 = Output(1, P.dims())->mutable_data<float>();
    float* m2 = Output(2, P.dims())->mutable_data<float>();
    float* eg = OutputSize() > 3 ? Output(3, P.dims())->mutable_data<float>() : nullptr;
    gpu::CaffeAdam(P.numel(), G.data<float>(), p, m1, m2, eg, Input(4).data<float>(), c,
                   adam_.beta1, adam_.beta2, adam_.epsilon, context_.stream());
  }

 private:
  const AdamArgs adam_;
};

class MixedPrecisionAdamUpdateCUDAOp final : public Operator<CUDAContext> {
 public:
  MixedPrecisionAdamUpdateCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), adam_(*this, 1e-8f), args_(*this) {}

  void RunOnDevice() override {
    const Tensor& G = Input(0);
    const Tensor& LR = Input(3);
    const Tensor& P = Input(4);
    EnforceFloatScalar(LR, "lr");
    const int64_t t = AdamIteration(CPUInput(5));
    HALFCAF_ENFORCE(t >= 1, "iter must count this step (>= 1), got ", t);
    const Tensor* scale = InputSize() > 6 ? &Input(6) : nullptr;
    const Tensor* found_inf = InputSize() > 7 ? &Input(7) : nullptr;
    if (scale) EnforceFloatScalar(*scale, "loss_scale");
    if (found_inf) EnforceFloatScalar(*found_inf, "found_inf");
    CheckMixedPrecisionUpdateInputs(G, Input(1), P);
    CheckMixedPrecisionUpdateInputs(G, Input(2), P);
    const DataType copy_type = args_.copy_dtype;
    if (G.dtype() == DataType::BFLOAT16 || (OutputSize() > 3 && copy_type == DataType::BFLOAT16)) {
      EnforceBFloat16Device(context_.device_id(), "MixedPrecisionAdamUpdate");
    }
    const double bc1 = 1.0 - std::pow(static_cast<double>(adam_.beta1), static_cast<double>(t));
    const double bc2 = 1.0 - std::pow(static_cast<double>(adam_.beta2), static_cast<double>(t));
    const std::vector<int64_t> dims = P.dims();
    float* m1 = Output(0, dims)->mutable_data<float>();
    float* m2 = Output(1, dims)->mutable_data<float>();
    float* p = Output(2, dims)->mutable_data<float>();
    void* copy = OutputSize() > 3 ? Output(3, dims)->raw_mutable_data(copy_type) : nullptr;
    gpu::MixedPrecisionAdam(P.numel(), G.dtype(), G.raw_data(), m1, m2, p, LR.data<float>(),
                            scale ? scale->data<float>() : nullptr,
                            found_inf ? found_inf->data<float>() : nullptr, copy_type, copy,
                            static_cast<float>(1.0 / bc1), static_cast<float>(std::sqrt(bc2)),
                            adam_.beta1, adam_.beta2, adam_.epsilon, args_.weight_decay,
                            adam_.decoupled, context_.stream());
  }

 private:
  const AdamArgs adam_;
  const MomentumUpdateArgs args_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Adam, AdamCUDAOp);
REGISTER_CUDA_OPERATOR(MixedPrecisionAdamUpdate, MixedPrecisionAdamUpdateCUDAOp);

}  // namespace halfcaf
