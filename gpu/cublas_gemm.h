// GEMM on CUDA through cublasGemmEx, row-major like core/math.h (operands are swapped for
// cuBLAS's column-major layout).
//   float16 data: FP16 in/out, FP32 accumulation (CUBLAS_COMPUTE_32F) on tensor cores (the
//                 "Volta path"); reductions are kept in FP32 as well.
//   bfloat16 data: the same with BF16 in/out (CUDA_R_16BF): BF16 tensor ops need compute
//                 capability 8.0 (Ampere) or newer; older GPUs get an error naming the device.
//   float data:   CUBLAS_COMPUTE_32F_PEDANTIC: real FP32 math, no TF32 and no tensor cores (the
//                 "Pascal path"), whatever the handle's math mode or the environment says.
// alpha and beta are host floats. Dimensions must fit cuBLAS's 32-bit ints. K == 0 gives
// C = beta * C for beta 0 (zeros, whatever C held) or 1 (unchanged), without calling cuBLAS.
#pragma once

#include <cublas_v2.h>

#include <cstdint>

#include "core/bfloat16.h"
#include "core/half.h"
#include "core/math.h"
#include "core/types.h"

namespace halfcaf {

class CUDAContext;

namespace gpu {

// The compute type and algorithm the wrapper uses for data of type `t` (float, float16 or
// bfloat16).
cublasComputeType_t GemmComputeType(DataType t);
cublasGemmAlgo_t GemmAlgorithm(DataType t);
const char* CublasComputeTypeName(cublasComputeType_t t);

// C = alpha * op(A) * op(B) + beta * C with op(A) M x K, op(B) K x N, C M x N, all row-major and
// packed.
void Gemm(CUDAContext* ctx, math::Trans trans_a, math::Trans trans_b, int64_t M, int64_t N,
          int64_t K, float alpha, const float* A, const float* B, float beta, float* C);
void Gemm(CUDAContext* ctx, math::Trans trans_a, math::Trans trans_b, int64_t M, int64_t N,
          int64_t K, float alpha, const Half* A, const Half* B, float beta, Half* C);
void Gemm(CUDAContext* ctx, math::Trans trans_a, math::Trans trans_b, int64_t M, int64_t N,
          int64_t K, float alpha, const BFloat16* A, const BFloat16* B, float beta, BFloat16* C);

// Same with explicit (row-major) leading dimensions.
void GemmEx(CUDAContext* ctx, math::Trans trans_a, math::Trans trans_b, int64_t M, int64_t N,
            int64_t K, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
            float beta, float* C, int64_t ldc);
void GemmEx(CUDAContext* ctx, math::Trans trans_a, math::Trans trans_b, int64_t M, int64_t N,
            int64_t K, float alpha, const Half* A, int64_t lda, const Half* B, int64_t ldb,
            float beta, Half* C, int64_t ldc);
void GemmEx(CUDAContext* ctx, math::Trans trans_a, math::Trans trans_b, int64_t M, int64_t N,
            int64_t K, float alpha, const BFloat16* A, int64_t lda, const BFloat16* B,
            int64_t ldb, float beta, BFloat16* C, int64_t ldc);

}  // namespace gpu
}  // namespace halfcaf
