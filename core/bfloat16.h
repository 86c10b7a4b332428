// BFloat16: bfloat16 storage, the top 16 bits of an IEEE binary32 (1 sign, 8 exponent, 7 mantissa
// bits), bit-compatible with CUDA's __nv_bfloat16 and oneDNN's bf16. It has float's range and
// 8 significant bits; arithmetic happens in float, as for Half.
//
// float -> bfloat16 rounds to nearest even, subnormals included (no flush to zero); values that
// round past the largest finite bfloat16 become inf; a NaN stays NaN with its sign and its top 7
// payload bits, made quiet (mantissa bit 6 set). bfloat16 -> float is exact (the 16 bits move to
// the top of the float), so every non-NaN bfloat16 survives bfloat16 -> float -> bfloat16, and a
// NaN comes back with the quiet bit set (a quiet NaN exactly).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace halfcaf {

inline uint16_t FloatToBFloat16Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  // Adding 0x7fff (+1 when the kept part is odd) carries into bit 16 exactly when the dropped
  // 16 bits are above half, or at half with an odd kept part; a carry out of the mantissa moves
  // to the next binade, and out of the largest finite value to inf. A select rather than a branch
  // for NaN, so that loops over this vectorize.
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

inline float BFloat16BitsToFloat(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct BFloat16 {
  uint16_t x;

  BFloat16() = default;
  explicit BFloat16(float f) : x(FloatToBFloat16Bits(f)) {}
  operator float() const { return BFloat16BitsToFloat(x); }
  static BFloat16 FromBits(uint16_t bits) {
    BFloat16 b;
    b.x = bits;
    return b;
  }
};
static_assert(sizeof(BFloat16) == 2, "BFloat16 must be 2 bytes");

// Bulk conversions, bit-identical to the scalar ones above on every path.
void FloatToBFloat16Array(const float* src, BFloat16* dst, size_t n);
void BFloat16ToFloatArray(const BFloat16* src, float* dst, size_t n);

// The conversion loops. kScalar is the reference and runs everywhere; kAvx2 uses integer AVX2;
// kAvx512Bf16 converts with AVX512_BF16's vcvtneps2bf16 (which flushes subnormal inputs to zero,
// so a block holding one is redone by the scalar code). The bulk conversions above take the
// fastest path this CPU has; tests run every available path against kScalar.
enum class BFloat16Path { kScalar, kAvx2, kAvx512Bf16 };
bool CpuHasAvx2();
// AVX512F, with the OS saving the ZMM and opmask state.
bool CpuHasAvx512F();
// AVX512F + AVX512_BF16, with the OS saving the ZMM and opmask state.
bool CpuHasAvx512Bf16();
bool BFloat16PathAvailable(BFloat16Path path);
// Throws unless BFloat16PathAvailable(path).
void FloatToBFloat16ArrayWith(BFloat16Path path, const float* src, BFloat16* dst, size_t n);
void BFloat16ToFloatArrayWith(BFloat16Path path, const BFloat16* src, float* dst, size_t n);

}  // namespace halfcaf
