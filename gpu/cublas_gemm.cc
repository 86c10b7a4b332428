#include "gpu/cublas_gemm.h"

#include <library_types.h>

#include <algorithm>
#include <limits>

#include "gpu/cuda_check.h"
#include "gpu/cuda_context.h"

namespace halfcaf {
namespace gpu {

cublasComputeType_t GemmComputeType(DataType t) {
  switch (t) {
    case DataType::FLOAT: return CUBLAS_COMPUTE_32F_PEDANTIC;
    case DataType::FLOAT16:
    case DataType::BFLOAT16: return CUBLAS_COMPUTE_32F;
    default: break;
  }
  HALFCAF_THROW("GEMM on CUDA takes float, float16 or bfloat16 data, got ", DataTypeName(t));
}

cublasGemmAlgo_t GemmAlgorithm(DataType t) {
  return t == DataType::FLOAT ? CUBLAS_GEMM_DEFAULT : CUBLAS_GEMM_DEFAULT_TENSOR_OP;
}


const char* CublasComputeTypeName(cublasComputeType_t t) {
  switch (t) {
    case CUBLAS_COMPUTE_32F: return "CUBLAS_COMPUTE_32F";
    case CUBLAS_COMPUTE_32F_PEDANTIC: return "CUBLAS_COMPUTE_32F_PEDANTIC";
    case CUBLAS_COMPUTE_32F_FAST_16F: return "CUBLAS_COMPUTE_32F_FAST_16F";
    case CUBLAS_COMPUTE_32F_FAST_TF32: return "CUBLAS_COMPUTE_32F_FAST_TF32";
    default: return "other cuBLAS compute type";
  }
}

namespace {

int CublasInt(int64_t v, const char* what) {
  HALFCAF_ENFORCE(v >= 0 && v <= std::numeric_limits<int>::max(), "GEMM ", what, " = ", v,
                  " does not fit the 32-bit int cuBLAS takes");
  return static_cast<int>(v);
}

cublasOperation_t ToCublas(math::Trans t) {
  return t == math::Trans::kYes ? CUBLAS_OP_T : CUBLAS_OP_N;
}

// Row-major C (M x N) = op(A) op(B) is column-major C^T (N x M) = op(B)^T op(A)^T, so cuBLAS gets
// B first, A second, and the dimensions N, M.
void GemmImpl(CUDAContext* ctx, DataType dtype, math::Trans trans_a, math::Trans trans_b, int64_t M,
              int64_t N, int64_t K, float alpha, const void* A, int64_t lda, const void* B,
              int64_t ldb, float beta, void* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    // C = beta * C. Done here, as core/math.h does, rather than relying on cuBLAS for k == 0:
    // beta == 0 must give zeros whatever C held (NaN included).
    if (beta == 1.f) return;
    HALFCAF_ENFORCE(beta == 0.f, "GEMM with K = 0 on CUDA supports beta 0 or 1, got ", beta);
    const size_t item = dtype == DataType::FLOAT ? sizeof(float) : sizeof(Half);
    HALFCAF_CUDA_CHECK(cudaMemset2DAsync(C, static_cast<size_t>(ldc) * item, 0,
                                         static_cast<size_t>(N) * item, static_cast<size_t>(M),
                                         ctx->stream()));
    return;
  }
  if (dtype == DataType::BFLOAT16) EnforceBFloat16Device(ctx->device_id(), "GEMM");
  const cudaDataType_t type = dtype == DataType::FLOAT16    ? CUDA_R_16F
                              : dtype == DataType::BFLOAT16 ? CUDA_R_16BF
                                                            : CUDA_R_32F;
  cublasHandle_t handle = ctx->cublas_handle();
  // The handle is shared by every op on this stream: state the mode each time, so that nothing
  // set elsewhere (TF32, reduced-precision split-K reductions) leaks into this call.
  HALFCAF_CUBLAS_CHECK(cublasSetMathMode(
      handle, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                        CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  HALFCAF_CUBLAS_CHECK(cublasGemmEx(
      handle, ToCublas(trans_b), ToCublas(trans_a), CublasInt(N, "N"), CublasInt(M, "M"),
      CublasInt(K, "K"), &alpha, B, type, CublasInt(ldb, "ldb"), A, type, CublasInt(lda, "lda"),
      &beta, C, type, CublasInt(ldc, "ldc"), GemmComputeType(dtype), GemmAlgorithm(dtype)));
}

// Leading dimension of a packed row-major operand whose op() has `cols` columns and `rows` rows:
// its stored column count (at least 1, as cuBLAS requires).
int64_t Ld(math::Trans t, int64_t rows, int64_t cols) {
  return std::max<int64_t>(1, t == math::Trans::kNo ? cols : rows);
}

}  // namespace

void Gemm(CUDAContext* ctx, math::Trans trans_a, math::Trans trans_b, int64_t M, int64_t N,
          int64_t K, float alpha, const float* A, const float* B, float beta, float* C) {
  GemmImpl(ctx, DataType::FLOAT, trans_a, trans_b, M, N, K, alpha, A, Ld(trans_a, M, K), B,
           Ld(trans_b, K, N), beta, C, std::max<int64_t>(1, N));
}

void Gemm(CUDAContext* ctx, math::Trans trans_a, math::Trans trans_b, int64_t M, int64_t N,
          int64_t K, float alpha, const Half* A, const Half* B, float beta, Half* C) {
  GemmImpl(ctx, DataType::FLOAT16, trans_a, trans_b, M, N, K, alpha, A, Ld(trans_a, M, K), B,
           Ld(trans_b, K, N), beta, C, std::max<int64_t>(1, N));
}

void Gemm(CUDAContext* ctx, math::Trans trans_a, math::Trans trans_b, int64_t M, int64_t N,
          int64_t K, float alpha, const BFloat16* A, const BFloat16* B, float beta, BFloat16* C) {
  GemmImpl(ctx, DataType::BFLOAT16, trans_a, trans_b, M, N, K, alpha, A, Ld(trans_a, M, K), B,
           Ld(trans_b, K, N), beta, C, std::max<int64_t>(1, N));
}

void GemmEx(CUDAContext* ctx, math::Trans trans_a, math::Trans trans_b, int64_t M, int64_t N,
            int64_t K, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
            float beta, float* C, int64_t ldc) {
  GemmImpl(ctx, DataType::FLOAT, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void GemmEx(CUDAContext* ctx, math::Trans trans_a, math::Trans trans_b, int64_t M, int64_t N,
            int64_t K, float alpha, const Half* A, int64_t lda, const Half* B, int64_t ldb,
            float beta, Half* C, int64_t ldc) {
  GemmImpl(ctx, DataType::FLOAT16, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void GemmEx(CUDAContext* ctx, math::Trans trans_a, math::Trans trans_b, int64_t M, int64_t N,
            int64_t K, float alpha, const BFloat16* A, int64_t lda, const BFloat16* B,
            int64_t ldb, float beta, BFloat16* C, int64_t ldc) {
  GemmImpl(ctx, DataType::BFLOAT16, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C,
           ldc);
}

}  // namespace gpu
}  // namespace halfcaf
