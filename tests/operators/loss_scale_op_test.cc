#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "operators/optimizer/loss_scale_op.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

float FoundInf(const std::map<std::string, Tensor>& inputs, std::vector<std::string> names) {
  return RunAndGet(MakeOperatorDef("CheckFinite", "", names, {"found_inf"}), inputs)[0];
}

TEST(CheckFiniteOpTest, DetectsInfAndNanInFloatAndHalf) {
  Tensor ok = RandomTensor({3, 5}, 1, -100.f, 100.f);
  Tensor inf = RandomTensor({7}, 2);
  inf.mutable_data<float>()[4] = std::numeric_limits<float>::infinity();
  Tensor nan = RandomTensor({7}, 3);
  nan.mutable_data<float>()[6] = std::nanf("");
  EXPECT_EQ(FoundInf({{"a", ok}}, {"a"}), 0.f);
  EXPECT_EQ(FoundInf({{"a", ok}, {"b", inf}}, {"a", "b"}), 1.f);
  EXPECT_EQ(FoundInf({{"a", nan}, {"b", ok}}, {"a", "b"}), 1.f);
  EXPECT_EQ(FoundInf({{"h", ToHalf(ok)}}, {"h"}), 0.f);
  // 70000 overflows float16 to inf: the mixed-precision overflow case.
  Tensor big = FloatTensor({2}, {1.f, 70000.f});
  EXPECT_EQ(FoundInf({{"h", ToHalf(big)}}, {"h"}), 1.f);
  EXPECT_EQ(FoundInf({{"h", ToHalf(nan)}}, {"h"}), 1.f);
  EXPECT_EQ(FoundInf({{"h", ToHalf(FloatTensor({1}, {65504.f}))}}, {"h"}), 0.f);
}

// CheckFinite scans its inputs end to end in one parallel pass: a non-finite value is found in
// whichever input, of whichever type, at whichever place (first or last element, across the
// threads' ranges), with empty inputs between; the largest finite values pass.
TEST(CheckFiniteOpTest, FindsAnyNonFiniteValueAcrossManyInputs) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<int64_t> sizes{5, 0, 1, 100003, 0, 17, 4096, 3};
  const std::vector<float> bad{inf, -inf, std::nanf(""), -std::nanf("")};
  const auto inputs = [&](int64_t which, int64_t at, float v) {
    std::map<std::string, Tensor> in;
    std::vector<std::string> names;
    for (size_t k = 0; k < sizes.size(); ++k) {
      std::vector<float> d(static_cast<size_t>(sizes[k]), 1.f);
      // The largest finite values: float's, and bfloat16's (0x7f7f) for the bfloat16 inputs.
      const float big = k % 3 == 2 ? 3.38953139e38f : std::numeric_limits<float>::max();
      if (!d.empty()) d[0] = d.back() = big;
      if (static_cast<int64_t>(k) == which) d[static_cast<size_t>(at)] = v;
      const Tensor t = FloatTensor({sizes[k]}, d);
      // float16 can not hold the large finite value: 65504 instead.
      const std::string name = "g" + std::to_string(k);
      if (k % 3 == 1) {
        for (float& x : d) x = std::isfinite(x) ? std::min(x, 65504.f) : x;
        in[name] = ToHalf(FloatTensor({sizes[k]}, d));
      } else {
        in[name] = k % 3 == 2 ? ToBFloat16(t) : t;
      }
      names.push_back(name);
    }
    return std::make_pair(in, names);
  };
  const auto clean = inputs(-1, 0, 0.f);
  EXPECT_EQ(FoundInf(clean.first, clean.second), 0.f);
  for (size_t k = 0; k < sizes.size(); ++k) {
    for (const int64_t at : {int64_t{0}, sizes[k] / 2, sizes[k] - 1}) {
      if (sizes[k] == 0) continue;
      for (const float v : bad) {
        SCOPED_TRACE(::testing::Message() << "input " << k << " element " << at << " " << v);
        const auto in = inputs(static_cast<int64_t>(k), at, v);
        EXPECT_EQ(FoundInf(in.first, in.second), 1.f);
      }
    }
  }
}

TEST(UpdateLossScaleOpTest, BacksOffGrowsAndCounts) {
  Workspace ws;
  SetInput(&ws, "scale", FloatTensor({}, {1024.f}));
  Tensor zero({1}, DataType::INT64);
  zero.mutable_data<int64_t>()[0] = 0;
  SetInput(&ws, "good", zero);
  SetInput(&ws, "skipped", zero);
  auto def = MakeOperatorDef("UpdateLossScale", "", {"scale", "inf", "good", "skipped"},
                             {"scale", "good", "skipped"},
                             {MakeArgument("growth_interval", 3), MakeArgument("min_scale", 256.f),
                              MakeArgument("max_scale", 2048.f)});
  auto step = [&](float found) {
    SetInput(&ws, "inf", FloatTensor({}, {found}));
    RunOp(def, {}, &ws);
    return ws.GetTensor("scale").data<float>()[0];
  };
  EXPECT_EQ(step(1), 512.f);   // overflow: halve
  EXPECT_EQ(step(1), 256.f);
  EXPECT_EQ(step(1), 256.f);   // min_scale bound
  EXPECT_EQ(ws.GetTensor("skipped").data<int64_t>()[0], 3);
  EXPECT_EQ(step(0), 256.f);
  EXPECT_EQ(step(0), 256.f);
  EXPECT_EQ(step(0), 512.f);   // 3 clean steps: double
  EXPECT_EQ(ws.GetTensor("good").data<int64_t>()[0], 0);
  for (int i = 0; i < 9; ++i) step(0);
  EXPECT_EQ(ws.GetTensor("scale").data<float>()[0], 2048.f);  // max_scale bound
  EXPECT_EQ(ws.GetTensor("skipped").data<int64_t>()[0], 3);
}

TEST(UpdateLossScaleOpTest, StaticScaleOnlyCounts) {
  LossScaleRule rule;
  rule.growth = 1.f;
  rule.backoff = 1.f;
  rule.growth_interval = 1;
  int64_t good = 0, skipped = 0;
  EXPECT_EQ(rule.Step(128.f, true, &good, &skipped), 128.f);
  EXPECT_EQ(rule.Step(128.f, false, &good, &skipped), 128.f);
  EXPECT_EQ(skipped, 1);
}

TEST(UpdateLossScaleOpTest, BadArgumentsAndInPlaceRules) {
  Workspace ws;
  SetInput(&ws, "scale", FloatTensor({}, {1.f}));
  SetInput(&ws, "inf", FloatTensor({}, {0.f}));
  SetInput(&ws, "good", IntTensor({1}, {0}));
  SetInput(&ws, "skipped", IntTensor({1}, {0}));
  auto bad = MakeOperatorDef("UpdateLossScale", "", {"scale", "inf", "good", "skipped"},
                             {"scale", "good", "skipped"}, {MakeArgument("backoff", 2.f)});
  try {
    RunOp(bad, {}, &ws);
    FAIL();
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("backoff"), std::string::npos) << e.what();
  }
  auto not_inplace = MakeOperatorDef("UpdateLossScale", "", {"scale", "inf", "good", "skipped"},
                                     {"new_scale", "good", "skipped"});
  EXPECT_THROW(RunOp(not_inplace, {}, &ws), EnforceNotMet);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
