// core/scratch.h: buffers handed out inside a scope do not overlap, go back to the pool when it
// closes, nest, and are reused by size (the pool holds about the most one operator asks for at
// once, whatever order its requests come in).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/scratch.h"

namespace halfcaf {
namespace {

constexpr size_t kKiB = 1024;

bool Overlap(const void* a, size_t na, const void* b, size_t nb) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + nb && y < x + na;
}

TEST(ScratchTest, RequestsInOneScopeAreDistinctAndAligned) {
  ReleaseScratch();
  std::vector<float> fb;
  ScratchScope scope;
  void* a = ScratchBytes(100 * kKiB, &fb);
  void* b = ScratchBytes(3 * kKiB, &fb);
  void* c = ScratchBytes(100 * kKiB, &fb);
  EXPECT_FALSE(Overlap(a, 100 * kKiB, b, 3 * kKiB));
  EXPECT_FALSE(Overlap(a, 100 * kKiB, c, 100 * kKiB));
  EXPECT_FALSE(Overlap(b, 3 * kKiB, c, 100 * kKiB));
  for (void* p : {a, b, c}) EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  std::memset(a, 1, 100 * kKiB);
  std::memset(b, 2, 3 * kKiB);
  std::memset(c, 3, 100 * kKiB);
  EXPECT_EQ(static_cast<unsigned char*>(a)[100 * kKiB - 1], 1);
  EXPECT_EQ(static_cast<unsigned char*>(b)[0], 2);
  EXPECT_TRUE(fb.empty());  // inside a scope the fallback is not used
}

TEST(ScratchTest, OutsideAnyScopeTheFallbackHoldsIt) {
  std::vector<float> fb;
  void* p = ScratchBytes(10, &fb);
  EXPECT_EQ(p, fb.data());
  EXPECT_GE(fb.size() * sizeof(float), 10u);
}

TEST(ScratchTest, ReusedBySizeWhateverTheOrderOfRequests) {
  // Two "operators": one asks big-then-small, the other small-then-big. A pool indexed by
  // request position would hold two big buffers; by size, one big and one small.
  ReleaseScratch();
  const size_t before = ScratchBytesHeld();
  std::vector<float> fb;
  for (int round = 0; round < 3; ++round) {
    {
      ScratchScope op;
      ScratchBytes(512 * kKiB, &fb);
      ScratchBytes(4 * kKiB, &fb);
    }
    {
      ScratchScope op;
      ScratchBytes(4 * kKiB, &fb);
      ScratchBytes(512 * kKiB, &fb);
    }
  }
  EXPECT_LE(ScratchBytesHeld() - before, (512 + 4) * kKiB + 128);
  ReleaseScratch();
  EXPECT_EQ(ScratchBytesHeld(), before);
}

TEST(ScratchTest, NestedScopesGiveBackOnlyTheirOwn) {
  ReleaseScratch();
  std::vector<float> fb;
  ScratchScope outer;
  void* a = ScratchBytes(64 * kKiB, &fb);
  void* inner_first = nullptr;
  {
    ScratchScope inner;
    inner_first = ScratchBytes(64 * kKiB, &fb);
    EXPECT_FALSE(Overlap(a, 64 * kKiB, inner_first, 64 * kKiB));
  }
  // The inner buffer is free again and fits: reused; `a` is still held by the outer scope.
  void* again = ScratchBytes(64 * kKiB, &fb);
  EXPECT_EQ(again, inner_first);
  EXPECT_FALSE(Overlap(a, 64 * kKiB, again, 64 * kKiB));
}

TEST(ScratchTest, ReleaseKeepsWhatARunningOperatorHolds) {
  ReleaseScratch();
  std::vector<float> fb;
  ScratchScope op;
  auto* p = static_cast<unsigned char*>(ScratchBytes(32 * kKiB, &fb));
  std::memset(p, 7, 32 * kKiB);
  ReleaseScratch();
  EXPECT_GE(ScratchBytesHeld(), 32 * kKiB);
  EXPECT_EQ(p[32 * kKiB - 1], 7);
}

}  // namespace
}  // namespace halfcaf
