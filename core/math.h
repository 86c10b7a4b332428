// CPU math shared by operators: BLAS (OpenBLAS) GEMM/GEMV and a few vector helpers. Matrices are
// row-major.
#pragma once

#include <cstdint>

namespace halfcaf {
namespace math {

enum class Trans { kNo, kYes };

// C = alpha * op(A) * op(B) + beta * C; op(A) is M x K, op(B) is K x N, C is M x N.
void Gemm(Trans trans_a, Trans trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, const float* B, float beta, float* C);
// Same with explicit leading dimensions.
void GemmEx(Trans trans_a, Trans trans_b, int64_t M, int64_t N, int64_t K, float alpha,
            const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
            int64_t ldc);
// y = alpha * op(A) * x + beta * y; A is M x N.
void Gemv(Trans trans_a, int64_t M, int64_t N, float alpha, const float* A, const float* x,
          float beta, float* y);
// y += alpha * x
void Axpy(int64_t n, float alpha, const float* x, float* y);
void Set(int64_t n, float value, float* y);
// CPU threads for BLAS, oneDNN and the parallel loops (0: leave as is).
void SetBlasThreads(int n);
// The parallel loops' thread count (OpenMP's; 1 in a build without OpenMP).
int CpuLoopThreads();

}  // namespace math
}  // namespace halfcaf
