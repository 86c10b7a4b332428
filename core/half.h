// Half: IEEE 754 binary16 storage, bit-compatible with CUDA's __half. Arithmetic happens in float;
// conversions round to nearest even and keep inf/nan. Bulk conversions use F16C when the CPU has it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace halfcaf {

uint16_t FloatToHalfBits(float f);
float HalfBitsToFloat(uint16_t h);

struct Half {
  uint16_t x;

  Half() = default;
  explicit Half(float f) : x(FloatToHalfBits(f)) {}
  operator float() const { return HalfBitsToFloat(x); }
  static Half FromBits(uint16_t bits) {
    Half h;
    h.x = bits;
    return h;
  }
};
static_assert(sizeof(Half) == 2, "Half must be 2 bytes");

// Bulk conversions (F16C fast path when available, identical results to the scalar ones).
void FloatToHalfArray(const float* src, Half* dst, size_t n);
void HalfToFloatArray(const Half* src, float* dst, size_t n);
// Scalar-only versions, for tests that compare against the fast path.
void FloatToHalfArrayReference(const float* src, Half* dst, size_t n);
void HalfToFloatArrayReference(const Half* src, float* dst, size_t n);
bool CpuHasF16C();

}  // namespace halfcaf
