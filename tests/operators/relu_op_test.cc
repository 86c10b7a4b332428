#include <gtest/gtest.h>

#include "core/bfloat16.h"
#include "core/nan_math.h"
#include "tests/util/bf16_switch.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(ReluOpTest, Forward) {
  auto def = MakeOperatorDef("Relu", "", {"X"}, {"Y"});
  auto y = RunAndGet(def, {{"X", FloatTensor({2, 2}, {-1.f, 0.5f, 0.f, 3.f})}});
  EXPECT_EQ(y, (std::vector<float>{0.f, 0.5f, 0.f, 3.f}));
}

TEST(ReluOpTest, InPlace) {
  auto def = MakeOperatorDef("Relu", "", {"X"}, {"X"});
  auto y = RunAndGet(def, {{"X", FloatTensor({3}, {-2.f, 1.f, -0.f})}});
  EXPECT_EQ(y, (std::vector<float>{0.f, 1.f, 0.f}));
}

TEST(ReluOpTest, Gradient) {
  auto def = MakeOperatorDef("Relu", "", {"X"}, {"Y"});
  GradientCheckOptions opts;
  opts.kink_range = 0.02f;
  GradientChecker(opts).Check(def, {{"X", RandomTensorAwayFrom({2, 3, 7, 9}, 1, {0.f}, 0.05f)}},
                              0, 0);
}

TEST(ReluOpTest, Fp16MatchesFp32) {
  auto def = MakeOperatorDef("Relu", "", {"X"}, {"Y"});
  CheckFp16MatchesFp32(def, {{"X", RandomTensor({2, 3, 7, 9}, 2, -4.f, 4.f)}}, {"X"});
  auto gdef = MakeOperatorDef("ReluGradient", "", {"Y", "dY"}, {"dX"});
  CheckFp16MatchesFp32(gdef,
                       {{"Y", RandomTensor({5, 13}, 3, -1.f, 1.f)},
                        {"dY", RandomTensor({5, 13}, 4)}},
                       {"Y", "dY"});
}

TEST(ReluOpTest, RejectsIntegerInput) {
  auto def = MakeOperatorDef("Relu", "", {"X"}, {"Y"});
  Workspace ws;
  try {
    RunOp(def, {{"X", IntTensor({2}, {1, 2})}}, &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("float, float16 or bfloat16"), std::string::npos)
        << e.what();
  }
}

// NaN propagates (PyTorch, ONNX Runtime): a NaN weight must not become a finite activation.
TEST(ReluOpTest, NaNPropagates) {
  ExpectNaNPropagates(MakeOperatorDef("Relu", "", {"X"}, {"Y"}),
                      {{"X", FloatTensor({4}, {-1.f, 2.f, 0.f, 3.f})}}, "X", 0, "Y", {0});
  auto g = MakeOperatorDef("ReluGradient", "", {"Y", "dY"}, {"dX"});
  const Tensor y = FloatTensor({4}, {0.f, 2.f, 0.f, 3.f}), dy = FloatTensor({4}, {1, 2, 3, 4});
  ExpectNaNPropagates(g, {{"Y", y}, {"dY", dy}}, "Y", 1, "dX", {1});
  ExpectNaNPropagates(g, {{"Y", y}, {"dY", dy}}, "dY", 2, "dX", {2});  // also where Y <= 0
  ExpectNaNPropagates(g, {{"Y", y}, {"dY", dy}}, "dY", 3, "dX", {3});
}

// bfloat16 runs on the bit patterns (relu_op.cc): every one of the 65536 patterns, as Y and X,
// against a 64-pattern dY of specials and ordinary values, gives exactly the float path's bits
// (convert, compute in float, round once), NaN payloads included.
Tensor BFloat16Bits(const std::vector<uint16_t>& bits) {
  Tensor t({static_cast<int64_t>(bits.size())}, DataType::BFLOAT16);
  BFloat16* d = t.mutable_data<BFloat16>();
  for (size_t i = 0; i < bits.size(); ++i) d[i].x = bits[i];
  return t;
}

uint16_t ViaFloat(float v) { return FloatToBFloat16Bits(v); }

void ExpectBFloat16BitsEqualTheFloatPath() {
  std::vector<uint16_t> all(65536);
  for (uint32_t b = 0; b < 65536; ++b) all[b] = static_cast<uint16_t>(b);
  const std::vector<uint16_t> specials{0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x3f80,
                                       0xbf80, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0xffc0,
                                       0x7f81, 0xff81, 0x7fff, 0x4049, 0xc049, 0x3c00};
  std::vector<uint16_t> dy(all.size());
  for (size_t i = 0; i < dy.size(); ++i) {
    dy[i] = i % 3 == 0 ? specials[(i / 3) % specials.size()] : static_cast<uint16_t>(i * 40503u);
  }
  Workspace ws;
  RunOp(MakeOperatorDef("Relu", "", {"X"}, {"Y"}), {{"X", BFloat16Bits(all)}}, &ws);
  RunOp(MakeOperatorDef("ReluGradient", "", {"X", "dY"}, {"dX"}), {{"dY", BFloat16Bits(dy)}},
        &ws);
  const BFloat16* y = ws.GetTensor("Y").data<BFloat16>();
  const BFloat16* dx = ws.GetTensor("dX").data<BFloat16>();
  int bad_forward = 0, bad_gradient = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const float x = BFloat16BitsToFloat(all[i]);
    const float g = BFloat16BitsToFloat(dy[i]);
    if (y[i].x != ViaFloat(ReluNaN(x)) && ++bad_forward <= 5) {
      ADD_FAILURE() << "Relu of bits " << std::hex << all[i] << ": " << y[i].x;
    }
    if (dx[i].x != ViaFloat(GatedGradient(x > 0.f, x, g)) && ++bad_gradient <= 5) {
      ADD_FAILURE() << "ReluGradient of Y bits " << std::hex << all[i] << ", dY bits " << dy[i]
                    << ": " << dx[i].x;
    }
  }
  EXPECT_EQ(bad_forward, 0);
  EXPECT_EQ(bad_gradient, 0);
}

// Every bit pattern, on AVX-512F vectors where the CPU has them and on the scalar loops.
TEST(ReluOpTest, BFloat16BitsEqualTheFloatPath) {
  WithAndWithoutBFloat16Vectors(ExpectBFloat16BitsEqualTheFloatPath);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
