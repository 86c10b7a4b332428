#include <gtest/gtest.h>

#include <cmath>

#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

// Straightforward reference: channel of flat element i, per-channel batch statistics.
struct Ref {
  Ref(const std::vector<int64_t>& dims, bool nhwc) : nhwc(nhwc) {
    N = dims[0];
    C = nhwc ? dims.back() : dims[1];
    int64_t total = 1;
    for (int64_t d : dims) total *= d;
    S = total / (N * C);
  }
  int64_t Channel(int64_t i) const { return nhwc ? i % C : (i / S) % C; }
  void Stats(const Tensor& X, std::vector<double>* mean, std::vector<double>* var) const {
    mean->assign(C, 0.0);
    var->assign(C, 0.0);
    const float* x = X.data<float>();
    for (int64_t i = 0; i < X.numel(); ++i) (*mean)[Channel(i)] += x[i];
    for (auto& m : *mean) m /= static_cast<double>(N * S);
    for (int64_t i = 0; i < X.numel(); ++i) {
      double d = x[i] - (*mean)[Channel(i)];
      (*var)[Channel(i)] += d * d;
    }
    for (auto& v : *var) v /= static_cast<double>(N * S);
  }
  std::vector<float> Normalize(const Tensor& X, const std::vector<double>& mean,
                               const std::vector<double>& var, const Tensor& scale,
                               const Tensor& bias, double eps) const {
    std::vector<float> y;
    for (int64_t i = 0; i < X.numel(); ++i) {
      const int64_t c = Channel(i);
      y.push_back(static_cast<float>((X.data<float>()[i] - mean[c]) / std::sqrt(var[c] + eps) *
                                         scale.data<float>()[c] +
                                     bias.data<float>()[c]));
    }
    return y;
  }
  bool nhwc;
  int64_t N, C, S;
};

OperatorDef TrainDef(const std::string& order, std::vector<Argument> extra = {}) {
  extra.push_back(MakeArgument("order", order));
  return MakeOperatorDef("SpatialBN", "bn", {"X", "scale", "bias", "rm", "rv"},
                         {"Y", "rm", "rv", "saved_mean", "saved_var"}, extra);
}

OperatorDef TestDef(const std::string& order, std::vector<Argument> extra = {}) {
  extra.push_back(MakeArgument("order", order));
  extra.push_back(MakeArgument("is_test", 1));
  return MakeOperatorDef("SpatialBN", "bn", {"X", "scale", "bias", "mean", "var"}, {"Y"}, extra);
}

std::vector<int64_t> Dims(const std::string& order, std::vector<int64_t> nchw) {
  if (order == "NCHW") return nchw;
  std::vector<int64_t> d{nchw[0]};
  d.insert(d.end(), nchw.begin() + 2, nchw.end());
  d.push_back(nchw[1]);
  return d;
}

std::map<std::string, Tensor> Inputs(const std::vector<int64_t>& x_dims, int64_t C, uint32_t seed) {
  return {{"X", RandomTensor(x_dims, seed, -2.f, 3.f)},
          {"scale", RandomTensor({C}, seed + 1, 0.5f, 1.5f)},
          {"bias", RandomTensor({C}, seed + 2)},
          {"rm", RandomTensor({C}, seed + 3)},
          {"rv", RandomTensor({C}, seed + 4, 0.5f, 2.f)},
          {"mean", RandomTensor({C}, seed + 5)},
          {"var", RandomTensor({C}, seed + 6, 0.1f, 2.f)}};
}

