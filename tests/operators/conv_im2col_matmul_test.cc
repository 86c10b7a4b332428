// The filter gradient of an NHWC bfloat16 convolution computing in BF16 as im2col + one matrix
// product (operators/nn/conv_im2col_matmul_dnnl.h): it runs for exactly the convolutions it
// should, its dW is the convolution primitives' and the float32 default op's within one bfloat16
// rounding (either filter order, strides, dilations, asymmetric pads, stale outputs), and dX stays
// the data-gradient primitive's, bit for bit. Skips without oneDNN or BF16 kernels.
#include <gtest/gtest.h>

#include "tests/util/bf16_switch.h"
#include "tests/util/conv_case.h"
#include "tests/util/conv_gradient_path.h"
#include "tests/util/op_test_util.h"

#ifdef HALFCAF_WITH_DNNL
#include "operators/dnnl_util.h"
#include "operators/nn/bf16_kernels.h"
#include "operators/nn/conv_im2col_matmul_dnnl.h"
#endif

namespace halfcaf {
namespace testing {
namespace {

#ifdef HALFCAF_WITH_DNNL

bool HasDnnlConv() { return OperatorRegistry::Find(DeviceType::CPU, "Conv", "DNNL") != nullptr; }

TEST(ConvIm2colMatmulTest, FilterGradientMatchesTheConvolutionAndFloat32) {
  if (!HasDnnlConv()) GTEST_SKIP() << "built without oneDNN";
  if (!DnnlBFloat16Enabled()) GTEST_SKIP() << "no BF16 kernels here";
  ScopedEnv math("HALFCAF_DNNL_BF16_MATH", "bf16");
  ScopedEnv force("HALFCAF_DNNL_IM2COL_MATMUL", "1");
  ASSERT_TRUE(CpuBFloat16ConvMath().in_bfloat16);
  struct Variant {
    const char* what;
    ConvShape shape;
    bool filter_nchw;
    bool im2col;
  };
  auto shape = [](int64_t C, int64_t M, int64_t k, int64_t s) {
    ConvShape c{2, C, 9, 7, M, k, k};
    c.sh = c.sw = s;
    c.pt = c.pl = c.pb = c.pr = k / 2;
    c.nhwc = true;
    c.bias = false;
    return c;
  };
  ConvShape odd = shape(24, 40, 3, 1);  // a 3 x 2 kernel, dilated, asymmetric pads
  odd.kw = 2;
  odd.dh = 2;
  odd.sw = 2;
  odd.pt = 2, odd.pl = 0, odd.pb = 1, odd.pr = 1;
  ConvShape biased = shape(16, 24, 3, 1);
  biased.bias = true;
  ConvShape grouped = shape(16, 24, 3, 1);
  grouped.group = 2;
  ConvShape nchw = shape(16, 24, 3, 1);
  nchw.nhwc = false;
  const Variant variants[] = {
      {"3x3", shape(32, 48, 3, 1), false, true},
      {"3x3, NCHW filter", shape(32, 48, 3, 1), true, true},
      {"3x3 stride 2, NCHW filter", shape(16, 8, 3, 2), true, true},
      {"5x5 stride 3", shape(8, 3, 5, 3), false, true},
      {"one input channel, one output channel", shape(1, 1, 3, 1), true, true},
      {"3x2 dilated, asymmetric pads, NCHW filter", odd, true, true},
      {"with bias", biased, false, false},
      {"grouped", grouped, false, false},
      {"NCHW", nchw, false, false},
      {"1x1 (the pointwise path's)", shape(32, 48, 1, 1), false, false}};
  uint32_t seed = 1300;
  for (const Variant& v : variants) {
    const ConvShape& c = v.shape;
    std::vector<Argument> args = c.Args();
    if (v.filter_nchw) args.push_back(MakeArgument("filter_order", std::string("NCHW")));
    auto fp32_in = ConvOpInputs(c.XDims(), c.WDims(), c.M, c.bias, seed++, c.YDims());
    if (v.filter_nchw) fp32_in["W"] = RandomTensor({c.M, c.C / c.group, c.kh, c.kw}, seed++);
    for (bool with_dx : {true, false}) {
      SCOPED_TRACE(::testing::Message() << v.what << (with_dx ? ", with dX" : ", no dX"));
      // dX: the same data-gradient primitive either way.
      ExpectConvGradientPathAgrees(ConvGradientOpDef("Conv", c.bias, with_dx, args), fp32_in,
                                   ConvIm2colFilterGradientRuns(), v.im2col,
                                   "HALFCAF_DNNL_IM2COL_MATMUL", seed, {"dX"});
    }
  }
}

// What the rule decides for convolution `c` (bias from c.bias).
bool Decides(const ConvShape& c, bool bf16_math) {
  const OperatorDef def = ConvOpDef("Conv", c.bias, c.Args());
  const ConvPoolArgs a = ParseConvPoolArgs(ArgumentHelper(def), ConvPoolKind::kConv, "conv");
  return ConvFilterGradientIsIm2colMatmul(a, ComputeConvPoolGeometry(a, c.XDims()), c.bias,
                                          bf16_math);
}

// Unforced, the path takes the shapes it was measured to win on, and only with AMX.
TEST(ConvIm2colMatmulTest, TakesTheMeasuredShapesWithAmx) {
  if (!HasDnnlConv()) GTEST_SKIP() << "built without oneDNN";
  ScopedEnv unset("HALFCAF_DNNL_IM2COL_MATMUL", "");  // neither 0 nor 1: the rule
  struct Shape {
    int64_t C, H, k, s;
    bool bias, nhwc, bf16_math;
    bool expected;  // with AMX
    int64_t N = 8;
  };
  const Shape shapes[] = {{512, 7, 3, 1, false, true, true, true},
                          {512, 14, 3, 2, false, true, true, true},
                          {256, 14, 3, 1, false, true, true, true},
                          {256, 28, 3, 2, false, true, true, true},
                          {256, 28, 3, 1, false, true, true, false},  // 28 x 28 out
                          {128, 28, 3, 1, false, true, true, false},  // 1152 < 2304
                          {128, 56, 3, 2, false, true, true, false},  // 28 x 28 out
                          {128, 28, 3, 2, false, true, true, true},   // strided: 1152 >= 1024
                          {64, 14, 4, 2, false, true, true, true},    // the AC-GAN's: 1024
                          {64, 14, 4, 2, false, true, true, true, 64},
                          {96, 14, 3, 2, false, true, true, false},   // strided, 864 < 1024
                          {64, 14, 4, 1, false, true, true, false},   // 1024, no stride
                          {3, 224, 7, 2, false, true, true, false},   // the stem
                          {512, 7, 3, 1, true, true, true, false},    // bias
                          {512, 7, 3, 1, false, false, true, false},  // NCHW
                          {512, 7, 3, 1, false, true, false, false},  // FP32 math
                          {512, 8, 1, 1, false, true, true, false},   // 1 x 1
                          // columns over 64 MiB: batch 2048
                          {512, 7, 3, 1, false, true, true, false, 2048}};
  for (const Shape& s : shapes) {
    ConvShape c{s.N, s.C, s.H, s.H, s.C, s.k, s.k};
    c.sh = c.sw = s.s;
    c.pt = c.pl = c.pb = c.pr = s.k / 2;
    c.nhwc = s.nhwc;
    c.bias = s.bias;
    SCOPED_TRACE(::testing::Message() << s.C << " channels " << s.H << "x" << s.H << " k" << s.k
                                      << " s" << s.s << " batch " << s.N);
    EXPECT_EQ(Decides(c, s.bf16_math), s.expected && DnnlIsaHasAmx());
    if (s.expected) {
      ScopedEnv off("HALFCAF_DNNL_IM2COL_MATMUL", "0");
      EXPECT_FALSE(Decides(c, s.bf16_math)) << "switched off";
    }
  }
}

#else
TEST(ConvIm2colMatmulTest, NeedsOneDnn) { GTEST_SKIP() << "built without oneDNN"; }
#endif

}  // namespace
}  // namespace testing
}  // namespace halfcaf
