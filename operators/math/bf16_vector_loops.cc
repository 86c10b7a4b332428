#include "operators/math/bf16_vector_loops.h"

#include <atomic>

#include "core/bfloat16.h"
#include "core/bfloat16_avx512.h"

namespace halfcaf {

namespace {

std::atomic<bool> use_vectors{true};

#ifdef HALFCAF_BF16_AVX512

bool VectorsRun() { return use_vectors.load(std::memory_order_relaxed) && CpuHasAvx512F(); }

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
                                                       uint16_t* dx, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    // The sum is rounded once, at the store: the gate passes it, y or 0 whole, and is NaN where
    // the sum is, rounded or not.
    __m512 s = bf16_avx512::Load(dys[0] + i);
    for (size_t k = 1; k < m; ++k) s = _mm512_add_ps(s, bf16_avx512::Load(dys[k] + i));
    bf16_avx512::Store(dx + i, bf16_avx512::Gated(bf16_avx512::Load(y + i), s));
  }
}

#endif

}  // namespace

bool UseBFloat16Vectors(bool on) { return use_vectors.exchange(on); }

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
                                    uint16_t* dx, int64_t n) {
#ifdef HALFCAF_BF16_AVX512
  if (VectorsRun()) {
    const int64_t done = n / 16 * 16;
    ReluGradient16(y, dys, m, dx, done);
    return done;
  }
#endif
  return 0;
}

}  // namespace halfcaf
