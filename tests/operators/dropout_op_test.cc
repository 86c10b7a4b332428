#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "core/math.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"
#include "tests/util/vector_width.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef DropoutDef(float ratio, int is_test, std::vector<std::string> outputs,
                       uint32_t seed = 42) {
  auto def = MakeOperatorDef("Dropout", "", {"X"}, outputs,
                             {MakeArgument("ratio", ratio), MakeArgument("is_test", is_test)});
  def.mutable_device_option()->set_random_seed(seed);
  return def;
}

std::vector<bool> MaskOf(const Workspace& ws, const std::string& name) {
  const Tensor& m = ws.GetTensor(name);
  EXPECT_EQ(m.dtype(), DataType::BOOL);
  return std::vector<bool>(m.data<bool>(), m.data<bool>() + m.numel());
}

TEST(DropoutOpTest, TrainingScalesKeptElementsAndMasks) {
  Tensor X = RandomTensor({4, 5, 7, 9}, 1);
  const float ratio = 0.3f;
  Workspace ws;
  RunOp(DropoutDef(ratio, 0, {"Y", "mask"}), {{"X", X}}, &ws);
  const Tensor& mask_t = ws.GetTensor("mask");
  EXPECT_EQ(mask_t.dims(), X.dims());
  std::vector<bool> mask = MaskOf(ws, "mask");
  std::vector<float> want;
  int64_t kept = 0;
  for (int64_t i = 0; i < X.numel(); ++i) {
    want.push_back(mask[i] ? X.data<float>()[i] / (1.f - ratio) : 0.f);
    kept += mask[i];
  }
  ExpectNear(ToFloatVector(ws.GetTensor("Y")), want, 1e-6f, 1e-6f);
  // 1260 Bernoulli(0.7) draws: the kept fraction is within a few standard deviations (0.013).
  const double frac = static_cast<double>(kept) / X.numel();
  EXPECT_NEAR(frac, 1.0 - ratio, 0.05);
}

// The keep probability is 1 - ratio for any ratio: a million draws within 5 standard deviations.
TEST(DropoutOpTest, KeepProbabilityIsOneMinusRatio) {
  const Tensor X = RandomTensor({1000, 1000}, 3);
  for (float ratio : {0.1f, 0.25f, 0.5f, 0.9f}) {
    Workspace ws;
    RunOp(DropoutDef(ratio, 0, {"Y", "mask"}), {{"X", X}}, &ws);
    const std::vector<bool> mask = MaskOf(ws, "mask");
    int64_t kept = 0;
    for (bool m : mask) kept += m;
    const double p = 1.0 - ratio, n = static_cast<double>(mask.size());
    EXPECT_NEAR(kept / n, p, 5 * std::sqrt(p * (1 - p) / n)) << "ratio " << ratio;
  }
}

// A NaN stays NaN whether its element is kept or dropped (NaN * 0), as in PyTorch: a diverged
// activation cannot turn finite behind a dropout mask. Every element is tried, so both cases occur.
TEST(DropoutOpTest, NaNPropagatesKeptOrDropped) {
  const Tensor X = RandomTensor({2, 8}, 3);
  const Tensor dY = RandomTensor({2, 8}, 4);
  int dropped = 0;
  for (int64_t i = 0; i < X.numel(); ++i) {
    SCOPED_TRACE(i);
    ExpectNaNExactlyAt(RunWithNaN(DropoutDef(0.5f, 0, {"Y", "mask"}), {{"X", X}}, "X", i, "Y"),
                       {i});
    Workspace ws;
    RunOp(DropoutDef(0.5f, 0, {"Y", "mask"}), {{"X", X}}, &ws);
    dropped += !MaskOf(ws, "mask")[static_cast<size_t>(i)];
    const OperatorDef grad = MakeOperatorDef("DropoutGrad", "", {"dY", "mask"}, {"dX"},
                                             {MakeArgument("ratio", 0.5f)});
    ExpectNaNExactlyAt(RunWithNaN(grad, {{"dY", dY}, {"mask", ws.GetTensor("mask")}}, "dY", i,
                                  "dX"),
                       {i});
  }
  EXPECT_GT(dropped, 0);
}