std::vector<float> AsFloats(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

TEST(SpatialBNOpTest, TrainingMatchesNaiveBothOrdersAllRanks) {
  for (std::string order : {"NCHW", "NHWC"}) {
    for (std::vector<int64_t> nchw :
         std::vector<std::vector<int64_t>>{{4, 3, 5}, {2, 3, 7, 9}, {2, 5, 3, 4, 3}}) {
      SCOPED_TRACE(order + " " + DimsString(nchw));
      const auto dims = Dims(order, nchw);
      const int64_t C = nchw[1];
      auto in = Inputs(dims, C, 11);
      const float momentum = 0.75f, eps = 1e-3f;
      Workspace ws;
      RunOp(TrainDef(order, {MakeArgument("momentum", momentum), MakeArgument("epsilon", eps)}), in,
            &ws);
      Ref ref(dims, order == "NHWC");
      std::vector<double> mean, var;
      ref.Stats(in["X"], &mean, &var);
      EXPECT_EQ(ws.GetTensor("Y").dims(), dims);
      ExpectNear(ToFloatVector(ws.GetTensor("Y")),
                 ref.Normalize(in["X"], mean, var, in["scale"], in["bias"], eps), 1e-5f, 1e-5f,
                 "Y");
      ExpectNear(ToFloatVector(ws.GetTensor("saved_mean")), AsFloats(mean), 1e-6f, 1e-6f,
                 "saved_mean");
      std::vector<float> inv_std, rm, rv;
      for (int64_t c = 0; c < C; ++c) {
        inv_std.push_back(static_cast<float>(1.0 / std::sqrt(var[c] + eps)));
        rm.push_back(in["rm"].data<float>()[c] * momentum + mean[c] * (1 - momentum));
        rv.push_back(in["rv"].data<float>()[c] * momentum + var[c] * (1 - momentum));
      }
      ExpectNear(ToFloatVector(ws.GetTensor("saved_var")), inv_std, 1e-6f, 1e-5f,
                 "saved_var (inverse std)");
      ExpectNear(ToFloatVector(ws.GetTensor("rm")), rm, 1e-6f, 1e-5f, "running mean");
      ExpectNear(ToFloatVector(ws.GetTensor("rv")), rv, 1e-6f, 1e-5f, "running var");
    }
  }
}

// unbiased_running_var=1: the running variance takes the unbiased batch variance (PyTorch's
// rule), on the default op (NCHW) and the DNNL engine (NHWC 4-D) alike; Y is unchanged.
TEST(SpatialBNOpTest, UnbiasedRunningVarIsPyTorchs) {
  for (std::string order : {"NCHW", "NHWC"}) {
    SCOPED_TRACE(order);
    const auto dims = Dims(order, {2, 3, 2, 3});
    auto in = Inputs(dims, 3, 17);
    const float momentum = 0.9f;
    Workspace biased, unbiased;
    RunOp(TrainDef(order, {MakeArgument("momentum", momentum)}), in, &biased);
    RunOp(TrainDef(order, {MakeArgument("momentum", momentum),
                           MakeArgument("unbiased_running_var", 1)}),
          in, &unbiased);
    Ref ref(dims, order == "NHWC");
    std::vector<double> mean, var;
    ref.Stats(in["X"], &mean, &var);
    const double M = 2 * 2 * 3;
    std::vector<float> rv;
    for (int64_t c = 0; c < 3; ++c) {
      rv.push_back(static_cast<float>(in["rv"].data<float>()[c] * momentum +
                                      var[c] * M / (M - 1) * (1 - momentum)));
    }
    ExpectNear(ToFloatVector(unbiased.GetTensor("rv")), rv, 1e-6f, 1e-5f, "running var");
    ExpectNear(ToFloatVector(unbiased.GetTensor("Y")), ToFloatVector(biased.GetTensor("Y")), 0.f,
               0.f, "Y");
    ExpectNear(ToFloatVector(unbiased.GetTensor("rm")), ToFloatVector(biased.GetTensor("rm")), 0.f,
               0.f, "running mean");
  }
}

TEST(SpatialBNOpTest, TestModeMatchesNaiveBothOrders) {
  for (std::string order : {"NCHW", "NHWC"}) {
    SCOPED_TRACE(order);
    const auto dims = Dims(order, {2, 3, 7, 9});
    auto in = Inputs(dims, 3, 21);
    std::vector<double> mean, var;
    for (int c = 0; c < 3; ++c) {
      mean.push_back(in["mean"].data<float>()[c]);
      var.push_back(in["var"].data<float>()[c]);
    }
    Ref ref(dims, order == "NHWC");
    ExpectNear(RunAndGet(TestDef(order), in),
               ref.Normalize(in["X"], mean, var, in["scale"], in["bias"], 1e-5), 1e-5f, 1e-5f);
  }
}

TEST(SpatialBNOpTest, RunningStatsAccumulateOverRuns) {
  // Two runs on the same batch: running = r0 * m^2 + b * (1 - m^2).
  const auto dims = Dims("NCHW", {3, 2, 4, 5});
  auto in = Inputs(dims, 2, 31);
  Workspace ws;
  for (const auto& kv : in) SetInput(&ws, kv.first, kv.second);
  auto op = CreateOperator(TrainDef("NCHW"), &ws);
  op->Run(0);
  op->Run(0);
  std::vector<double> mean, var;
  Ref(dims, false).Stats(in["X"], &mean, &var);
  for (int c = 0; c < 2; ++c) {
    EXPECT_NEAR(ws.GetTensor("rm").data<float>()[c],
                in["rm"].data<float>()[c] * 0.81 + mean[c] * 0.19, 1e-5);
    EXPECT_NEAR(ws.GetTensor("rv").data<float>()[c],
                in["rv"].data<float>()[c] * 0.81 + var[c] * 0.19, 1e-5);
  }
}

TEST(SpatialBNOpTest, EmptyRunningStatsStartAtZero) {
  const auto dims = Dims("NHWC", {2, 4, 3, 3});
  auto in = Inputs(dims, 4, 41);
  std::vector<double> mean, var;
  Ref(dims, true).Stats(in["X"], &mean, &var);
  // rm: a blob that holds nothing; rv: a tensor without data.
  Workspace ws;
  for (const char* name : {"X", "scale", "bias"}) SetInput(&ws, name, in[name]);
  ws.CreateBlob("rm");
  ws.CreateTensor("rv");
  CreateOperator(TrainDef("NHWC"), &ws)->Run(0);
  ASSERT_EQ(ws.GetTensor("rm").dims(), (std::vector<int64_t>{4}));
  ASSERT_EQ(ws.GetTensor("rv").dims(), (std::vector<int64_t>{4}));
  for (int c = 0; c < 4; ++c) {
    EXPECT_NEAR(ws.GetTensor("rm").data<float>()[c], mean[c] * 0.1, 1e-6);
    EXPECT_NEAR(ws.GetTensor("rv").data<float>()[c], var[c] * 0.1, 1e-6);
  }
}

TEST(SpatialBNOpTest, InPlaceXY) {
  const auto dims = Dims("NCHW", {2, 3, 4, 5});
  auto in = Inputs(dims, 3, 51);
  Workspace ws, ws_ref;
  RunOp(TrainDef("NCHW"), in, &ws_ref);
  auto def = MakeOperatorDef("SpatialBN", "", {"X", "scale", "bias", "rm", "rv"},
                             {"X", "rm", "rv", "sm", "sv"});
  RunOp(def, in, &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("X")), ToFloatVector(ws_ref.GetTensor("Y")));
  auto tdef = TestDef("NCHW");
  tdef.set_output(0, "X");
  EXPECT_EQ(RunAndGet(tdef, in), RunAndGet(TestDef("NCHW"), in));
}

