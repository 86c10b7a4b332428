// BatchMatMul on CUDA: strided batched cuBLAS GEMMs (gpu/batched_gemm_kernels.h: float16 with FP32
// accumulation on tensor cores, float as real FP32), one call per run of products whose A and B
// matrices advance by fixed steps (a single call unless batch dims broadcast). Shapes, arguments
// and errors as in batch_matmul_op.cc, which holds the schema and the gradient maker.
#include "core/operator.h"
#include "gpu/batched_gemm_kernels.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_context.h"
#include "operators/math/batch_matmul_op.h"

namespace halfcaf {

namespace {

class BatchMatMulCUDAOp final : public Operator<CUDAContext> {
 public:
  BatchMatMulCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        trans_a_(GetSingleArgument<int>("trans_a", 0) != 0),
        trans_b_(GetSingleArgument<int>("trans_b", 0) != 0),
        broadcast_(GetSingleArgument<int>("broadcast", 0) != 0) {}

  void RunOnDevice() override {
    const Tensor& A = Input(0);
    const Tensor& B = Input(1);
    const BatchMatMulPlan p = PlanBatchMatMul(A, B, trans_a_, trans_b_, broadcast_, DebugName());
    const DataType dtype = A.dtype();
    Tensor* Y = Output(0, p.out_dims);
    char* y = static_cast<char*>(Y->raw_mutable_data(dtype));
    if (Y->numel() == 0) return;
    if (p.K == 0) {  // empty sums: zeros (all-zero bytes are 0 in float and float16)
      HALFCAF_CUDA_CHECK(cudaMemsetAsync(y, 0, Y->nbytes(), context_.stream()));
      return;
    }
    const int64_t item = static_cast<int64_t>(DataTypeSize(dtype));
    const char* a = static_cast<const char*>(A.raw_data());
    const char* b = static_cast<const char*>(B.raw_data());
    const int64_t a_size = p.M * p.K, b_size = p.K * p.N, y_size = p.M * p.N;
    for (const StridedBatchRun& r : StridedBatchRuns(p)) {
      gpu::GemmStridedBatched(&context_, dtype, p.trans_a, p.trans_b, p.M, p.N, p.K, 1.f,
                              a + r.a_first * a_size * item, r.a_step * a_size,
                              b + r.b_first * b_size * item, r.b_step * b_size, 0.f,
                              y + r.first * y_size * item, y_size, r.count);
    }
  }

 private:
  bool trans_a_, trans_b_, broadcast_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(BatchMatMul, BatchMatMulCUDAOp);

}  // namespace halfcaf
