// MomentumSGD and MomentumSGDUpdate on CUDA (float only, as on the CPU): one kernel that reads lr
// on the device. Any allowed in-place pairing is safe (each element is read before it is
// written). Schemas are in momentum_sgd_op.cc.
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/optimizer_kernels.h"
#include "operators/optimizer/momentum_sgd_op.h"

namespace halfcaf {

namespace {

class MomentumSGDCUDAOp final : public Operator<CUDAContext> {
 public:
  MomentumSGDCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        momentum_(GetSingleArgument<float>("momentum", 0.f)),
        nesterov_(GetSingleArgument<bool>("nesterov", false)),
        has_param_(def.type() == "MomentumSGDUpdate") {}

  void RunOnDevice() override {
    const Tensor& G = Input(0);
    const Tensor& M = Input(1);
    const Tensor& LR = Input(2);
    const Tensor* P = has_param_ ? &Input(3) : nullptr;
    CheckMomentumSGDInputs(G, M, LR, P);
    const std::vector<int64_t> dims = G.dims();
    const float* g = G.data<float>();
    const float* m = M.data<float>();
    const float* p = P ? P->data<float>() : nullptr;
    float* g_out = Output(0, dims)->mutable_data<float>();
    float* m_out = Output(1, dims)->mutable_data<float>();
    float* p_out = P ? Output(2, dims)->mutable_data<float>() : nullptr;
    gpu::MomentumSGD(G.numel(), g, m, LR.data<float>(), p, g_out, m_out, p_out, momentum_,
                     nesterov_, context_.stream());
  }

 private:
  float momentum_;
  bool nesterov_;
  bool has_param_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(MomentumSGD, MomentumSGDCUDAOp);
REGISTER_CUDA_OPERATOR(MomentumSGDUpdate, MomentumSGDCUDAOp);

}  // namespace halfcaf
