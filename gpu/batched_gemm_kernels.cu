#include <cublas_v2.h>
#include <library_types.h>

#include <algorithm>
#include <limits>

#include "gpu/batched_gemm_kernels.h"
#include "gpu/cublas_gemm.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_context.h"

namespace halfcaf {
namespace gpu {

namespace {

int ToCublasInt(int64_t v, const char* what) {
  HALFCAF_ENFORCE(v >= 0 && v <= std::numeric_limits<int>::max(), "batched GEMM ", what, " = ", v,
                  " does not fit the 32-bit int cuBLAS takes");
  return static_cast<int>(v);
}

cublasOperation_t CublasOp(math::Trans t) {
  return t == math::Trans::kYes ? CUBLAS_OP_T : CUBLAS_OP_N;
}

}  // namespace

void GemmStridedBatched(CUDAContext* ctx, DataType dtype, math::Trans trans_a, math::Trans trans_b,
                        int64_t M, int64_t N, int64_t K, float alpha, const void* A,
                        int64_t stride_a, const void* B, int64_t stride_b, float beta, void* C,
                        int64_t stride_c, int64_t batch) {
  if (M == 0 || N == 0 || batch == 0) return;
  HALFCAF_ENFORCE(K > 0, "batched GEMM on CUDA needs K > 0, got ", K);
  // Stored (row-major) column counts of A, B and C.
  const int64_t lda = std::max<int64_t>(1, trans_a == math::Trans::kNo ? K : M);
  const int64_t ldb = std::max<int64_t>(1, trans_b == math::Trans::kNo ? N : K);
  const cudaDataType_t type = dtype == DataType::FLOAT16 ? CUDA_R_16F : CUDA_R_32F;
  cublasHandle_t handle = ctx->cublas_handle();
  // State the mode on every call: the handle is shared by all ops on this stream.
  HALFCAF_CUBLAS_CHECK(cublasSetMathMode(
      handle, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                        CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B first, dims N, M.
  HALFCAF_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle, CublasOp(trans_b), CublasOp(trans_a), ToCublasInt(N, "N"), ToCublasInt(M, "M"),
      ToCublasInt(K, "K"), &alpha, B, type, ToCublasInt(ldb, "ldb"), stride_b, A, type,
      ToCublasInt(lda, "lda"), stride_a, &beta, C, type, ToCublasInt(N, "ldc"), stride_c,
      ToCublasInt(batch, "batch count"), GemmComputeType(dtype), GemmAlgorithm(dtype)));
}

}  // namespace gpu
}  // namespace halfcaf
