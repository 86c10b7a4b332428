// core/bfloat16.h's conversions as AVX-512F vectors, 16 values at a time, for loops compiled
// with __attribute__((target("avx512f"))) that run where CpuHasAvx512F(): the same results as
// BFloat16BitsToFloat and FloatToBFloat16Bits (subnormals kept, NaN quieted), which the
// AVX512_BF16 conversion instruction does not give (it flushes subnormals).
#pragma once

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define HALFCAF_BF16_AVX512 1
#define HALFCAF_AVX512_INLINE __attribute__((target("avx512f"), always_inline)) inline

namespace halfcaf {
namespace bf16_avx512 {

// p[0..16) widened to floats (exact).
HALFCAF_AVX512_INLINE __m512 Load(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  // The masked forms, all lanes set: GCC 12 warns of an uninitialized source in the plain ones.
  const __m512i u = _mm512_maskz_cvtepu16_epi32(0xffff, h);
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, u, 16));
}

// FloatToBFloat16Bits of each lane, in the lane's low 16 bits.
HALFCAF_AVX512_INLINE __m512i Bits(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i top = _mm512_maskz_srli_epi32(0xffff, u, 16);  // masked: as in Load
  const __m512i bias =
      _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(top, _mm512_set1_epi32(1)));
  const __m512i rounded = _mm512_maskz_srli_epi32(0xffff, _mm512_add_epi32(u, bias), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_blend_epi32(nan, rounded, _mm512_or_si512(top, _mm512_set1_epi32(0x40)));
}

// v rounded to bfloat16, stored at p[0..16).
HALFCAF_AVX512_INLINE void Store(uint16_t* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_maskz_cvtepi32_epi16(0xffff, Bits(v)));
}

// GatedGradient(y > 0, y, dy) (core/nan_math.h) lane by lane: dy where y > 0, else y where y is
// NaN, dy where dy is NaN, 0.
HALFCAF_AVX512_INLINE __m512 Gated(__m512 y, __m512 dy) {
  const __mmask16 take_dy = _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_GT_OQ) |
                            _mm512_cmp_ps_mask(dy, dy, _CMP_UNORD_Q);
  return _mm512_mask_mov_ps(_mm512_maskz_mov_ps(take_dy, dy),
                            _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q), y);
}

}  // namespace bf16_avx512
}  // namespace halfcaf

#endif  // x86
