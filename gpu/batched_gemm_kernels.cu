#include "gpu/batched_gemm_kernels.h"

#include <cublas_v2.h>
#include <library_types.h>

#include <algorithm>
#include <limits>

#include "gpu/cublas_gemm.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_context.h"

namespace halfcaf {
namespace gpu {

void GemmStridedBatched(CUDAContext* ctx, DataType dtype, math::Trans trans_a, math::Trans trans_b,
                        int64_t M, int64_t N, int64_t K, float alpha, const void* A,
                        int64_t stride_a, const void* B, int64_t stride_b, float beta, void* C,
                        int64_t stride_c, int64_t batch) {
  if (M == 0 || N == 0 || batch == 0) return;
  HALFCAF_ENFORCE(K > 0, "batched GEMM on CUDA needs K > 0, got ", K);
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS gets B first and the
  // dims N, M; the leading dims are the stored (row-major) column counts.
  const bool ta = trans_a == math::Trans::kYes, tb = trans_b == math::Trans::kYes;
  const int64_t lda = std::max<int64_t>(1, ta ? M : K), ldb = std::max<int64_t>(1, tb ? K : N);
  for (const int64_t v : {M, N, K, lda, ldb, batch}) {
    HALFCAF_ENFORCE(v <= std::numeric_limits<int>::max(), "batched GEMM: M ", M, ", N ", N, ", K ",
                    K, ", batch ", batch, " must fit the 32-bit ints cuBLAS takes");
  }
  const cudaDataType_t type = dtype == DataType::FLOAT16 ? CUDA_R_16F : CUDA_R_32F;
  cublasHandle_t handle = ctx->cublas_handle();
  // The handle is shared by the ops on this stream: set the math mode on every call.
  HALFCAF_CUBLAS_CHECK(cublasSetMathMode(
      handle, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                        CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  HALFCAF_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(N),
      static_cast<int>(M), static_cast<int>(K), &alpha, B, type, static_cast<int>(ldb), stride_b, A,
      type, static_cast<int>(lda), stride_a, &beta, C, type, static_cast<int>(N), stride_c,
      static_cast<int>(batch), GemmComputeType(dtype), GemmAlgorithm(dtype)));
}

}  // namespace gpu
}  // namespace halfcaf
