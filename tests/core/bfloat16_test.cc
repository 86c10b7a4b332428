#include "core/bfloat16.h"

#include <cfloat>
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

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// float -> bfloat16 by arithmetic rather than bit manipulation, for non-NaN f: scale f so that the
// bfloat16 spacing at its binade (8 significant bits, never finer than the subnormal spacing
// 2^-133) is 1, round with the FPU's nearest-even, scale back; at or past 2^128 it is inf.
uint16_t ReferenceBits(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isinf(f)) return sign | 0x7f80;
  int e = 0;
  std::frexp(static_cast<double>(f), &e);
  const int q = std::max(e - 8, -133);
  const double r = std::ldexp(std::nearbyint(std::ldexp(static_cast<double>(f), -q)), q);
  if (std::fabs(r) >= std::ldexp(1.0, 128)) return sign | 0x7f80;
  const uint32_t u = Bits(static_cast<float>(r));  // exact: r has at most 8 significant bits
  EXPECT_EQ(u & 0xffff, 0u) << "reference for float bits " << Bits(f);
  return static_cast<uint16_t>(u >> 16);
}

bool IsNanBits(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

// bfloat16 -> float is exact for every pattern (NaN payloads included); back to bfloat16 gives the
// same pattern, except that a NaN comes back quiet (bit 6 set) with its sign and payload.
TEST(BFloat16Test, AllBitPatternsRoundTrip) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    const float f = BFloat16BitsToFloat(h);
    ASSERT_EQ(Bits(f), b << 16) << b;
    const uint16_t back = FloatToBFloat16Bits(f);
    if (IsNanBits(h)) {
      ASSERT_TRUE(std::isnan(f)) << b;
      ASSERT_EQ(back, h | 0x40) << "NaN pattern " << b;
    } else {
      ASSERT_EQ(back, h) << "bit pattern " << b;
    }
  }
}

