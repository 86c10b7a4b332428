// bfloat16 matrix products on oneDNN's matmul (AMX or AVX512_BF16 kernels, FP32 accumulation, one
// rounding out), for the operators that otherwise convert bfloat16 to float for BLAS (FC,
// FCTransposed and their gradients). Defined in gemm_dnnl.cc, built only with oneDNN
// (HALFCAF_WITH_DNNL); callers guard their calls with that macro.
#pragma once

#include <cstdint>

#include "core/bfloat16.h"

namespace halfcaf {

// C (M x N, row-major) = op(A) op(B) [+ bias on every row], op(A) M x K, op(B) K x N. A is stored
// row-major M x K, or K x M when trans_a; B is stored K x N, or N x K when trans_b. `bias`: N
// floats or null. Returns false, writing nothing, when the BF16 kernels are off
// (DnnlBFloat16Enabled in dnnl_util.h), a dimension is 0, or oneDNN has no fast kernel for the
// shape; the caller then computes in float. Primitives are cached per shape and thread.
bool DnnlBFloat16Gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                      const BFloat16* a, const BFloat16* b, const float* bias, BFloat16* c);

}  // namespace halfcaf
