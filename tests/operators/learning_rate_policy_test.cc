// LearningRatePolicy: every policy against hand-computed multipliers (boundaries included), the
// errors on bad arguments, the warm-up extension, and the CosineAnnealingLR mapping.
#include <gtest/gtest.h>

#include <cmath>

#include "operators/optimizer/learning_rate_policy.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

constexpr double kPi = 3.14159265358979323846;

LearningRatePolicy MakePolicy(const std::vector<Argument>& args) {
  OperatorDef def = MakeOperatorDef("LearningRate", "", {"it"}, {"lr"}, args);
  return LearningRatePolicy(ArgumentHelper(def));
}

void ExpectMultipliers(const std::vector<Argument>& args, const std::vector<int64_t>& iters,
                       const std::vector<double>& want) {
  LearningRatePolicy policy = MakePolicy(args);
  ASSERT_EQ(iters.size(), want.size());
  for (size_t i = 0; i < iters.size(); ++i) {
    EXPECT_NEAR(policy(iters[i]), want[i], 1e-6) << policy.name() << " at iteration " << iters[i];
  }
}

std::string PolicyError(const std::vector<Argument>& args) {
  try {
    MakePolicy(args);
  } catch (const EnforceNotMet& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return "";
}

void ExpectError(const std::vector<Argument>& args, const std::string& want) {
  const std::string e = PolicyError(args);
  EXPECT_NE(e.find(want), std::string::npos) << "want \"" << want << "\" in: " << e;
}

TEST(LearningRatePolicyTest, Fixed) {
  ExpectMultipliers({MakeArgument("policy", "fixed")}, {0, 5, 1000}, {1, 1, 1});
}

TEST(LearningRatePolicyTest, Step) {
  ExpectMultipliers({MakeArgument("policy", "step"), MakeArgument("stepsize", 10),
                     MakeArgument("gamma", 0.5f)},
                    {0, 9, 10, 19, 25}, {1, 1, 0.5, 0.5, 0.25});
}

TEST(LearningRatePolicyTest, Exp) {
  ExpectMultipliers({MakeArgument("policy", "exp"), MakeArgument("gamma", 0.9f)}, {0, 1, 3},
                    {1, 0.9, 0.729});
}

TEST(LearningRatePolicyTest, Inv) {
  // (1 + 0.1 * iter)^-0.5
  ExpectMultipliers({MakeArgument("policy", "inv"), MakeArgument("gamma", 0.1f),
                     MakeArgument("power", 0.5f)},
                    {0, 10, 30}, {1, 0.70710678, 0.5});
}

TEST(LearningRatePolicyTest, Poly) {
  // (1 - iter/100)^2, then 0.
  ExpectMultipliers({MakeArgument("policy", "poly"), MakeArgument("power", 2.f),
                     MakeArgument("max_iter", 100)},
                    {0, 50, 90, 100, 150}, {1, 0.25, 0.01, 0, 0});
}

TEST(LearningRatePolicyTest, LinearWarmup) {
  ExpectMultipliers({MakeArgument("policy", "linearWarmup"),
                     MakeArgument("start_multiplier", 0.2f), MakeArgument("num_iter", 4)},
                    {0, 1, 2, 3, 4, 10}, {0.2, 0.4, 0.6, 0.8, 1, 1});
}

TEST(LearningRatePolicyTest, ConstantWarmup) {
  ExpectMultipliers({MakeArgument("policy", "constantWarmup"), MakeArgument("multiplier", 0.1f),
                     MakeArgument("num_iter", 3)},
                    {0, 2, 3, 50}, {0.1, 0.1, 1, 1});
  // Default multiplier 0.5.
  ExpectMultipliers({MakeArgument("policy", "constantWarmup"), MakeArgument("num_iter", 2)},
                    {0, 1, 2}, {0.5, 0.5, 1});
}

TEST(LearningRatePolicyTest, Alter) {
  ExpectMultipliers({MakeArgument("policy", "alter"), MakeArgument("active_period", 2),
                     MakeArgument("inactive_period", 3)},
                    {0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 0, 0, 0, 1, 1, 0});
  ExpectMultipliers({MakeArgument("policy", "alter"), MakeArgument("active_first", false),
                     MakeArgument("active_period", 2), MakeArgument("inactive_period", 3)},
                    {0, 1, 2, 3, 4, 5}, {0, 0, 0, 1, 1, 0});
}

TEST(LearningRatePolicyTest, Hill) {
  // Warm-up 0.5 -> 1 over 2 iterations, then max(0.2, 1 / (1 + (iter - 2))).
  ExpectMultipliers({MakeArgument("policy", "hill"), MakeArgument("num_iter", 2),
                     MakeArgument("start_multiplier", 0.5f), MakeArgument("gamma", 1.f),
                     MakeArgument("power", 1.f), MakeArgument("end_multiplier", 0.2f)},
                    {0, 1, 2, 3, 5, 10}, {0.5, 0.75, 1, 0.5, 0.25, 0.2});
}

TEST(LearningRatePolicyTest, Multistep) {
  ExpectMultipliers({MakeArgument("policy", "multistep"),
                     MakeArgument("stepsizes", std::vector<int64_t>{3, 5}),
                     MakeArgument("gamma", 0.1f)},
                    {0, 2, 3, 4, 5, 100}, {1, 1, 0.1, 0.1, 0.01, 0.01});
}

TEST(LearningRatePolicyTest, Gate) {
  ExpectMultipliers({MakeArgument("policy", "gate"), MakeArgument("multiplier_1", 0.25f),
                     MakeArgument("multiplier_2", 2.f), MakeArgument("num_iter", 5)},
                    {0, 4, 5, 100}, {0.25, 0.25, 2, 2});
  // Defaults: num_iter 0 (multiplier_2 from the start), multipliers 1.
  ExpectMultipliers({MakeArgument("policy", "gate"), MakeArgument("multiplier_1", 0.25f)}, {0, 7},
                    {1, 1});
}

TEST(LearningRatePolicyTest, Slope) {
  // 1 before 2, then down by 0.2 per iteration to 0.2 at 6, held there.
  ExpectMultipliers({MakeArgument("policy", "slope"), MakeArgument("num_iter_1", 2),
                     MakeArgument("multiplier_1", 1.f), MakeArgument("num_iter_2", 6),
                     MakeArgument("multiplier_2", 0.2f)},
                    {0, 1, 2, 3, 4, 5, 6, 7, 50}, {1, 1, 1, 0.8, 0.6, 0.4, 0.2, 0.2, 0.2});
  // Caffe2's max() makes an increasing slope a jump at num_iter_1.
  ExpectMultipliers({MakeArgument("policy", "slope"), MakeArgument("num_iter_1", 2),
                     MakeArgument("multiplier_1", 0.5f), MakeArgument("num_iter_2", 4),
                     MakeArgument("multiplier_2", 1.f)},
                    {1, 2, 3, 4}, {0.5, 1, 1, 1});
}

TEST(LearningRatePolicyTest, CosineFixedPeriod) {
  // period 4, max 1, min 0.2, shrink 0.5: 0.2 + 0.4 * (1 + cos(pi * t / 4)) * 0.5^restarts.
  const double c1 = 0.2 + 0.4 * (1 + std::cos(kPi / 4)), c3 = 0.2 + 0.4 * (1 - std::cos(kPi / 4));
  ExpectMultipliers({MakeArgument("policy", "cosine"), MakeArgument("max_lr", 1.f),
                     MakeArgument("min_lr", 0.2f), MakeArgument("period", 4),
                     MakeArgument("lr_shrink", 0.5f)},
                    {0, 1, 2, 3, 4, 6, 7, 8, 12},
                    {1, c1, 0.6, c3, 0.5, 0.3, 0.5 * c3, 0.25, 0.125});
  // Caffe2's defaults: max_lr 0.5, min_lr 0.1, period 50, t_mult 1, lr_shrink 0.99.
  ExpectMultipliers({MakeArgument("policy", "cosine")}, {0, 25, 49, 50, 75},
                    {0.5, 0.3, 0.1 + 0.2 * (1 + std::cos(kPi * 49 / 50)), 0.495, 0.99 * 0.3});
}

TEST(LearningRatePolicyTest, CosineGrowingPeriods) {
  // period 2, t_mult 2: cycles [0, 2), [2, 6), [6, 14), [14, 30); max 1, min 0, shrink 0.5.
  auto half_cos = [](double t, double len) { return 0.5 * (1 + std::cos(kPi * t / len)); };
  ExpectMultipliers({MakeArgument("policy", "cosine"), MakeArgument("max_lr", 1.f),
                     MakeArgument("min_lr", 0.f), MakeArgument("period", 2),
                     MakeArgument("t_mult", 2.f), MakeArgument("lr_shrink", 0.5f)},
                    {0, 1, 2, 3, 4, 5, 6, 10, 13, 14, 29, 30},
                    {1, 0.5, 0.5, 0.5 * half_cos(1, 4), 0.25, 0.5 * half_cos(3, 4), 0.25, 0.125,
                     0.25 * half_cos(7, 8), 0.125, 0.125 * half_cos(15, 16), 0.0625});
  // t_mult 10, period 1: restarts at 1, 11, 111. Caffe2's log formula puts 111 in cycle 2
  // (log(1000) / log(10) < 3), which would give 0 there instead of the restart at 0.5^3.
  ExpectMultipliers({MakeArgument("policy", "cosine"), MakeArgument("max_lr", 1.f),
                     MakeArgument("min_lr", 0.f), MakeArgument("period", 1),
                     MakeArgument("t_mult", 10.f), MakeArgument("lr_shrink", 0.5f)},
                    {0, 1, 11, 61, 110, 111, 1111},
                    {1, 0.5, 0.25, 0.25 * half_cos(50, 100), 0.25 * half_cos(99, 100), 0.125,
                     0.0625});
}

// torch.optim.lr_scheduler.CosineAnnealingLR's chainable update (what scheduler.step() computes).
std::vector<double> TorchCosineAnnealing(double lr, int64_t t_max, double eta_min, int64_t n) {
  std::vector<double> out{lr};
  const double T = static_cast<double>(t_max);
  for (int64_t t = 1; t < n; ++t) {
    const double prev = out.back();
    if ((t - 1 - t_max) % (2 * t_max) == 0) {
      out.push_back(prev + (lr - eta_min) * (1 - std::cos(kPi / T)) / 2);
    } else {
      out.push_back((1 + std::cos(kPi * t / T)) / (1 + std::cos(kPi * (t - 1) / T)) *
                        (prev - eta_min) + eta_min);
    }
  }
  return out;
}

TEST(LearningRatePolicyTest, CosineAnnealingLRMapping) {
  const double lr = 0.1, eta_min = 0.001;
  const int64_t t_max = 10;
  LearningRatePolicy cosine = MakePolicy(
      {MakeArgument("policy", "cosine"), MakeArgument("max_lr", 1.f),
       MakeArgument("min_lr", static_cast<float>(eta_min / lr)), MakeArgument("period", t_max),
       MakeArgument("lr_shrink", 1.f)});
  const std::vector<double> torch = TorchCosineAnnealing(lr, t_max, eta_min, t_max + 2);
  for (int64_t t = 0; t < t_max; ++t) {
    EXPECT_NEAR(lr * cosine(t), torch[t], 1e-8) << "iteration " << t;
  }
  // At T_max PyTorch reaches eta_min and turns back up; Caffe2 has restarted at lr.
  EXPECT_NEAR(torch[t_max], eta_min, 1e-8);
  EXPECT_NEAR(torch[t_max + 1], eta_min + (lr - eta_min) * (1 - std::cos(kPi / 10)) / 2, 1e-8);
  EXPECT_NEAR(lr * cosine(t_max), lr, 1e-8);
  EXPECT_NEAR(lr * cosine(t_max + 1), torch[1], 1e-8);
}

TEST(LearningRatePolicyTest, Cyclical) {
  // base 0.1, max 0.4 (peak multiplier 4), stepsize 4, decay 0.5: cycles of 8 iterations,
  // peaks at 4 + 8c of 1 + 3 * 0.5^c.
  const std::vector<int64_t> iters{0, 2, 4, 6, 8, 10, 12, 16, 20, 23};
  const std::vector<double> want{1, 2.5, 4, 2.5, 1, 1.75, 2.5, 1, 1.75, 1.1875};
  ExpectMultipliers({MakeArgument("policy", "cyclical"), MakeArgument("base_lr", 0.1f),
                     MakeArgument("max_lr", 0.4f), MakeArgument("stepsize", 4),
                     MakeArgument("decay", 0.5f)},
                    iters, want);
  // Magnitudes: a negative base_lr (nets that add the update) gives the same multipliers.
  ExpectMultipliers({MakeArgument("policy", "cyclical"), MakeArgument("base_lr", -0.1f),
                     MakeArgument("max_lr", 0.4f), MakeArgument("stepsize", 4),
                     MakeArgument("decay", 0.5f)},
                    iters, want);
  // Default decay 1 and max_lr 0.005: every peak at 0.005 / 0.001 = 5.
  ExpectMultipliers({MakeArgument("policy", "cyclical"), MakeArgument("base_lr", 0.001f),
                     MakeArgument("stepsize", 2)},
                    {0, 1, 2, 4, 6, 102}, {1, 3, 5, 1, 5, 5});
}

TEST(LearningRatePolicyTest, ConstantThenLinearWarmup) {
  ExpectMultipliers({MakeArgument("policy", "constantThenLinearWarmup"),
                     MakeArgument("start_warmup_multiplier", 0.2f),
                     MakeArgument("constant_warmup_num_iter", 3),
                     MakeArgument("linear_warmup_num_iter", 4)},
                    {0, 2, 3, 4, 5, 6, 7, 50}, {0.2, 0.2, 0.2, 0.4, 0.6, 0.8, 1, 1});
  // Caffe2's defaults: 0.1 for 1e7 iterations, then up to 1 over the next 1e7.
  ExpectMultipliers({MakeArgument("policy", "constantThenLinearWarmup")},
                    {0, 9999999, 10000000, 15000000, 20000000}, {0.1, 0.1, 0.1, 0.55, 1});
}

std::vector<Argument> ThreeStages() {
  // Stage 0: fixed x2 for iterations 1..3; stage 1: exp 0.9 for 4..7; stage 2: step (4, 0.5) x3
  // from 8 on. Stages see the absolute iteration.
  return {MakeArgument("policy", "composite"),
          MakeArgument("sub_policy_num_iters", std::vector<int64_t>{3, 4, 2}),
          MakeArgument("sub_policy_0_policy", "fixed"),
          MakeArgument("sub_policy_0_lr_scale", 2.f),
          MakeArgument("sub_policy_1_policy", "exp"),
          MakeArgument("sub_policy_1_gamma", 0.9f),
          MakeArgument("sub_policy_2_policy", "step"),
          MakeArgument("sub_policy_2_stepsize", 4),
          MakeArgument("sub_policy_2_gamma", 0.5f),
          MakeArgument("sub_policy_2_lr_scale", 3.f)};
}

TEST(LearningRatePolicyTest, Composite) {
  ExpectMultipliers(ThreeStages(), {0, 1, 3, 4, 7, 8, 11, 12, 16},
                    {2, 2, 2, 0.6561, 0.4782969, 0.75, 0.75, 0.375, 0.1875});
  // A stage reads its prefixed arguments (not the unprefixed stepsize); a cyclical stage is
  // relative to the op's base_lr.
  ExpectMultipliers({MakeArgument("policy", "composite"), MakeArgument("base_lr", 0.1f),
                     MakeArgument("stepsize", 100),
                     MakeArgument("sub_policy_num_iters", std::vector<int64_t>{5}),
                     MakeArgument("sub_policy_0_policy", "cyclical"),
                     MakeArgument("sub_policy_0_max_lr", 0.3f),
                     MakeArgument("sub_policy_0_stepsize", 2)},
                    {0, 1, 2, 4, 6}, {1, 2, 3, 1, 3});
}

TEST(LearningRatePolicyTest, BadArguments) {
  ExpectError({}, "`policy`");
  ExpectError({}, "linearWarmup");
  ExpectError({MakeArgument("policy", "step"), MakeArgument("gamma", 0.5f)},
              "LearningRate policy 'step' needs stepsize > 0, got 0");
  ExpectError({MakeArgument("policy", "exp")}, "gamma > 0");
  ExpectError({MakeArgument("policy", "poly"), MakeArgument("power", 1.f)},
              "max_iter > 0, got -1");
  ExpectError({MakeArgument("policy", "alter")}, "active_period");
  ExpectError({MakeArgument("policy", "multistep"), MakeArgument("gamma", 0.1f)}, "stepsizes");
  ExpectError({MakeArgument("policy", "multistep"), MakeArgument("gamma", 0.1f),
               MakeArgument("stepsizes", std::vector<int64_t>{5, 3})},
              "increasing order, got [5, 3]");
  ExpectError({MakeArgument("policy", "gate"), MakeArgument("num_iter", -1)},
              "LearningRate policy 'gate' needs num_iter >= 0, got -1");
  ExpectError({MakeArgument("policy", "slope")},
              "LearningRate policy 'slope' needs num_iter_1 > 0, got 0");
  ExpectError({MakeArgument("policy", "slope"), MakeArgument("num_iter_1", 5),
               MakeArgument("num_iter_2", 5)},
              "needs num_iter_2 > num_iter_1 = 5, got 5");
  ExpectError({MakeArgument("policy", "cosine"), MakeArgument("period", 0)},
              "LearningRate policy 'cosine' needs period > 0, got 0");
  ExpectError({MakeArgument("policy", "cosine"), MakeArgument("t_mult", 0.5f)},
              "needs t_mult >= 1");
  ExpectError({MakeArgument("policy", "cosine"), MakeArgument("max_lr", 0.05f)},
              "needs max_lr >= min_lr = 0.1, got 0.05");
  ExpectError({MakeArgument("policy", "cyclical"), MakeArgument("base_lr", 0.001f)},
              "LearningRate policy 'cyclical' needs stepsize > 0, got 0");
  ExpectError({MakeArgument("policy", "cyclical"), MakeArgument("stepsize", 2)},
              "needs base_lr != 0");
  ExpectError({MakeArgument("policy", "cyclical"), MakeArgument("stepsize", 2),
               MakeArgument("base_lr", -0.1f), MakeArgument("max_lr", 0.05f)},
              "needs max_lr in absolute value >= |base_lr| = 0.1, got 0.05");
  ExpectError({MakeArgument("policy", "constantThenLinearWarmup"),
               MakeArgument("linear_warmup_num_iter", -2)},
              "needs linear_warmup_num_iter >= 0, got -2");
}

TEST(LearningRatePolicyTest, UnknownPolicyListsAll) {
  const std::string e = PolicyError({MakeArgument("policy", "cosin")});
  EXPECT_NE(e.find("unknown LearningRate policy 'cosin'"), std::string::npos) << e;
  EXPECT_NE(e.find("fixed, step, exp"), std::string::npos) << e;
  for (const char* name : {"gate", "slope", "cosine", "cyclical", "constantThenLinearWarmup",
                           "composite", "multistep"}) {
    EXPECT_NE(e.find(name), std::string::npos) << name << " missing from: " << e;
  }
  EXPECT_EQ(LearningRatePolicy::KnownPolicies().size(), 16u);
}

TEST(LearningRatePolicyTest, CompositeErrors) {
  auto with = [](std::vector<Argument> args, const Argument& extra) {
    for (auto& a : args) {
      if (a.name() == extra.name()) a = extra;
    }
    return args;
  };
  ExpectError({MakeArgument("policy", "composite")},
              "LearningRate policy 'composite' needs sub_policy_num_iters (ints: one length per "
              "stage), got none");
  ExpectError(with(ThreeStages(), MakeArgument("sub_policy_num_iters",
                                               std::vector<int64_t>{3, 0, 2})),
              "needs sub_policy_num_iters entries > 0, got [3, 0, 2]");
  ExpectError(with(ThreeStages(), MakeArgument("sub_policy_1_policy", "composite")),
              "composite stage 1 (sub_policy_1_policy) cannot be composite");
  ExpectError(with(ThreeStages(), MakeArgument("sub_policy_0_policy", "cosin")),
              "unknown LearningRate policy 'cosin' (composite stage 0); known policies: fixed");
  ExpectError(with(ThreeStages(), MakeArgument("sub_policy_2_stepsize", 0)),
              "LearningRate policy 'step' (composite stage 2) needs sub_policy_2_stepsize > 0, "
              "got 0");
  // A stage without its policy (only two of three given).
  std::vector<Argument> two;
  for (const auto& a : ThreeStages()) {
    if (a.name() != "sub_policy_2_policy") two.push_back(a);
  }
  ExpectError(two, "LearningRate (composite stage 2) needs the argument `sub_policy_2_policy`");
}

TEST(LearningRatePolicyTest, WarmupRampsAnyPolicy) {
  const std::vector<Argument> warm{MakeArgument("warmup_iters", 4),
                                   MakeArgument("warmup_start", 0.2f)};
  auto plus_warmup = [&](std::vector<Argument> args) {
    args.insert(args.end(), warm.begin(), warm.end());
    return args;
  };
  ExpectMultipliers(plus_warmup({MakeArgument("policy", "step"), MakeArgument("stepsize", 10),
                                 MakeArgument("gamma", 0.5f)}),
                    {0, 2, 4, 10}, {0.2, 0.6, 1.0, 0.5});
  // On top of a whole composite (stage 0 is 2), and of cosine (period 4, max 1, min 0.2).
  ExpectMultipliers(plus_warmup(ThreeStages()), {0, 2, 3, 4}, {0.4, 1.2, 1.6, 0.6561});
  ExpectMultipliers(plus_warmup({MakeArgument("policy", "cosine"), MakeArgument("max_lr", 1.f),
                                 MakeArgument("min_lr", 0.2f), MakeArgument("period", 4)}),
                    {0, 2, 4}, {0.2, 0.6 * 0.6, 0.99});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
