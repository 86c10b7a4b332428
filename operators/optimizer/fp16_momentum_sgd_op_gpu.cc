// FP16MomentumSGDUpdate and FP32MomentumSGDUpdate on CUDA: one kernel per op that reads lr on the
// device and follows the CPU operator's arithmetic exactly (fp16 math rounding points included).
// Any allowed in-place pairing is safe: each element is read before it is written. Schemas and
// the CPU reference are in fp16_momentum_sgd_op.cc.
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/optimizer_kernels.h"
#include "operators/optimizer/fp16_momentum_sgd_op.h"

namespace halfcaf {

namespace {

class FusedMomentumSGDUpdateCUDAOp final : public Operator<CUDAContext> {
 public:
  FusedMomentumSGDUpdateCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), args_(*this), dtype_(FusedMomentumDataType(def.type())) {}

  void RunOnDevice() override {
    const Tensor& G = Input(0);
    const Tensor& M = Input(1);
    const Tensor& LR = Input(2);
    const Tensor& P = Input(3);
    CheckFusedMomentumInputs(type(), dtype_, G, M, LR, P);
    const std::vector<int64_t> dims = G.dims();
    const void* g = G.raw_data();
    const void* m = M.raw_data();
    const void* p = P.raw_data();
    void* g_out = Output(0, dims)->raw_mutable_data(dtype_);
    void* m_out = Output(1, dims)->raw_mutable_data(dtype_);
    void* p_out = Output(2, dims)->raw_mutable_data(dtype_);
    gpu::FusedMomentumSGD(G.numel(), dtype_, g, m, LR.data<float>(), p, g_out, m_out, p_out,
                          args_.momentum, args_.weight_decay, args_.nesterov,
                          dtype_ == DataType::FLOAT16 && !args_.fp32_update, context_.stream());
  }

 private:
  const FusedMomentumArgs args_;
  const DataType dtype_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(FP16MomentumSGDUpdate, FusedMomentumSGDUpdateCUDAOp);
REGISTER_CUDA_OPERATOR(FP32MomentumSGDUpdate, FusedMomentumSGDUpdateCUDAOp);

}  // namespace halfcaf