TEST(BFloat16Test, KnownValues) {
  EXPECT_EQ(FloatToBFloat16Bits(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16Bits(-2.0f), 0xc000);
  EXPECT_EQ(FloatToBFloat16Bits(3.14159265f), 0x4049);  // 3.140625
  EXPECT_EQ(FloatToBFloat16Bits(0.0f), 0x0000);
  EXPECT_EQ(FloatToBFloat16Bits(-0.0f), 0x8000);
  EXPECT_EQ(FloatToBFloat16Bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(FloatToBFloat16Bits(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(FloatToBFloat16Bits(std::ldexp(1.0f, -126)), 0x0080);  // smallest normal
  EXPECT_EQ(FloatToBFloat16Bits(std::ldexp(1.0f, -133)), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToBFloat16Bits(std::ldexp(255.0f, 120)), 0x7f7f);  // largest finite
  EXPECT_EQ(BFloat16BitsToFloat(0x7f7f), std::ldexp(255.0f, 120));
  EXPECT_EQ(BFloat16BitsToFloat(0x3eab), 0.333984375f);
  // NaNs stay NaN and become quiet; a signalling NaN whose payload is all in the dropped bits
  // must not turn into inf.
  EXPECT_EQ(FloatToBFloat16Bits(FromBits(0x7fc00000)), 0x7fc0);
  EXPECT_EQ(FloatToBFloat16Bits(FromBits(0x7f800001)), 0x7fc0);
  EXPECT_EQ(FloatToBFloat16Bits(FromBits(0xffa5ffff)), 0xffe5);
  EXPECT_EQ(FloatToBFloat16Bits(std::numeric_limits<float>::quiet_NaN()) & 0x7fc0, 0x7fc0);
  const BFloat16 b(1.5f);
  EXPECT_EQ(b.x, 0x3fc0);
  EXPECT_EQ(static_cast<float>(b), 1.5f);
  EXPECT_EQ(BFloat16::FromBits(0xbf80).x, 0xbf80);
  EXPECT_EQ(static_cast<float>(BFloat16::FromBits(0xbf80)), -1.0f);
}

// Ties go to the even neighbour in every binade, subnormals and the top of the range included,
// for both signs: exhaustively over consecutive finite bfloat16 pairs.
TEST(BFloat16Test, RoundsTiesToEven) {
  for (uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
    for (uint16_t h = 0; h < 0x7f80; ++h) {
      const uint16_t lo = sign | h, hi = sign | static_cast<uint16_t>(h + 1);
      // The midpoint has 9 significant bits: exact in float. Past 0x7f7f it is 0x7f7f8000.
      const double mid_d = (static_cast<double>(BFloat16BitsToFloat(lo)) +
                            (h + 1 == 0x7f80 ? (sign ? -1 : 1) * std::ldexp(1.0, 128)
                                             : static_cast<double>(BFloat16BitsToFloat(hi)))) /
                           2;
      const float mid = static_cast<float>(mid_d);
      ASSERT_EQ(static_cast<double>(mid), mid_d) << h;
      ASSERT_EQ(FloatToBFloat16Bits(mid), (h & 1) ? hi : lo) << "tie above " << lo;
      ASSERT_EQ(FloatToBFloat16Bits(std::nextafter(mid, 0.0f)), lo) << "below tie above " << lo;
      ASSERT_EQ(FloatToBFloat16Bits(std::nextafter(mid, sign ? -INFINITY : INFINITY)), hi)
          << "above tie above " << lo;
    }
  }
  // Named cases of the above: the subnormal ties, and the tie at the top going to inf.
  EXPECT_EQ(FloatToBFloat16Bits(std::ldexp(1.0f, -134)), 0x0000);      // 0 is even
  EXPECT_EQ(FloatToBFloat16Bits(3 * std::ldexp(1.0f, -134)), 0x0002);  // 0x0001 is odd
  EXPECT_EQ(FloatToBFloat16Bits(-5 * std::ldexp(1.0f, -134)), 0x8002);
  EXPECT_EQ(FloatToBFloat16Bits(FromBits(0x007fffff)), 0x0080);  // largest float subnormal
  EXPECT_EQ(FloatToBFloat16Bits(FromBits(0x00000001)), 0x0000);  // smallest float subnormal
  EXPECT_EQ(FloatToBFloat16Bits(FromBits(0x7f7f8000)), 0x7f80);  // tie above 0x7f7f (odd): inf
  EXPECT_EQ(FloatToBFloat16Bits(FromBits(0x7f7f7fff)), 0x7f7f);
  EXPECT_EQ(FloatToBFloat16Bits(FLT_MAX), 0x7f80);
  EXPECT_EQ(FloatToBFloat16Bits(-FLT_MAX), 0xff80);
  EXPECT_EQ(FloatToBFloat16Bits(FromBits(0x3f808000)), 0x3f80);  // tie above 1 (even): down
  EXPECT_EQ(FloatToBFloat16Bits(FromBits(0x3f818000)), 0x3f82);  // tie above 0x3f81: up
}

// Random floats: bit patterns drawn uniformly (every binade, subnormals, NaNs) and floats near
// bfloat16 values, against the arithmetic reference.
std::vector<float> RandomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t u = rng();
    if (i % 4 == 1) u = (u & 0xffff0000u) | 0x8000u;              // an exact tie
    if (i % 4 == 2) u = (u & 0xffff0000u) | (0x8000u + (u & 1) * 2 - 1);  // one ulp off a tie
    if (i % 8 == 3) u &= 0x807fffffu;                             // a subnormal
    out.push_back(FromBits(u));
  }
  return out;
}

TEST(BFloat16Test, MatchesArithmeticReference) {
  const std::vector<float> floats = RandomFloats(2000000, 17);
  int64_t nans = 0;
  for (float f : floats) {
    const uint16_t got = FloatToBFloat16Bits(f);
    if (std::isnan(f)) {
      ++nans;
      ASSERT_EQ(got, static_cast<uint16_t>((Bits(f) >> 16) | 0x40)) << Bits(f);
      continue;
    }
    ASSERT_EQ(got, ReferenceBits(f)) << "float bits " << std::hex << Bits(f);
  }
  EXPECT_GT(nans, 0);  // the draw covers NaNs too
}

// Every vector path gives the scalar result bit for bit, at every length and alignment.
TEST(BFloat16Test, ArrayPathsMatchScalar) {
  std::vector<float> floats = RandomFloats(300000, 5);
  // Blocks with one subnormal among normal values (the AVX512_BF16 path redoes such blocks).
  for (int k = 0; k < 64; ++k) {
    for (int j = 0; j < 16; ++j) floats.push_back(j == k % 16 ? FromBits(0x00012345u + k) : 1.5f);
  }
  std::vector<BFloat16> all(65536);
  for (uint32_t b = 0; b < 65536; ++b) all[b] = BFloat16::FromBits(static_cast<uint16_t>(b));

  int paths = 0;
  for (BFloat16Path path :
       {BFloat16Path::kScalar, BFloat16Path::kAvx2, BFloat16Path::kAvx512Bf16}) {
    if (!BFloat16PathAvailable(path)) {
      EXPECT_THROW(FloatToBFloat16ArrayWith(path, floats.data(), nullptr, 0), std::exception);
      continue;
    }
    ++paths;
    SCOPED_TRACE("path " + std::to_string(static_cast<int>(path)));
    for (size_t offset : {size_t{0}, size_t{1}, size_t{7}}) {
      const size_t n = floats.size() - offset - (offset ? 13 : 0);
      std::vector<BFloat16> got(n);
      FloatToBFloat16ArrayWith(path, floats.data() + offset, got.data(), n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(got[i].x, FloatToBFloat16Bits(floats[offset + i]))
            << "float bits " << std::hex << Bits(floats[offset + i]);
      }
      const size_t m = all.size() - offset;
      std::vector<float> back(m);
      BFloat16ToFloatArrayWith(path, all.data() + offset, back.data(), m);
      for (size_t i = 0; i < m; ++i) ASSERT_EQ(Bits(back[i]), (offset + i) << 16) << i;
    }
  }
  RecordProperty("vector_paths_run", paths - 1);  // 2 on a CPU with AVX512_BF16
  std::vector<BFloat16> best(floats.size());
  FloatToBFloat16Array(floats.data(), best.data(), floats.size());
  for (size_t i = 0; i < floats.size(); ++i) ASSERT_EQ(best[i].x, FloatToBFloat16Bits(floats[i]));
  std::vector<float> back(all.size());
  BFloat16ToFloatArray(all.data(), back.data(), all.size());
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(Bits(back[i]), i << 16);
}

}  // namespace
}  // namespace halfcaf