TEST(SpatialBNOpTest, GradientMakerPerMode) {
  std::vector<GradientWrapper> g(5);
  g[0].dense = "Y_grad";
  auto train = GetGradientForOp(TrainDef("NCHW"), g);
  ASSERT_EQ(train.ops.size(), 1u);
  const auto& op = train.ops[0];
  EXPECT_EQ(op.type(), "SpatialBNGradient");
  EXPECT_EQ(std::vector<std::string>(op.input().begin(), op.input().end()),
            (std::vector<std::string>{"X", "scale", "Y_grad", "saved_mean", "saved_var"}));
  EXPECT_EQ(std::vector<std::string>(op.output().begin(), op.output().end()),
            (std::vector<std::string>{"X_grad", "scale_grad", "bias_grad"}));
  std::vector<GradientWrapper> g1(1);
  g1[0].dense = "Y_grad";
  auto test = GetGradientForOp(TestDef("NCHW"), g1);
  ASSERT_EQ(test.ops.size(), 1u);
  EXPECT_EQ(std::vector<std::string>(test.ops[0].input().begin(), test.ops[0].input().end()),
            (std::vector<std::string>{"X", "scale", "Y_grad", "mean", "var"}));
}

TEST(SpatialBNOpTest, TrainingGradients) {
  // Loss on Y only: the checker seeds zero gradients for the statistics outputs.
  GradientCheckOptions opts;
  opts.max_elements = 150;
  for (std::string order : {"NCHW", "NHWC"}) {
    SCOPED_TRACE(order);
    const auto dims = Dims(order, {2, 3, 7, 9});
    auto in = Inputs(dims, 3, 61);
    for (int i = 0; i < 3; ++i) GradientChecker(opts).Check(TrainDef(order), in, i, 0);
  }
}