// The draws are independent of each other: neighbours are both kept with probability p^2, and an
// element's draw does not repeat the one before (a counter-based generator with a weak mix would
// correlate them).
TEST(DropoutOpTest, NeighbouringDrawsAreIndependent) {
  const Tensor X = RandomTensor({1000, 1000}, 5);
  Workspace ws;
  RunOp(DropoutDef(0.5f, 0, {"Y", "mask"}), {{"X", X}}, &ws);
  const std::vector<bool> mask = MaskOf(ws, "mask");
  int64_t both = 0, same = 0;
  for (size_t i = 1; i < mask.size(); ++i) {
    both += mask[i] && mask[i - 1];
    same += mask[i] == mask[i - 1];
  }
  const double n = static_cast<double>(mask.size() - 1);
  EXPECT_NEAR(both / n, 0.25, 5 * std::sqrt(0.25 * 0.75 / n));
  EXPECT_NEAR(same / n, 0.5, 5 * std::sqrt(0.25 / n));
}

// The mask is the same however many threads split the loop.
TEST(DropoutOpTest, MaskDoesNotDependOnThreadCount) {
  const Tensor X = RandomTensor({64, 64, 14, 14}, 6);
  const int threads = math::CpuLoopThreads();
  std::vector<std::vector<bool>> masks;
  std::vector<std::vector<float>> outs;
  for (int t : {1, 2, 3}) {
    math::SetBlasThreads(t);
    Workspace ws;
    RunOp(DropoutDef(0.25f, 0, {"Y", "mask"}), {{"X", X}}, &ws);
    masks.push_back(MaskOf(ws, "mask"));
    outs.push_back(ToFloatVector(ws.GetTensor("Y")));
  }
  math::SetBlasThreads(threads);
  EXPECT_EQ(masks[0], masks[1]);
  EXPECT_EQ(masks[0], masks[2]);
  EXPECT_EQ(outs[0], outs[1]);
  EXPECT_EQ(outs[0], outs[2]);
}

// The vector loop (AVX-512 where the CPU has it) gives the scalar loop's mask and Y bit for bit:
// signed zeros, NaN and inf, a length that is not a multiple of 16, several pieces, float16.
TEST(DropoutOpTest, EveryVectorWidthGivesTheSameMaskAndY) {
  Tensor X = RandomTensor({3, 37, 11, 13}, 7);
  float* x = X.mutable_data<float>();
  x[0] = -0.f;
  x[17] = std::nanf("");
  x[18] = -std::numeric_limits<float>::infinity();
  x[100] = 0.f;
  for (const DataType dtype : {DataType::FLOAT, DataType::FLOAT16}) {
    const Tensor input = dtype == DataType::FLOAT ? X : ToHalf(X);
    const auto run = [&] {
      Workspace ws;
      RunOp(DropoutDef(0.3f, 0, {"Y", "mask"}), {{"X", input}}, &ws);
      const Tensor& y = ws.GetTensor("Y");
      std::vector<uint8_t> bytes(static_cast<const uint8_t*>(y.raw_data()),
                                 static_cast<const uint8_t*>(y.raw_data()) + y.nbytes());
      return std::make_pair(MaskOf(ws, "mask"), bytes);
    };
    const auto want = [&] {
      const ScopedVectorWidth cap(VectorWidth::kBaseline);
      return run();
    }();
    for (const VectorWidth width : AvailableVectorWidths()) {
      SCOPED_TRACE(std::string(DataTypeName(dtype)) + " width " +
                   std::to_string(static_cast<int>(width)));
      const ScopedVectorWidth cap(width);
      const auto got = run();
      EXPECT_EQ(got.first, want.first);
      EXPECT_EQ(got.second, want.second);
    }
  }
}

