// The vector-width cap of halfcaf's own loops (core/vector_width.h): oneDNN's ISA names map to
// the widths below them, and a cap never takes the loops above what the CPU has.
#include "core/vector_width.h"

#include <gtest/gtest.h>

namespace halfcaf {
namespace {

TEST(VectorWidthTest, OneDnnIsaNamesGiveTheirWidth) {
  for (const char* isa : {"AVX2", "avx2", "AVX2_VNNI", "AVX2_VNNI_2"}) {
    EXPECT_EQ(VectorWidthCapForIsa(isa), VectorWidth::kAvx2) << isa;
  }
  for (const char* isa : {"SSE41", "AVX", "avx"}) {
    EXPECT_EQ(VectorWidthCapForIsa(isa), VectorWidth::kBaseline) << isa;
  }
  for (const char* isa : {"", "ALL", "AVX512_CORE", "avx512_core_bf16", "AVX512_CORE_AMX",
                          "AMX_BF16", "AVX10_1_512"}) {
    EXPECT_EQ(VectorWidthCapForIsa(isa), VectorWidth::kAvx512) << isa;
  }
}

TEST(VectorWidthTest, TheCapBoundsTheLoopsAndIsRestored) {
  const VectorWidth previous = CapVectorWidth(VectorWidth::kBaseline);
  EXPECT_EQ(LoopVectorWidth(), VectorWidth::kBaseline);
  CapVectorWidth(VectorWidth::kAvx2);
  EXPECT_EQ(LoopVectorWidth(),
            VectorWidthAvailable(VectorWidth::kAvx2) ? VectorWidth::kAvx2 : VectorWidth::kBaseline);
  CapVectorWidth(VectorWidth::kAvx512);
  const VectorWidth widest = VectorWidthAvailable(VectorWidth::kAvx512) ? VectorWidth::kAvx512
                             : VectorWidthAvailable(VectorWidth::kAvx2) ? VectorWidth::kAvx2
                                                                        : VectorWidth::kBaseline;
  EXPECT_EQ(LoopVectorWidth(), widest);
  EXPECT_EQ(CapVectorWidth(previous), VectorWidth::kAvx512);
}

}  // namespace
}  // namespace halfcaf
