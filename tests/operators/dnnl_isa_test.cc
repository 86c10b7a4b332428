// The instruction set oneDNN runs on, and what halfcaf does with it. tools/test_isa.sh runs the
// test binaries with oneDNN capped (ONEDNN_MAX_CPU_ISA) and names the cap it set in
// HALFCAF_EXPECT_DNNL_ISA; these tests prove the cap took effect (the ISA oneDNN reports, and the
// kernel it picks for a convolution: the implementation name ONEDNN_VERBOSE prints) and that
// bfloat16 takes oneDNN's BF16 kernels only where that ISA has BF16 instructions.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "core/bfloat16.h"
#include "core/vector_width.h"
#include "tests/util/op_test_util.h"

#ifdef HALFCAF_WITH_DNNL
#include "operators/dnnl_util.h"
#endif

namespace halfcaf {
namespace testing {
namespace {

#ifdef HALFCAF_WITH_DNNL

unsigned Bits(dnnl::cpu_isa isa) { return static_cast<unsigned>(isa); }

// oneDNN's ISA values nest as bit sets: `a` includes `b` when it has all of b's bits.
bool Includes(dnnl::cpu_isa a, dnnl::cpu_isa b) { return (Bits(a) & Bits(b)) == Bits(b); }

// The cap tools/test_isa.sh set, by oneDNN's name for it; nullptr when the leg is uncapped.
const char* ExpectedIsaName() {
  const char* e = std::getenv("HALFCAF_EXPECT_DNNL_ISA");
  return e != nullptr && *e != '\0' ? e : nullptr;
}

dnnl::cpu_isa IsaByName(const std::string& name) {
  static const std::map<std::string, dnnl::cpu_isa> kIsas = {
      {"SSE41", dnnl::cpu_isa::sse41},
      {"AVX", dnnl::cpu_isa::avx},
      {"AVX2", dnnl::cpu_isa::avx2},
      {"AVX512_CORE", dnnl::cpu_isa::avx512_core},
      {"AVX512_CORE_VNNI", dnnl::cpu_isa::avx512_core_vnni},
      {"AVX512_CORE_BF16", dnnl::cpu_isa::avx512_core_bf16},
      {"AVX512_CORE_AMX", dnnl::cpu_isa::avx512_core_amx},
  };
  auto it = kIsas.find(name);
  if (it == kIsas.end()) {
    ADD_FAILURE() << "unknown ISA name " << name;
    return dnnl::cpu_isa::all;
  }
  return it->second;
}

// The implementation oneDNN picks for a small FP32 forward convolution (its name as
// ONEDNN_VERBOSE prints it, e.g. "jit:avx2" or "brgconv:avx512_core"). The primitive runs once,
// so that ONEDNN_VERBOSE=1 also prints oneDNN's ISA line and the kernel it executed.
std::string FloatConvImpl() {
  using dnnl::memory;
  const auto f32 = memory::data_type::f32;
  const memory::desc src({2, 16, 14, 14}, f32, memory::format_tag::any);
  const memory::desc wei({32, 16, 3, 3}, f32, memory::format_tag::any);
  const memory::desc dst({2, 32, 14, 14}, f32, memory::format_tag::any);
  const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training,
                                          dnnl::algorithm::convolution_direct, src, wei, dst,
                                          {1, 1}, {1, 1}, {1, 1});
  const dnnl::convolution_forward::primitive_desc pd(d, DnnlAttr(), DnnlEngine());
  const dnnl::engine& e = DnnlEngine();
  dnnl::convolution_forward(pd).execute(
      DnnlStream(), {{DNNL_ARG_SRC, memory(pd.src_desc(), e)},
                     {DNNL_ARG_WEIGHTS, memory(pd.weights_desc(), e)},
                     {DNNL_ARG_DST, memory(pd.dst_desc(), e)},
                     {DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), e)}});
  return pd.impl_info_str();
}

TEST(DnnlIsaTest, CapTakesEffect) {
  const dnnl::cpu_isa effective = DnnlEffectiveIsa();
  const std::string impl = FloatConvImpl();
  std::cout << "oneDNN effective ISA 0x" << std::hex << Bits(effective) << std::dec
            << ", FP32 convolution kernel " << impl << "\n";
  const char* expected = ExpectedIsaName();
  if (expected == nullptr) {
    // Uncapped: whatever the CPU has, and a JIT kernel (never the reference code) for FP32.
    EXPECT_NE(impl.rfind("ref", 0), 0u) << impl;
    return;
  }
  const dnnl::cpu_isa cap = IsaByName(expected);
  // The effective ISA never exceeds the cap; it equals it unless the CPU lacks the capped ISA.
  EXPECT_TRUE(Includes(cap, effective)) << expected << " vs 0x" << std::hex << Bits(effective);
  if (!Includes(cap, dnnl::cpu_isa::avx512_core)) {
    EXPECT_EQ(impl.find("avx512"), std::string::npos) << "capped at " << expected << ": " << impl;
  }
  if (!Includes(cap, dnnl::cpu_isa::avx512_core_amx)) {
    EXPECT_EQ(impl.find("amx"), std::string::npos) << "capped at " << expected << ": " << impl;
  }
  if (Bits(cap) == Bits(dnnl::cpu_isa::avx2)) {
    EXPECT_EQ(Bits(effective), Bits(dnnl::cpu_isa::avx2)) << "an AVX2 machine at least";
    EXPECT_NE(impl.find("avx2"), std::string::npos) << impl;
  }
}

// halfcaf's own loops stay under the same cap (core/vector_width.h).
TEST(DnnlIsaTest, HalfcafLoopsFollowTheCap) {
  const char* expected = ExpectedIsaName();
  if (expected == nullptr) GTEST_SKIP() << "not capped";
  const VectorWidth cap = VectorWidthCapForIsa(expected);
  EXPECT_LE(static_cast<int>(LoopVectorWidth()), static_cast<int>(cap)) << expected;
  if (cap == VectorWidth::kAvx2 && VectorWidthAvailable(VectorWidth::kAvx2)) {
    EXPECT_EQ(LoopVectorWidth(), VectorWidth::kAvx2) << expected;
  }
}

TEST(DnnlIsaTest, BFloat16KernelsOnlyWhereTheIsaHasThem) {
  const bool isa_bf16 = Includes(DnnlEffectiveIsa(), dnnl::cpu_isa::avx512_core_bf16);
  EXPECT_EQ(DnnlIsaHasBFloat16(), isa_bf16);
  const char* env = std::getenv("HALFCAF_DNNL_BF16");
  const bool forced_off = env != nullptr && std::string(env) == "0";
  EXPECT_EQ(DnnlBFloat16Enabled(), isa_bf16 && CpuHasAvx512Bf16() && !forced_off);
  if (const char* expected = ExpectedIsaName()) {
    if (!Includes(IsaByName(expected), dnnl::cpu_isa::avx512_core_bf16)) {
      EXPECT_FALSE(DnnlBFloat16Enabled()) << "capped at " << expected;
    }
  }
}

#else

TEST(DnnlIsaTest, NeedsOneDnn) { GTEST_SKIP() << "built without oneDNN"; }

#endif

}  // namespace
}  // namespace testing
}  // namespace halfcaf