// With channel_block the op reads a channel-blocked X (N, C / B, H, W, B) and keeps and drops what
// the NCHW op does: Y and the mask are the NCHW op's, blocked, bit for bit, on every vector width
// (the AVX-512 loop takes a pixel's 16 channels at a time), in pieces that split the pixels
// between threads, and DropoutGrad on the blocked mask gives the blocked dX.
TEST(DropoutOpTest, ChannelBlockedKeepsWhatNchwKeeps) {
  Tensor X = RandomTensor({3, 32, 23, 29}, 9);
  X.mutable_data<float>()[40] = std::nanf("");
  X.mutable_data<float>()[41] = -0.f;
  for (const int64_t B : {16, 8}) {
    for (const DataType dtype : {DataType::FLOAT, DataType::FLOAT16}) {
      const Tensor input = dtype == DataType::FLOAT ? X : ToHalf(X);
      for (const VectorWidth width : AvailableVectorWidths()) {
        SCOPED_TRACE(::testing::Message() << "block " << B << " " << DataTypeName(dtype)
                                          << " width " << static_cast<int>(width));
        const ScopedVectorWidth cap(width);
        Workspace ws;
        SetInput(&ws, "X", input);
        SetInput(&ws, "dY",
                 dtype == DataType::FLOAT ? RandomTensor(X.dims(), 10)
                                          : ToHalf(RandomTensor(X.dims(), 10)));
        const auto block = [&](const std::string& from, const std::string& to, bool to_blocked) {
          CreateOperator(MakeOperatorDef(to_blocked ? "NCHW2NCHWc" : "NCHWc2NCHW", "", {from}, {to},
                                         {MakeArgument("block", B)}),
                         &ws)
              ->Run(0);
        };
        OperatorDef plain = DropoutDef(0.4f, 0, {"Y", "mask"});
        CreateOperator(plain, &ws)->Run(0);
        block("X", "Xb", true);
        OperatorDef blocked = plain;
        blocked.set_input(0, "Xb");
        blocked.set_output(0, "Yb");
        blocked.set_output(1, "maskb");
        blocked.add_arg()->CopyFrom(MakeArgument("channel_block", B));
        CreateOperator(blocked, &ws)->Run(0);
        EXPECT_EQ(ws.GetTensor("Yb").dims(), ws.GetTensor("Xb").dims());
        block("Yb", "Y2", false);
        block("maskb", "mask2", false);
        EXPECT_EQ(MaskOf(ws, "mask2"), MaskOf(ws, "mask"));
        const Tensor& y = ws.GetTensor("Y");
        const Tensor& y2 = ws.GetTensor("Y2");
        ASSERT_EQ(y2.nbytes(), y.nbytes());
        EXPECT_EQ(std::memcmp(y2.raw_data(), y.raw_data(), y.nbytes()), 0);
        // The gradient, element-wise, on the blocked mask.
        block("dY", "dYb", true);
        const std::vector<Argument> ratio = {MakeArgument("ratio", 0.4f)};
        CreateOperator(MakeOperatorDef("DropoutGrad", "", {"dY", "mask"}, {"dX"}, ratio), &ws)
            ->Run(0);
        CreateOperator(MakeOperatorDef("DropoutGrad", "", {"dYb", "maskb"}, {"dXb"}, ratio), &ws)
            ->Run(0);
        block("dXb", "dX2", false);
        const Tensor& dx = ws.GetTensor("dX");
        EXPECT_EQ(std::memcmp(ws.GetTensor("dX2").raw_data(), dx.raw_data(), dx.nbytes()), 0);
      }
    }
  }
}

TEST(DropoutOpTest, ChannelBlockNeedsABlockedX) {
  OperatorDef def = DropoutDef(0.5f, 0, {"Y", "mask"});
  def.add_arg()->CopyFrom(MakeArgument("channel_block", 16));
  Workspace ws;
  SetInput(&ws, "X", RandomTensor({2, 16, 3, 3}, 1));
  try {
    CreateOperator(def, &ws)->Run(0);
    ADD_FAILURE() << "a 4-D X taken as blocked";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("must be channel-blocked"), std::string::npos) << e.what();
  }
}

TEST(DropoutOpTest, MaskFollowsSeed) {
  Tensor X = RandomTensor({200}, 2);
  Workspace a, b, c;
  RunOp(DropoutDef(0.5f, 0, {"Y", "mask"}, 7), {{"X", X}}, &a);
  RunOp(DropoutDef(0.5f, 0, {"Y", "mask"}, 7), {{"X", X}}, &b);
  RunOp(DropoutDef(0.5f, 0, {"Y", "mask"}, 8), {{"X", X}}, &c);
  EXPECT_EQ(MaskOf(a, "mask"), MaskOf(b, "mask"));
  EXPECT_NE(MaskOf(a, "mask"), MaskOf(c, "mask"));
}