TEST(SpatialBNOpTest, TrainingGradients5D) {
  GradientCheckOptions opts;
  opts.max_elements = 100;
  const auto dims = Dims("NHWC", {2, 2, 3, 2, 3});
  auto in = Inputs(dims, 2, 65);
  for (int i = 0; i < 3; ++i) GradientChecker(opts).Check(TrainDef("NHWC"), in, i, 0);
}

TEST(SpatialBNOpTest, TestModeGradients) {
  GradientCheckOptions opts;
  opts.max_elements = 150;
  for (std::string order : {"NCHW", "NHWC"}) {
    SCOPED_TRACE(order);
    const auto dims = Dims(order, {2, 3, 7, 9});
    auto in = Inputs(dims, 3, 71);
    for (int i = 0; i < 3; ++i) GradientChecker(opts).Check(TestDef(order), in, i, 0);
  }
}

TEST(SpatialBNOpTest, Fp16MatchesFp32) {
  for (std::string order : {"NCHW", "NHWC"}) {
    SCOPED_TRACE(order);
    const auto dims = Dims(order, {2, 3, 7, 9});
    auto in = Inputs(dims, 3, 81);
    CheckFp16MatchesFp32(TrainDef(order), in, {"X"}, {0, 1, 2, 3, 4});
    CheckFp16MatchesFp32(TestDef(order), in, {"X"});
    // Gradient, training form (saved mean + inverse std) and test form (mean + var).
    std::map<std::string, Tensor> gin{{"X", in["X"]},
                                      {"scale", in["scale"]},
                                      {"dY", RandomTensor(dims, 82)},
                                      {"sm", RandomTensor({3}, 83, 0.f, 1.f)},
                                      {"sv", RandomTensor({3}, 84, 0.5f, 1.5f)}};
    auto gdef = MakeOperatorDef("SpatialBNGradient", "", {"X", "scale", "dY", "sm", "sv"},
                                {"dX", "dscale", "dbias"}, {MakeArgument("order", order)});
    CheckFp16MatchesFp32(gdef, gin, {"X", "dY"}, {0, 1, 2}, 5e-3f, 4e-3f);
    SetArgument(&gdef, "is_test", 1);
    CheckFp16MatchesFp32(gdef, gin, {"X", "dY"}, {0, 1, 2}, 5e-3f, 4e-3f);
  }
}

TEST(SpatialBNOpTest, Fp16KeepsTypes) {
  const auto dims = Dims("NCHW", {2, 3, 4, 4});
  auto in = Inputs(dims, 3, 91);
  in["X"] = ToHalf(in["X"]);
  Workspace ws;
  RunOp(TrainDef("NCHW"), in, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dtype(), DataType::FLOAT16);
  for (const char* s : {"rm", "rv", "saved_mean", "saved_var"}) {
    EXPECT_EQ(ws.GetTensor(s).dtype(), DataType::FLOAT) << s;
  }
}

