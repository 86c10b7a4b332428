#include "core/bfloat16.h"

#include "core/enforce.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define HALFCAF_X86 1
#endif

namespace halfcaf {

namespace {

void FloatToBFloat16Scalar(const float* src, BFloat16* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i].x = FloatToBFloat16Bits(src[i]);
}

void BFloat16ToFloatScalar(const BFloat16* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = BFloat16BitsToFloat(src[i].x);
}

#ifdef HALFCAF_X86

// XCR0: the register state the OS saves on a context switch.
uint64_t Xcr0() {
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// AVX with OSXSAVE (CPUID.1:ECX bits 27, 28) and the OS saving the XMM and YMM state.
bool OsSavesYmm() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  if (!((c >> 27) & 1) || !((c >> 28) & 1)) return false;
  return (Xcr0() & 0x6) == 0x6;
}

// The same rounding as FloatToBFloat16Bits, 8 floats at a time.
__attribute__((target("avx2"))) void FloatToBFloat16Avx2(const float* src, BFloat16* dst,
                                                         size_t n) {
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i top = _mm256_srli_epi32(u, 16);
    const __m256i odd = _mm256_and_si256(top, one);
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(bias, odd)), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
    const __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(top, quiet), nan);
    // Every lane is in [0, 0xffff], so the saturating pack keeps it.
    const __m128i packed =
        _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), packed);
  }
  FloatToBFloat16Scalar(src + i, dst + i, n - i);
}

__attribute__((target("avx2"))) void BFloat16ToFloatAvx2(const BFloat16* src, float* dst,
                                                         size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m256i u = _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), u);
  }
  BFloat16ToFloatScalar(src + i, dst + i, n - i);
}

__attribute__((target("avx512f,avx512bf16"))) void FloatToBFloat16Avx512(const float* src,
                                                                        BFloat16* dst, size_t n) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), one = _mm512_set1_epi32(1);
  const __m512i below_normal = _mm512_set1_epi32(0x007fffff);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(src + i);
    const __m256bh h = _mm512_cvtneps_pbh(v);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), reinterpret_cast<const __m256i&>(h));
    // Nonzero subnormals (|bits| - 1 < 0x7fffff) were flushed to zero: redo the block.
    const __m512i mag = _mm512_and_si512(_mm512_castps_si512(v), abs_mask);
    if (_mm512_cmplt_epu32_mask(_mm512_sub_epi32(mag, one), below_normal)) {
      FloatToBFloat16Scalar(src + i, dst + i, 16);
    }
  }
  FloatToBFloat16Scalar(src + i, dst + i, n - i);
}

__attribute__((target("avx512f"))) void BFloat16ToFloatAvx512(const BFloat16* src, float* dst,
                                                              size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m512i u = _mm512_maskz_cvtepu16_epi32(0xffff, b);
    _mm512_storeu_si512(dst + i, _mm512_maskz_slli_epi32(0xffff, u, 16));
  }
  BFloat16ToFloatScalar(src + i, dst + i, n - i);
}

#endif  // HALFCAF_X86

BFloat16Path BestPath() {
  static const BFloat16Path best = CpuHasAvx512Bf16() ? BFloat16Path::kAvx512Bf16
                                   : CpuHasAvx2()     ? BFloat16Path::kAvx2
                                                      : BFloat16Path::kScalar;
  return best;
}

}  // namespace

#ifdef HALFCAF_X86
// CPUID leaf 7 subleaf 0: EBX bit 5 AVX2, bit 16 AVX512F; subleaf 1: EAX bit 5 AVX512_BF16.
// XCR0 bits 5-7: the opmask and ZMM state. Read directly, as for F16C (core/half.cc).
bool CpuHasAvx2() {
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!OsSavesYmm() || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    return ((b >> 5) & 1) != 0;
  }();
  return has;
}

bool CpuHasAvx512F() {
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!OsSavesYmm() || (Xcr0() & 0xe0) != 0xe0) return false;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && ((b >> 16) & 1) != 0;
  }();
  return has;
}

bool CpuHasAvx512Bf16() {
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!CpuHasAvx512F() || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    if (a < 1 || !__get_cpuid_count(7, 1, &a, &b, &c, &d)) return false;
    return ((a >> 5) & 1) != 0;
  }();
  return has;
}
#else
bool CpuHasAvx2() { return false; }
bool CpuHasAvx512F() { return false; }
bool CpuHasAvx512Bf16() { return false; }
#endif

bool BFloat16PathAvailable(BFloat16Path path) {
  switch (path) {
    case BFloat16Path::kScalar: return true;
    case BFloat16Path::kAvx2: return CpuHasAvx2();
    case BFloat16Path::kAvx512Bf16: return CpuHasAvx512Bf16();
  }
  return false;
}

void FloatToBFloat16ArrayWith(BFloat16Path path, const float* src, BFloat16* dst, size_t n) {
  HALFCAF_ENFORCE(BFloat16PathAvailable(path), "this CPU cannot run bfloat16 conversion path ",
                  static_cast<int>(path));
#ifdef HALFCAF_X86
  if (path == BFloat16Path::kAvx512Bf16) return FloatToBFloat16Avx512(src, dst, n);
  if (path == BFloat16Path::kAvx2) return FloatToBFloat16Avx2(src, dst, n);
#endif
  FloatToBFloat16Scalar(src, dst, n);
}

void BFloat16ToFloatArrayWith(BFloat16Path path, const BFloat16* src, float* dst, size_t n) {
  HALFCAF_ENFORCE(BFloat16PathAvailable(path), "this CPU cannot run bfloat16 conversion path ",
                  static_cast<int>(path));
#ifdef HALFCAF_X86
  if (path == BFloat16Path::kAvx512Bf16) return BFloat16ToFloatAvx512(src, dst, n);
  if (path == BFloat16Path::kAvx2) return BFloat16ToFloatAvx2(src, dst, n);
#endif
  BFloat16ToFloatScalar(src, dst, n);
}

void FloatToBFloat16Array(const float* src, BFloat16* dst, size_t n) {
  FloatToBFloat16ArrayWith(BestPath(), src, dst, n);
}

void BFloat16ToFloatArray(const BFloat16* src, float* dst, size_t n) {
  BFloat16ToFloatArrayWith(BestPath(), src, dst, n);
}

}  // namespace halfcaf
