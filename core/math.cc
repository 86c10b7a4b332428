#include "core/math.h"

#include <algorithm>

#include <cblas.h>
#ifdef HALFCAF_WITH_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

namespace halfcaf {
namespace math {

namespace {
CBLAS_TRANSPOSE ToCblas(Trans t) { return t == Trans::kNo ? CblasNoTrans : CblasTrans; }
}  // namespace

void GemmEx(Trans trans_a, Trans trans_b, int64_t M, int64_t N, int64_t K, float alpha,
            const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
            int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    // BLAS leaves C untouched for K == 0 only when beta == 1; make beta explicit.
    for (int64_t i = 0; i < M; ++i) {
      float* row = C + i * ldc;
      for (int64_t j = 0; j < N; ++j) row[j] = beta == 0.f ? 0.f : beta * row[j];
    }
    return;
  }
#ifdef HALFCAF_WITH_DNNL
  // With oneDNN built in, its GEMM runs on the same OpenMP threads as the convolutions and the
  // parallel loops; mixing OpenBLAS's own thread pool with spinning OpenMP threads oversubscribes
  // the cores (measured: up to 5x slower FP16-on-CPU training).
  const dnnl_status_t st =
      dnnl_sgemm(trans_a == Trans::kNo ? 'N' : 'T', trans_b == Trans::kNo ? 'N' : 'T', M, N, K,
                 alpha, A, lda, B, ldb, beta, C, ldc);
  if (st == dnnl_success) return;
#endif
  cblas_sgemm(CblasRowMajor, ToCblas(trans_a), ToCblas(trans_b), static_cast<int>(M),
              static_cast<int>(N), static_cast<int>(K), alpha, A, static_cast<int>(lda), B,
              static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
}

void Gemm(Trans trans_a, Trans trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, const float* B, float beta, float* C) {
  const int64_t lda = trans_a == Trans::kNo ? K : M;
  const int64_t ldb = trans_b == Trans::kNo ? N : K;
  GemmEx(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, N);
}

void Gemv(Trans trans_a, int64_t M, int64_t N, float alpha, const float* A, const float* x,
          float beta, float* y) {
  const int64_t out = trans_a == Trans::kNo ? M : N;
  if (out == 0) return;
  if (M == 0 || N == 0) {
    for (int64_t i = 0; i < out; ++i) y[i] = beta == 0.f ? 0.f : beta * y[i];
    return;
  }
  cblas_sgemv(CblasRowMajor, ToCblas(trans_a), static_cast<int>(M), static_cast<int>(N), alpha, A,
              static_cast<int>(N), x, 1, beta, y, 1);
}

void Axpy(int64_t n, float alpha, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void Set(int64_t n, float value, float* y) { std::fill(y, y + n, value); }

void SetBlasThreads(int n) {
  if (n <= 0) return;
  openblas_set_num_threads(n);
#ifdef _OPENMP
  omp_set_num_threads(n);  // oneDNN and the parallel CPU loops
#endif
}

int CpuLoopThreads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace math
}  // namespace halfcaf