TEST(SpatialBNOpTest, BadInputs) {
  const auto dims = Dims("NCHW", {2, 3, 4, 4});
  auto in = Inputs(dims, 3, 101);
  {
    auto bad = in;
    bad["scale"] = RandomTensor({4}, 1);
    ExpectError(TrainDef("NCHW"), bad, "scale must have dims [3]");
    ExpectError(TestDef("NCHW"), bad, "got [4]");
  }
  {
    auto bad = in;
    bad["bias"] = ToHalf(in["bias"]);
    ExpectError(TrainDef("NCHW"), bad, "bias must be float");
    bad = in;
    bad["var"] = ToHalf(in["var"]);
    ExpectError(TestDef("NCHW"), bad, "var must be float");
    bad = in;
    bad["rm"] = RandomTensor({5}, 2);
    ExpectError(TrainDef("NCHW"), bad, "must have 3 elements");
  }
  ExpectError(TrainDef("NCHW", {MakeArgument("epsilon", 0.f)}), in,
                      "'epsilon' must be > 0, got 0");
  ExpectError(TestDef("NCHW", {MakeArgument("epsilon", -1e-3f)}), in,
                      "'epsilon' must be > 0");
  ExpectError(TrainDef("NHCW"), in, "'order' must be");
  ExpectError(TrainDef("NCHW", {MakeArgument("num_batches", 2)}), in,
                      "num_batches = 2 is not supported");
  ExpectError(TrainDef("NCHW", {MakeArgument("momentum", 1.5f)}), in, "'momentum'");
  // Output count must match the mode.
  auto test5 = TrainDef("NCHW", {MakeArgument("is_test", 1)});
  ExpectError(test5, in, "test mode (is_test=1) takes 1 output (Y), got 5");
  auto train1 = TestDef("NCHW");
  SetArgument(&train1, "is_test", 0);
  ExpectError(train1, in, "training mode (is_test=0) takes 5 outputs");
  // Running statistics must be updated in place.
  auto not_inplace = TrainDef("NCHW");
  not_inplace.set_output(1, "rm_out");
  ExpectError(not_inplace, in, "must be the same blob");
  // Rank.
  auto flat = in;
  flat["X"] = RandomTensor({6, 3}, 3);
  ExpectError(TrainDef("NHWC"), flat, "3 to 5 dims, got [6, 3]");
  // Gradient op: dY shape and epsilon.
  std::map<std::string, Tensor> gin{{"X", in["X"]},
                                    {"scale", in["scale"]},
                                    {"dY", RandomTensor({2, 3, 4, 5}, 4)},
                                    {"sm", in["mean"]},
                                    {"sv", in["var"]}};
  ExpectError(MakeOperatorDef("SpatialBNGradient", "", {"X", "scale", "dY", "sm", "sv"},
                                      {"dX", "dscale", "dbias"}),
                      gin, "dY must have the shape of X [2, 3, 4, 4], got [2, 3, 4, 5]");
  gin["dY"] = RandomTensor(dims, 5);
  ExpectError(MakeOperatorDef("SpatialBNGradient", "", {"X", "scale", "dY", "sm", "sv"},
                                      {"dX", "dscale", "dbias"}, {MakeArgument("epsilon", 0.f)}),
                      gin, "'epsilon' must be > 0");
}

TEST(SpatialBNOpTest, SchemaShapesAndCost) {
  const OpSchema* s = OpSchemaRegistry::Schema("SpatialBN");
  ASSERT_NE(s, nullptr);
  std::vector<TensorShape> in{{{8, 5, 6, 16}, DataType::FLOAT16}};
  for (int i = 0; i < 4; ++i) in.push_back({{16}, DataType::FLOAT});
  auto out = s->InferShapes(TrainDef("NHWC"), in);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{8, 5, 6, 16}));
  EXPECT_EQ(out[0].dtype, DataType::FLOAT16);
  for (int o = 1; o < 5; ++o) {
    EXPECT_EQ(out[o].dims, (std::vector<int64_t>{16}));
    EXPECT_EQ(out[o].dtype, DataType::FLOAT);
  }
  EXPECT_GT(s->InferCost(TrainDef("NHWC"), in).flops, 8.0 * 5 * 6 * 16);
  const OpSchema* g = OpSchemaRegistry::Schema("SpatialBNGradient");
  ASSERT_NE(g, nullptr);
  auto gout = g->InferShapes(TrainDef("NCHW"), in);
  EXPECT_EQ(gout[1].dims, (std::vector<int64_t>{5}));
}

// Training: a NaN in channel 1 poisons that channel's statistics, so all of its outputs are
// NaN, and no other channel's. Inference: only the element itself.
TEST(SpatialBNOpTest, NaNPropagates) {
  const std::map<std::string, Tensor> in{{"X", RandomTensor({2, 3, 2, 2}, 1)},
                                         {"scale", RandomTensor({3}, 2, 0.5f, 1.5f)},
                                         {"bias", RandomTensor({3}, 3)},
                                         {"rm", RandomTensor({3}, 4)},
                                         {"rv", RandomTensor({3}, 5, 0.5f, 1.5f)}};
  ExpectNaNPropagates(TrainDef("NCHW"), in, "X", 5, "Y", {4, 5, 6, 7, 16, 17, 18, 19});
  std::map<std::string, Tensor> test_in = in;
  test_in["mean"] = in.at("rm");
  test_in["var"] = in.at("rv");
  ExpectNaNPropagates(TestDef("NCHW"), test_in, "X", 5, "Y", {5});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
