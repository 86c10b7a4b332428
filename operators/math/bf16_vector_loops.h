// Loops over bfloat16 tensors as 16-float AVX-512F vectors (core/bfloat16_avx512.h), with the
// results of the ops' scalar loops bit for bit; the library's own loops are built for baseline
// x86-64, whose narrow vectors spend more time converting bfloat16 than the memory takes. They
// run where core/vector_width.h's LoopVectorWidth() is kAvx512 (tests lower the cap to run the
// scalar loops on an AVX-512F CPU). The
// element-wise ones do the leading n / 16 * 16 elements (none without AVX-512F) and return how
// many they did; the caller's loops do the rest.
#pragma once

#include <cstddef>
#include <cstdint>

namespace halfcaf {

// c = bfloat16(ReluNaN(a + b)): Add with fuse_relu. c may be a or b.
int64_t AddReluBFloat16Vectors(const uint16_t* a, const uint16_t* b, uint16_t* c, int64_t n);

// ReluGradient of bfloat16 Y and m >= 1 dYs over elements [off, off + n) of each: s = the dYs'
// sum in float in input order rounded to bfloat16 (as Sum rounds it; one dY is itself),
// dx = GatedGradient(y > 0, y, s) with NaNs quieted. dx may be a dY.
int64_t ReluGradientBFloat16Vectors(const uint16_t* y, const uint16_t* const* dys, size_t m,
                                    uint16_t* dx, int64_t off, int64_t n);

// True when MaxPoolWindowGradientBFloat16 runs: AVX-512F (and the vectors on), C % 16 == 0.
bool MaxPoolBFloat16VectorsRun(int64_t C);

// One window of a 2-D NHWC max pooling's gradient, C channels 16 at a time: over the taps (h, w),
// h in [h0, h1) step dh, w in [w0, w1) step dw, in scan order, each channel's first maximum
// (BeatsMax: the larger, or the first NaN) of the bfloat16 image x (W columns) gets dy[c] added
// into the float image dx at ((h * W + w) * C + c). (h * W + w) * C must fit in 32 bits.
void MaxPoolWindowGradientBFloat16(const uint16_t* x, int64_t W, int64_t C, int64_t h0, int64_t h1,
                                   int64_t dh, int64_t w0, int64_t w1, int64_t dw, const float* dy,
                                   float* dx);

}  // namespace halfcaf
