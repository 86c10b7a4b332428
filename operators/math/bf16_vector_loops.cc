#include "operators/math/bf16_vector_loops.h"

#include "core/bfloat16.h"
#include "core/bfloat16_avx512.h"
#include "core/vector_width.h"

namespace halfcaf {

namespace {

#ifdef HALFCAF_BF16_AVX512

bool VectorsRun() { return LoopVectorWidth() == VectorWidth::kAvx512; }

__attribute__((target("avx512f"))) void AddRelu16(const uint16_t* a, const uint16_t* b, uint16_t* c,
                                                  int64_t n) {
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 s = _mm512_add_ps(bf16_avx512::Load(a + i), bf16_avx512::Load(b + i));
    // ReluNaN: 0 where s <= 0 (not where s is NaN).
    bf16_avx512::Store(c + i, _mm512_mask_mov_ps(s, _mm512_cmp_ps_mask(s, zero, _CMP_LE_OQ), zero));
  }
}

__attribute__((target("avx512f"))) void ReluGradient16(const uint16_t* y,
                                                       const uint16_t* const* dys, size_t m,
                                                       uint16_t* dx, int64_t off, int64_t n) {
  for (int64_t i = off; i < off + n; i += 16) {
    // The sum is rounded once, at the store: the gate passes it, y or 0 whole, and is NaN where
    // the sum is, rounded or not.
    __m512 s = bf16_avx512::Load(dys[0] + i);
    for (size_t k = 1; k < m; ++k) s = _mm512_add_ps(s, bf16_avx512::Load(dys[k] + i));
    bf16_avx512::Store(dx + i, bf16_avx512::Gated(bf16_avx512::Load(y + i), s));
  }
}

__attribute__((target("avx512f"))) void MaxWindow16(const uint16_t* x, int64_t W, int64_t C,
                                                    int64_t h0, int64_t h1, int64_t dh, int64_t w0,
                                                    int64_t w1, int64_t dw, const float* dy,
                                                    float* dx) {
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const int32_t first = static_cast<int32_t>(h0 * W + w0);
  for (int64_t c0 = 0; c0 < C; c0 += 16) {
    __m512 best = bf16_avx512::Load(x + first * C + c0);
    __m512i at = _mm512_set1_epi32(first);
    for (int64_t h = h0; h < h1; h += dh) {
      for (int64_t w = w0; w < w1; w += dw) {
        const int32_t p = static_cast<int32_t>(h * W + w);
        const __m512 v = bf16_avx512::Load(x + p * C + c0);
        // BeatsMax(v, best): larger, or a NaN over a number.
        const __mmask16 take =
            _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) |
            (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) & _mm512_cmp_ps_mask(best, best, _CMP_ORD_Q));
        best = _mm512_mask_mov_ps(best, take, v);
        at = _mm512_mask_mov_epi32(at, take, _mm512_set1_epi32(p));
      }
    }
    // Each lane its own channel, so the 16 addresses differ.
    const __m512i index =
        _mm512_add_epi32(_mm512_mullo_epi32(at, _mm512_set1_epi32(static_cast<int32_t>(C))),
                         _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(c0)), lane));
    // The masked gather, all lanes set: GCC 12 warns of an uninitialized source in the plain one.
    const __m512 old = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), 0xffff, index, dx, 4);
    const __m512 sum = _mm512_add_ps(old, _mm512_loadu_ps(dy + c0));
    _mm512_i32scatter_ps(dx, index, sum, 4);
  }
}

#endif

}  // namespace

int64_t AddReluBFloat16Vectors(const uint16_t* a, const uint16_t* b, uint16_t* c, int64_t n) {
#ifdef HALFCAF_BF16_AVX512
  if (VectorsRun()) {
    const int64_t done = n / 16 * 16;
    AddRelu16(a, b, c, done);
    return done;
  }
#endif
  return 0;
}

int64_t ReluGradientBFloat16Vectors(const uint16_t* y, const uint16_t* const* dys, size_t m,
                                    uint16_t* dx, int64_t off, int64_t n) {
#ifdef HALFCAF_BF16_AVX512
  if (VectorsRun()) {
    const int64_t done = n / 16 * 16;
    ReluGradient16(y, dys, m, dx, off, done);
    return done;
  }
#endif
  return 0;
}

bool MaxPoolBFloat16VectorsRun(int64_t C) {
#ifdef HALFCAF_BF16_AVX512
  return C % 16 == 0 && VectorsRun();
#else
  return false;
#endif
}

void MaxPoolWindowGradientBFloat16(const uint16_t* x, int64_t W, int64_t C, int64_t h0, int64_t h1,
                                   int64_t dh, int64_t w0, int64_t w1, int64_t dw, const float* dy,
                                   float* dx) {
#ifdef HALFCAF_BF16_AVX512
  MaxWindow16(x, W, C, h0, h1, dh, w0, w1, dw, dy, dx);
#endif
}

}  // namespace halfcaf
