#include "core/half.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace halfcaf {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(HalfTest, AllBitPatternsRoundTrip) {
  for (uint32_t b = 0; b < 65536; ++b) {
    uint16_t h = static_cast<uint16_t>(b);
    float f = HalfBitsToFloat(h);
    uint16_t back = FloatToHalfBits(f);
    bool is_nan = ((h & 0x7c00) == 0x7c00) && (h & 0x3ff);
    if (is_nan) {
      EXPECT_TRUE(std::isnan(f)) << b;
      EXPECT_EQ(back & 0x7c00, 0x7c00) << b;
      EXPECT_NE(back & 0x3ff, 0) << b;
      EXPECT_EQ(back & 0x8000, h & 0x8000) << b;
    } else {
      EXPECT_EQ(back, h) << "bit pattern " << b;
    }
  }
}

TEST(HalfTest, KnownValues) {
  EXPECT_EQ(FloatToHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalfBits(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalfBits(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalfBits(65520.0f), 0x7c00);  // halfway to 65536 rounds (to even) to inf
  EXPECT_EQ(FloatToHalfBits(65519.99f), 0x7bff);
  EXPECT_EQ(FloatToHalfBits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(FloatToHalfBits(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(FloatToHalfBits(-0.0f), 0x8000);
  EXPECT_FLOAT_EQ(HalfBitsToFloat(0x3555), 0.333251953125f);
}

// Ties go to the even neighbour, in the normal and the subnormal ranges.
TEST(HalfTest, RoundsTiesToEven) {
  // 1 + 2^-11 is halfway between 1 (0x3c00, even) and 1 + 2^-10 (0x3c01): rounds down.
  EXPECT_EQ(FloatToHalfBits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3*2^-11 is halfway between 0x3c01 (odd) and 0x3c02 (even): rounds up.
  EXPECT_EQ(FloatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Just above a tie rounds up; just below rounds down.
  EXPECT_EQ(FloatToHalfBits(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3c01);
  EXPECT_EQ(FloatToHalfBits(std::nextafter(1.0f + 3 * std::ldexp(1.0f, -11), 0.0f)), 0x3c01);
  // Subnormals: 2^-25 is halfway between 0 and 2^-24: to even (0). 3*2^-25 -> 2*2^-24.
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(FloatToHalfBits(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(FloatToHalfBits(5 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(FloatToHalfBits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  // Every tie between consecutive halves, exhaustively over positive finite halves.
  for (uint16_t h = 0; h < 0x7bff; ++h) {
    float lo = HalfBitsToFloat(h), hi = HalfBitsToFloat(h + 1);
    float mid = lo + (hi - lo) / 2;  // exact in float
    uint16_t expect = (h & 1) ? h + 1 : h;
    ASSERT_EQ(FloatToHalfBits(mid), expect) << "tie above half " << h;
  }
}

// The F16C fast path and the software path agree bit for bit.
TEST(HalfTest, BulkConversionMatchesScalar) {
  std::vector<Half> halves(65536);
  for (uint32_t b = 0; b < 65536; ++b) halves[b] = Half::FromBits(static_cast<uint16_t>(b));
  std::vector<float> fast(65536), ref(65536);
  HalfToFloatArray(halves.data(), fast.data(), halves.size());
  HalfToFloatArrayReference(halves.data(), ref.data(), halves.size());
  for (size_t i = 0; i < fast.size(); ++i) ASSERT_EQ(Bits(fast[i]), Bits(ref[i])) << i;

  std::mt19937 rng(7);
  std::vector<float> floats;
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = rng();
    float f;
    std::memcpy(&f, &u, 4);
    floats.push_back(f);
  }
  for (uint16_t h = 0; h < 0x7c00; h += 7) {  // ties, too
    float lo = HalfBitsToFloat(h), hi = HalfBitsToFloat(h + 1);
    floats.push_back(lo + (hi - lo) / 2);
  }
  std::vector<Half> hf(floats.size()), hr(floats.size());
  FloatToHalfArray(floats.data(), hf.data(), floats.size());
  FloatToHalfArrayReference(floats.data(), hr.data(), floats.size());
  for (size_t i = 0; i < floats.size(); ++i) {
    ASSERT_EQ(hf[i].x, hr[i].x) << "float bits " << Bits(floats[i]);
  }
}

}  // namespace
}  // namespace halfcaf