TEST(DropoutOpTest, NewMaskEveryRun) {
  Workspace ws;
  SetInput(&ws, "X", RandomTensor({300}, 3));
  auto op = CreateOperator(DropoutDef(0.5f, 0, {"Y", "mask"}), &ws);
  op->Run(0);
  std::vector<bool> first = MaskOf(ws, "mask");
  op->Run(0);
  EXPECT_NE(first, MaskOf(ws, "mask"));
}

TEST(DropoutOpTest, RatioZeroKeepsEverything) {
  Tensor X = RandomTensor({3, 11}, 4);
  Workspace ws;
  RunOp(DropoutDef(0.f, 0, {"Y", "mask"}), {{"X", X}}, &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")), ToFloatVector(X));
  EXPECT_EQ(MaskOf(ws, "mask"), std::vector<bool>(33, true));
}

TEST(DropoutOpTest, InPlaceTraining) {
  Tensor X = RandomTensor({6, 7}, 5);
  Workspace ws;
  RunOp(DropoutDef(0.5f, 0, {"X", "mask"}), {{"X", X}}, &ws);
  std::vector<bool> mask = MaskOf(ws, "mask");
  std::vector<float> want;
  for (int64_t i = 0; i < X.numel(); ++i) want.push_back(mask[i] ? 2.f * X.data<float>()[i] : 0.f);
  ExpectNear(ToFloatVector(ws.GetTensor("X")), want, 1e-6f, 1e-6f);
}

TEST(DropoutOpTest, TestModeCopies) {
  Tensor X = RandomTensor({2, 3, 5}, 6);
  EXPECT_EQ(RunAndGet(DropoutDef(0.5f, 1, {"Y"}), {{"X", X}}), ToFloatVector(X));
  EXPECT_EQ(RunAndGet(DropoutDef(0.5f, 1, {"X"}), {{"X", X}}), ToFloatVector(X));
  Workspace ws;
  RunOp(DropoutDef(0.5f, 1, {"Y", "mask"}), {{"X", X}}, &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")), ToFloatVector(X));
  EXPECT_EQ(ws.GetTensor("mask").dims(), X.dims());
  EXPECT_EQ(MaskOf(ws, "mask"), std::vector<bool>(30, true));
  // float16 stays float16.
  Workspace ws16;
  RunOp(DropoutDef(0.5f, 1, {"Y"}), {{"X", ToHalf(X)}}, &ws16);
  EXPECT_EQ(ws16.GetTensor("Y").dtype(), DataType::FLOAT16);
  EXPECT_EQ(ToFloatVector(ws16.GetTensor("Y")), ToFloatVector(RoundThroughHalf(X)));
}

TEST(DropoutOpTest, GradientMakerPerMode) {
  std::vector<GradientWrapper> g(2);
  g[0].dense = "Y_grad";
  auto train = GetGradientForOp(DropoutDef(0.5f, 0, {"Y", "mask"}), g);
  ASSERT_EQ(train.ops.size(), 1u);
  EXPECT_EQ(train.ops[0].type(), "DropoutGrad");
  EXPECT_EQ(std::vector<std::string>(train.ops[0].input().begin(), train.ops[0].input().end()),
            (std::vector<std::string>{"Y_grad", "mask"}));
  EXPECT_EQ(train.ops[0].output(0), "X_grad");
  std::vector<GradientWrapper> g1(1);
  g1[0].dense = "Y_grad";
  auto test = GetGradientForOp(DropoutDef(0.5f, 1, {"Y"}), g1);
  ASSERT_EQ(test.ops.size(), 1u);
  EXPECT_EQ(std::vector<std::string>(test.ops[0].input().begin(), test.ops[0].input().end()),
            (std::vector<std::string>{"Y_grad"}));
}

TEST(DropoutOpTest, TrainingGradientUsesMask) {
  // Run forward + the generated gradient op; dX must be dY * mask / (1 - ratio).
  const float ratio = 0.4f;
  auto def = DropoutDef(ratio, 0, {"Y", "mask"});
  Workspace ws;
  RunOp(def, {{"X", RandomTensor({3, 4, 5}, 7)}}, &ws);
  Tensor dY = RandomTensor({3, 4, 5}, 8);
  SetInput(&ws, "Y_grad", dY);
  std::vector<GradientWrapper> g(2);
  g[0].dense = "Y_grad";
  for (const auto& gop : GetGradientForOp(def, g).ops) CreateOperator(gop, &ws)->Run(0);
  std::vector<bool> mask = MaskOf(ws, "mask");
  std::vector<float> want;
  for (int64_t i = 0; i < dY.numel(); ++i) {
    want.push_back(mask[i] ? dY.data<float>()[i] / (1.f - ratio) : 0.f);
  }
  ExpectNear(ToFloatVector(ws.GetTensor("X_grad")), want, 1e-6f, 1e-6f);
  // In place on dY.
  auto gdef = MakeOperatorDef("DropoutGrad", "", {"Y_grad", "mask"}, {"Y_grad"},
                              {MakeArgument("ratio", ratio)});
  CreateOperator(gdef, &ws)->Run(0);
  ExpectNear(ToFloatVector(ws.GetTensor("Y_grad")), want, 1e-6f, 1e-6f);
}

TEST(DropoutOpTest, TestModeGradient) {
  GradientChecker().Check(DropoutDef(0.5f, 1, {"Y"}), {{"X", RandomTensor({2, 3, 7, 9}, 9)}}, 0, 0);
}

TEST(DropoutOpTest, Fp16MatchesFp32) {
  std::map<std::string, Tensor> in{{"X", RandomTensor({2, 3, 7, 9}, 10, -3.f, 3.f)}};
  CheckFp16MatchesFp32(DropoutDef(0.3f, 0, {"Y", "mask"}), in, {"X"});
  CheckFp16MatchesFp32(DropoutDef(0.3f, 1, {"Y"}), in, {"X"});
  Tensor mask(std::vector<int64_t>{5, 13}, DataType::BOOL);
  for (int64_t i = 0; i < mask.numel(); ++i) mask.mutable_data<bool>()[i] = (i * 7) % 3 != 0;
  CheckFp16MatchesFp32(
      MakeOperatorDef("DropoutGrad", "", {"dY", "mask"}, {"dX"}, {MakeArgument("ratio", 0.3f)}),
      {{"dY", RandomTensor({5, 13}, 11)}, {"mask", mask}}, {"dY"});
  CheckFp16MatchesFp32(
      MakeOperatorDef("DropoutGrad", "", {"dY"}, {"dX"}, {MakeArgument("is_test", 1)}),
      {{"dY", RandomTensor({5, 13}, 12)}}, {"dY"});
}

TEST(DropoutOpTest, BadArguments) {
  std::map<std::string, Tensor> in{{"X", RandomTensor({4}, 13)}};
  ExpectError(DropoutDef(1.f, 0, {"Y", "mask"}), in, "'ratio' must be in [0, 1), got 1");
  ExpectError(DropoutDef(-0.1f, 0, {"Y", "mask"}), in, "'ratio' must be in [0, 1)");
  ExpectError(DropoutDef(0.5f, 0, {"Y"}), in, "needs 2 outputs (Y, mask), got 1");
  ExpectError(DropoutDef(0.5f, 0, {"Y", "mask"}), {{"X", IntTensor({2}, {1, 2})}},
                      "float, float16 or bfloat16");
  ExpectError(MakeOperatorDef("DropoutGrad", "", {"dY"}, {"dX"}),
                      {{"dY", RandomTensor({4}, 14)}}, "needs 2 inputs (dY, mask), got 1");
  ExpectError(MakeOperatorDef("DropoutGrad", "", {"dY", "mask"}, {"dX"}),
                      {{"dY", RandomTensor({4}, 14)}, {"mask", RandomTensor({4}, 15)}},
                      "mask must be bool");
  Tensor mask(std::vector<int64_t>{5}, DataType::BOOL);
  ExpectError(MakeOperatorDef("DropoutGrad", "", {"dY", "mask"}, {"dX"}),
                      {{"dY", RandomTensor({4}, 14)}, {"mask", mask}}, "[5] and [4]");
}

TEST(DropoutOpTest, SchemaShapes) {
  const OpSchema* s = OpSchemaRegistry::Schema("Dropout");
  ASSERT_NE(s, nullptr);
  auto out =
      s->InferShapes(DropoutDef(0.5f, 0, {"Y", "mask"}), {TensorShape{{2, 3}, DataType::FLOAT16}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(out[0].dtype, DataType::FLOAT16);
  EXPECT_EQ(out[1].dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(out[1].dtype, DataType::BOOL);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
