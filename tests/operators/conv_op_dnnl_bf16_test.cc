// Conv / ConvGradient on bfloat16 through the DNNL engine: oneDNN's BF16 kernels (AMX or
// AVX512_BF16, FP32 accumulation) when the CPU has them, the emulated default op (FP32 math on
// converted copies) when it does not or when HALFCAF_DNNL_BF16=0 switches them off. Both must
// agree with each other and with FP32 within bfloat16 tolerance. Skips without oneDNN.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <optional>

#include "tests/util/bf16_switch.h"
#include "tests/util/conv_case.h"
#include "tests/util/conv_gradient_path.h"
#include "tests/util/op_test_util.h"

#ifdef HALFCAF_WITH_DNNL
#include "operators/dnnl_util.h"
#include "operators/nn/bf16_kernels.h"
#include "operators/nn/conv_1x1_matmul_dnnl.h"
#endif

namespace halfcaf {
namespace testing {
namespace {

#ifdef HALFCAF_WITH_DNNL

struct Case : ConvShape {
  std::map<std::string, Tensor> Inputs(uint32_t seed) const {
    return ConvOpInputs(XDims(), WDims(), M, bias, seed, YDims());
  }
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  Case base{2, 16, 9, 9, 32, 3, 3};  // ResNet's 3x3
  base.pt = base.pl = base.pb = base.pr = 1;
  base.bias = false;
  cases.push_back(base);
  Case biased{2, 5, 7, 9, 6, 3, 3};  // odd channels, bias
  biased.pt = biased.pl = biased.pb = biased.pr = 1;
  cases.push_back(biased);
  Case stem{2, 3, 17, 15, 8, 7, 7};  // ResNet's first layer, small
  stem.sh = stem.sw = 2;
  stem.pt = stem.pl = stem.pb = stem.pr = 3;
  stem.bias = false;
  cases.push_back(stem);
  Case pointwise{2, 32, 9, 7, 48, 1, 1};  // strided 1x1 (a projection shortcut)
  pointwise.sh = pointwise.sw = 2;
  pointwise.bias = false;
  cases.push_back(pointwise);
  Case unit{2, 32, 9, 7, 48, 1, 1};  // stride-1 1x1 (a bottleneck's): NHWC, matrix products
  unit.bias = false;
  cases.push_back(unit);
  Case grouped{2, 8, 7, 9, 8, 3, 3};
  grouped.group = 2;
  grouped.pt = grouped.pl = grouped.pb = grouped.pr = 1;
  cases.push_back(grouped);
  return cases;
}

std::map<std::string, Tensor> AsBFloat16(const std::map<std::string, Tensor>& in) {
  std::map<std::string, Tensor> out;
  for (const auto& kv : in) out[kv.first] = ToBFloat16(kv.second);
  return out;
}

std::vector<OperatorDef> Defs(const Case& c) {
  return {ConvOpDef("Conv", c.bias, c.Args()), ConvGradientOpDef("Conv", c.bias, true, c.Args()),
          ConvGradientOpDef("Conv", c.bias, false, c.Args())};
}

TEST(ConvDnnlBFloat16Test, FastPathMatchesEmulatedPath) {
  if (OperatorRegistry::Find(DeviceType::CPU, "Conv", "DNNL") == nullptr) {
    GTEST_SKIP() << "built without oneDNN";
  }
  // The BF16 kernels run where the CPU has them, unless the environment switched them off.
  const bool fast = DnnlBFloat16Enabled();
  if (!fast) std::cout << "[ NOTE     ] BF16 kernels off: the emulated path only\n";
  for (bool nhwc : {false, true}) {
    uint32_t seed = 300;
    for (Case c : Cases()) {
      c.nhwc = nhwc;
      SCOPED_TRACE(::testing::Message() << (nhwc ? "NHWC" : "NCHW") << " seed " << seed);
      const auto in = AsBFloat16(c.Inputs(seed++));
      for (const OperatorDef& def : Defs(c)) ExpectBFloat16PathsAgree(def, in, 1);
    }
  }
}

// Where this CPU's BF16 convolution kernels are slower than its FP32 ones, bfloat16 convolutions
// compute in FP32 over the converted copies (bf16_kernels.h). Both ways, forced by
// HALFCAF_DNNL_BF16_MATH, agree with the emulated path within bfloat16 rounding, NCHW and NHWC.
TEST(ConvDnnlBFloat16Test, Float32MathAndBFloat16MathBothMatchTheEmulatedPath) {
  if (OperatorRegistry::Find(DeviceType::CPU, "Conv", "DNNL") == nullptr) {
    GTEST_SKIP() << "built without oneDNN";
  }
  for (const char* math : {"f32", "bf16"}) {
    ScopedEnv set_math("HALFCAF_DNNL_BF16_MATH", math);
    EXPECT_EQ(CpuBFloat16ConvMath().in_bfloat16, std::string(math) == "bf16");
    for (bool nhwc : {false, true}) {
      uint32_t seed = 700;
      for (Case c : Cases()) {
        c.nhwc = nhwc;
        SCOPED_TRACE(::testing::Message()
                     << math << (nhwc ? " NHWC" : " NCHW") << " seed " << seed);
        const auto in = AsBFloat16(c.Inputs(seed++));
        for (const OperatorDef& def : Defs(c)) ExpectBFloat16PathsAgree(def, in, 1);
      }
    }
  }
}

// The gradient of a pointwise NHWC bfloat16 convolution computing in BF16 runs as two matrix
// products (conv_1x1_matmul_dnnl.h): it must run for exactly those convolutions, and its dW and
// dX must be those of the convolution primitives and of the float32 default op (on the same
// bfloat16 values) within one bfloat16 rounding.
TEST(ConvDnnlBFloat16Test, PointwiseGradientRunsAsMatrixProducts) {
  if (OperatorRegistry::Find(DeviceType::CPU, "Conv", "DNNL") == nullptr) {
    GTEST_SKIP() << "built without oneDNN";
  }
  if (!DnnlBFloat16Enabled()) GTEST_SKIP() << "no BF16 kernels here";
  ScopedEnv math("HALFCAF_DNNL_BF16_MATH", "bf16");
  ASSERT_TRUE(CpuBFloat16ConvMath().in_bfloat16);
  struct Variant {
    const char* what;
    int64_t stride;
    bool nhwc, bias, filter_nchw;
    bool matmul;
    int64_t C = 32, M = 48;
  };
  const Variant variants[] = {{"NHWC 1x1", 1, true, false, false, true},
                              {"NHWC 1x1, NCHW filter", 1, true, false, true, true},
                              {"NHWC 1x1 with bias", 1, true, true, false, false},
                              {"NHWC 1x1 stride 2", 2, true, false, false, true},
                              {"NHWC 1x1 stride 3", 3, true, false, false, true},
                              {"NHWC 1x1, one output channel", 1, true, false, false, true, 5, 1},
                              {"NHWC 1x1, one input channel", 2, true, false, false, true, 1, 3},
                              {"NCHW 1x1", 1, false, false, false, false}};
  uint32_t seed = 900;
  for (const Variant& v : variants) {
    Case c{2, v.C, 9, 7, v.M, 1, 1};  // 9 x 7 in: 5 x 4 out at stride 2, 3 x 3 at stride 3
    c.sh = c.sw = v.stride;
    c.nhwc = v.nhwc;
    c.bias = v.bias;
    std::vector<Argument> args = c.Args();
    if (v.filter_nchw) args.push_back(MakeArgument("filter_order", std::string("NCHW")));
    auto fp32_in = c.Inputs(seed++);
    // An NCHW filter of a 1x1 convolution holds the same values in the same order.
    if (v.filter_nchw) fp32_in["W"].Reshape({c.M, c.C, 1, 1});
    for (bool with_dx : {true, false}) {
      SCOPED_TRACE(::testing::Message() << v.what << (with_dx ? ", with dX" : ", no dX"));
      ExpectConvGradientPathAgrees(ConvGradientOpDef("Conv", c.bias, with_dx, args), fp32_in,
                                   Conv1x1MatmulGradientRuns(), v.matmul, "HALFCAF_DNNL_1X1_MATMUL",
                                   seed);
    }
  }
}

TEST(ConvDnnlBFloat16Test, AgreesWithFloat32) {
  if (OperatorRegistry::Find(DeviceType::CPU, "Conv", "DNNL") == nullptr) {
    GTEST_SKIP() << "built without oneDNN";
  }
  for (bool off : {false, true}) {
    std::optional<ScopedBf16Off> s;
    if (off) s.emplace();
    SCOPED_TRACE(off ? "BF16 kernels off" : "BF16 kernels as the environment says");
    uint32_t seed = 500;
    for (const Case& c : Cases()) {
      const auto in = c.Inputs(seed++);
      std::vector<std::string> names{"X", "W", "dY"};
      if (c.bias) names.push_back("b");
      const std::vector<OperatorDef> defs = Defs(c);
      CheckLowPrecisionMatchesFp32(defs[0], in, names, DataType::BFLOAT16, {0}, 2e-2f, 8e-3f);
      std::vector<int> outs{0, 1};
      if (c.bias) outs.push_back(2);
      CheckLowPrecisionMatchesFp32(defs[1], in, names, DataType::BFLOAT16, outs, 3e-2f, 8e-3f);
    }
  }
}

#else
TEST(ConvDnnlBFloat16Test, NeedsOneDnn) { GTEST_SKIP() << "built without oneDNN"; }
#endif

}  // namespace
}  // namespace testing
}  // namespace halfcaf
