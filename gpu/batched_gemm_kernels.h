// Strided batched GEMM on CUDA (cublasGemmStridedBatchedEx) with the precision rules of
// gpu/cublas_gemm.h: float16 data in FP16 with FP32 accumulation on tensor cores, float data in
// real FP32 (no TF32). Row-major like core/math.h.
#pragma once

#include <cstdint>

#include "core/math.h"
#include "core/types.h"

namespace halfcaf {

class CUDAContext;

namespace gpu {

// For i < batch: C_i = alpha * op(A_i) op(B_i) + beta * C_i, op(A_i) M x K, op(B_i) K x N, C_i
// M x N, all packed, with A_i = A + i * stride_a elements (likewise B, C). A stride may be 0 (one
// matrix for every product). dtype float or float16; K > 0.
void GemmStridedBatched(CUDAContext* ctx, DataType dtype, math::Trans trans_a, math::Trans trans_b,
                        int64_t M, int64_t N, int64_t K, float alpha, const void* A,
                        int64_t stride_a, const void* B, int64_t stride_b, float beta, void* C,
                        int64_t stride_c, int64_t batch);

}  // namespace gpu
}  // namespace halfcaf
