// Element-wise loops over bfloat16 tensors as 16-float AVX-512F vectors (core/bfloat16_avx512.h),
// with the results of the ops' scalar bit-pattern loops bit for bit; the library's own loops are
// built for baseline x86-64, whose narrow vectors spend more time converting bfloat16 than the
// memory takes. Each does the leading n / 16 * 16 elements (none without AVX-512F) and returns
// how many it did; the caller's loops do the rest.
#pragma once

#include <cstddef>
#include <cstdint>

namespace halfcaf {

// Turns the vectors off (tests run the scalar loops on an AVX-512F CPU) or back on; returns the
// previous setting. On by default.
bool UseBFloat16Vectors(bool on);

// c = bfloat16(ReluNaN(a + b)): Add with fuse_relu. c may be a or b.
int64_t AddReluBFloat16Vectors(const uint16_t* a, const uint16_t* b, uint16_t* c, int64_t n);

// ReluGradient of bfloat16 Y and m >= 1 dYs: s = the dYs' sum in float in input order rounded to
// bfloat16 (as Sum rounds it; one dY is itself), dx = GatedGradient(y > 0, y, s) with NaNs
// quieted. dx may be a dY.
int64_t ReluGradientBFloat16Vectors(const uint16_t* y, const uint16_t* const* dys, size_t m,
                                    uint16_t* dx, int64_t n);

}  // namespace halfcaf
