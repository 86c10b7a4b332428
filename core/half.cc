#include "core/half.h"

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define HALFCAF_X86 1
#endif

namespace halfcaf {

namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Shifts m right by s bits, rounding to nearest even.
uint32_t ShiftRoundEven(uint32_t m, int s) {
  if (s >= 32) return 0;
  uint32_t q = m >> s;
  uint32_t rem = m & ((1u << s) - 1);
  uint32_t halfway = 1u << (s - 1);
  if (rem > halfway || (rem == halfway && (q & 1))) ++q;
  return q;
}

}  // namespace

uint16_t FloatToHalfBits(float value) {
  uint32_t f = FloatBits(value);
  uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000);
  f &= 0x7fffffffu;
  if (f >= 0x7f800000u) {  // inf or nan (nan keeps its top payload bits and becomes quiet)
    if (f == 0x7f800000u) return sign | 0x7c00;
    return static_cast<uint16_t>(sign | 0x7e00 | ((f >> 13) & 0x3ff));
  }
  if (f >= 0x477ff000u) return sign | 0x7c00;  // >= 65520 rounds to inf
  if (f < 0x38800000u) {                         // below 2^-14: half subnormal or zero
    if (f < 0x33000000u) return sign;            // <= 2^-25 rounds to zero (tie goes to even 0)
    uint32_t exp = f >> 23;
    uint32_t mant = (f & 0x7fffffu) | 0x800000u;
    return static_cast<uint16_t>(sign | ShiftRoundEven(mant, static_cast<int>(126 - exp)));
  }
  uint32_t h = ((f >> 23) - 112) << 10 | ((f >> 13) & 0x3ff);
  uint32_t rem = f & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float HalfBitsToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    float v = static_cast<float>(mant) * 5.9604644775390625e-8f;  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  if (exp == 31) {  // inf, or nan made quiet (as the F16C instructions do)
    return BitsFloat(sign | 0x7f800000u | (mant ? 0x400000u : 0u) | (mant << 13));
  }
  return BitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

void FloatToHalfArrayReference(const float* src, Half* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i].x = FloatToHalfBits(src[i]);
}

void HalfToFloatArrayReference(const Half* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = HalfBitsToFloat(src[i].x);
}

#ifdef HALFCAF_X86
namespace {

__attribute__((target("avx,f16c"))) void FloatToHalfF16C(const float* src, Half* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(src + i);
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i].x = FloatToHalfBits(src[i]);
}

__attribute__((target("avx,f16c"))) void HalfToFloatF16C(const Half* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = HalfBitsToFloat(src[i].x);
}

}  // namespace

// CPUID leaf 1: F16C (ECX bit 29) and AVX (bit 28), with OSXSAVE (bit 27) and the OS saving
// the YMM state (XCR0 bits 1 and 2). Read directly: not every compiler's __builtin_cpu_supports
// knows "f16c".
bool CpuHasF16C() {
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    const bool f16c = (c >> 29) & 1, avx = (c >> 28) & 1, osxsave = (c >> 27) & 1;
    if (!(f16c && avx && osxsave)) return false;
    unsigned lo = 0, hi = 0;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 0x6) == 0x6;
  }();
  return has;
}

void FloatToHalfArray(const float* src, Half* dst, size_t n) {
  if (CpuHasF16C()) return FloatToHalfF16C(src, dst, n);
  FloatToHalfArrayReference(src, dst, n);
}

void HalfToFloatArray(const Half* src, float* dst, size_t n) {
  if (CpuHasF16C()) return HalfToFloatF16C(src, dst, n);
  HalfToFloatArrayReference(src, dst, n);
}
#else
bool CpuHasF16C() { return false; }
void FloatToHalfArray(const float* src, Half* dst, size_t n) { FloatToHalfArrayReference(src, dst, n); }
void HalfToFloatArray(const Half* src, float* dst, size_t n) { HalfToFloatArrayReference(src, dst, n); }
#endif

}  // namespace halfcaf
