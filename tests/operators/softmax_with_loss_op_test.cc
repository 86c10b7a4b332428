#include <gtest/gtest.h>

#include <cmath>

#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

struct NaiveResult {
  std::vector<float> p;
  float loss;
};

// Softmax + weighted cross-entropy in double, straight from the definition. `labels` are class
// indices, or (label_prob) an (N, D) distribution; empty weights mean all ones.
NaiveResult NaiveSoftmaxWithLoss(const std::vector<float>& x, int64_t N, int64_t D,
                                 const std::vector<int32_t>& labels,
                                 const std::vector<float>& label_prob,
                                 const std::vector<float>& weights, float scale) {
  NaiveResult r;
  r.p.resize(x.size());
  double total = 0, wsum = 0;
  for (int64_t i = 0; i < N; ++i) {
    double mx = x[i * D];
    for (int64_t j = 1; j < D; ++j) mx = std::max<double>(mx, x[i * D + j]);
    double sum = 0;
    for (int64_t j = 0; j < D; ++j) sum += std::exp(x[i * D + j] - mx);
    double li = 0;
    for (int64_t j = 0; j < D; ++j) {
      double p = std::exp(x[i * D + j] - mx) / sum;
      r.p[i * D + j] = static_cast<float>(p);
      if (label_prob.empty()) {
        if (j == labels[i]) li = -std::log(p);
      } else {
        li -= label_prob[i * D + j] * std::log(p);
      }
    }
    double w = weights.empty() ? 1.0 : weights[i];
    total += w * li;
    wsum += w;
  }
  r.loss = wsum == 0 ? 0.f : static_cast<float>(total * scale / wsum);
  return r;
}

// Rows of non-negative values that sum to 1.
Tensor RandomDistributions(int64_t N, int64_t D, uint32_t seed) {
  Tensor t = RandomTensor({N, D}, seed, 0.05f, 1.f);
  float* d = t.mutable_data<float>();
  for (int64_t i = 0; i < N; ++i) {
    float s = 0;
    for (int64_t j = 0; j < D; ++j) s += d[i * D + j];
    for (int64_t j = 0; j < D; ++j) d[i * D + j] /= s;
  }
  return t;
}

std::string ErrorOf(const OperatorDef& def, const std::map<std::string, Tensor>& in) {
  Workspace ws;
  try {
    RunOp(def, in, &ws);
  } catch (const EnforceNotMet& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error from " << def.type();
  return "";
}

TEST(SoftmaxWithLossOpTest, MatchesNaive) {
  Tensor X = RandomTensor({5, 7}, 1, -3.f, 3.f);
  std::vector<int32_t> labels{0, 6, 3, 2, 6};
  for (std::vector<int64_t> ldims : {std::vector<int64_t>{5}, std::vector<int64_t>{5, 1}}) {
    auto def = MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L"}, {"P", "loss"});
    Workspace ws;
    RunOp(def, {{"X", X}, {"L", IntTensor(ldims, labels)}}, &ws);
    auto want = NaiveSoftmaxWithLoss(ToFloatVector(X), 5, 7, labels, {}, {}, 1.f);
    EXPECT_EQ(ws.GetTensor("P").dims(), X.dims());
    EXPECT_EQ(ws.GetTensor("loss").ndim(), 0);
    EXPECT_EQ(ws.GetTensor("loss").dtype(), DataType::FLOAT);
    ExpectNear(ToFloatVector(ws.GetTensor("P")), want.p, 1e-7f, 1e-5f, "P");
    ExpectNear(ToFloatVector(ws.GetTensor("loss")), {want.loss}, 1e-6f, 1e-5f, "loss");
  }
}

TEST(SoftmaxWithLossOpTest, WeightsAndScale) {
  Tensor X = RandomTensor({4, 6}, 2, -3.f, 3.f);
  std::vector<int32_t> labels{5, 0, 1, 1};
  std::vector<float> w{0.5f, 2.f, 0.f, 1.25f};
  auto def = MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L", "W"}, {"P", "loss"},
                             {MakeArgument("scale", 0.25f)});
  auto loss =
      RunAndGet(def, {{"X", X}, {"L", IntTensor({4}, labels)}, {"W", FloatTensor({4}, w)}}, 1);
  auto want = NaiveSoftmaxWithLoss(ToFloatVector(X), 4, 6, labels, {}, w, 0.25f);
  ExpectNear(loss, {want.loss}, 1e-6f, 1e-5f);
}

TEST(SoftmaxWithLossOpTest, ZeroWeightsGiveZeroLossAndGradient) {
  auto def = MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L", "W"}, {"P", "loss"});
  std::map<std::string, Tensor> in{{"X", RandomTensor({3, 4}, 3)},
                                   {"L", IntTensor({3}, {1, 2, 3})},
                                   {"W", FloatTensor({3}, {0.f, 0.f, 0.f})}};
  Workspace ws;
  RunOp(def, in, &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("loss")), std::vector<float>{0.f});
  SetInput(&ws, "dloss", FloatTensor({}, {1.f}));
  auto gdef = MakeOperatorDef("SoftmaxWithLossGradient", "", {"X", "L", "W", "P", "dloss"}, {"dX"});
  RunOp(gdef, {}, &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("dX")), std::vector<float>(12, 0.f));
}

TEST(SoftmaxWithLossOpTest, AxisTwo) {
  Tensor X = RandomTensor({2, 3, 4}, 4, -2.f, 2.f);
  std::vector<int32_t> labels{0, 1, 2, 3, 3, 0};
  auto def =
      MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L"}, {"P", "loss"}, {MakeArgument("axis", 2)});
  auto want = NaiveSoftmaxWithLoss(ToFloatVector(X), 6, 4, labels, {}, {}, 1.f);
  for (std::vector<int64_t> ldims : {std::vector<int64_t>{2, 3}, std::vector<int64_t>{6}}) {
    auto loss = RunAndGet(def, {{"X", X}, {"L", IntTensor(ldims, labels)}}, 1);
    ExpectNear(loss, {want.loss}, 1e-6f, 1e-5f);
  }
}

TEST(SoftmaxWithLossOpTest, LabelProb) {
  Tensor X = RandomTensor({4, 5}, 5, -2.f, 2.f);
  Tensor L = RandomDistributions(4, 5, 6);
  std::vector<float> w{1.f, 0.5f, 2.f, 1.f};
  auto def = MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L", "W"}, {"P", "loss"},
                             {MakeArgument("label_prob", 1), MakeArgument("scale", 2.f)});
  auto loss = RunAndGet(def, {{"X", X}, {"L", L}, {"W", FloatTensor({4}, w)}}, 1);
  auto want = NaiveSoftmaxWithLoss(ToFloatVector(X), 4, 5, {}, ToFloatVector(L), w, 2.f);
  ExpectNear(loss, {want.loss}, 1e-6f, 1e-5f);
}

TEST(SoftmaxWithLossOpTest, LargeLogitsStayFinite) {
  auto def = MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L"}, {"P", "loss"});
  auto loss =
      RunAndGet(def, {{"X", FloatTensor({1, 2}, {1000.f, 0.f})}, {"L", IntTensor({1}, {1})}}, 1);
  ExpectNear(loss, {1000.f}, 1e-3f, 1e-6f);
}

TEST(SoftmaxWithLossOpTest, GradientWrtLogits) {
  std::map<std::string, Tensor> in{{"X", RandomTensor({5, 7}, 7, -2.f, 2.f)},
                                   {"L", IntTensor({5}, {0, 6, 3, 2, 6})},
                                   {"W", FloatTensor({5}, {1.f, 0.5f, 2.f, 0.f, 1.5f})}};
  GradientChecker checker;
  checker.Check(MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L"}, {"P", "loss"}), in, 0, 1);
  checker.Check(MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L", "W"}, {"P", "loss"},
                                {MakeArgument("scale", 3.f)}),
                in, 0, 1);
}

TEST(SoftmaxWithLossOpTest, GradientWithAxisAndLabelProb) {
  GradientChecker checker;
  checker.Check(
      MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L"}, {"P", "loss"}, {MakeArgument("axis", 2)}),
      {{"X", RandomTensor({2, 3, 5}, 8, -2.f, 2.f)}, {"L", IntTensor({2, 3}, {4, 0, 1, 2, 3, 4})}},
      0, 1);
  checker.Check(MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L", "W"}, {"P", "loss"},
                                {MakeArgument("label_prob", 1)}),
                {{"X", RandomTensor({3, 6}, 9, -2.f, 2.f)},
                 {"L", RandomDistributions(3, 6, 10)},
                 {"W", FloatTensor({3}, {0.3f, 1.f, 2.f})}},
                0, 1);
}

TEST(SoftmaxWithLossOpTest, GradientMakerPassesWeights) {
  auto def = MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L", "W"}, {"P", "loss"});
  std::vector<GradientWrapper> g(2);
  g[1].dense = "loss_grad";
  GradientOpsMeta meta = GetGradientForOp(def, g);
  ASSERT_EQ(meta.ops.size(), 1u);
  const OperatorDef& op = meta.ops[0];
  EXPECT_EQ(op.type(), "SoftmaxWithLossGradient");
  ASSERT_EQ(op.input_size(), 5);
  EXPECT_EQ(op.input(2), "W");
  EXPECT_EQ(op.input(3), "P");
  EXPECT_EQ(op.input(4), "loss_grad");
  EXPECT_EQ(op.output(0), "X_grad");
  EXPECT_TRUE(meta.g_input[1].IsEmpty());
  EXPECT_TRUE(meta.g_input[2].IsEmpty());
}

TEST(SoftmaxWithLossOpTest, Fp16MatchesFp32) {
  std::map<std::string, Tensor> in{{"X", RandomTensor({6, 11}, 11, -3.f, 3.f)},
                                   {"L", IntTensor({6}, {0, 10, 5, 5, 1, 2})},
                                   {"W", RandomTensor({6}, 12, 0.5f, 2.f)}};
  auto def = MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L", "W"}, {"P", "loss"});
  CheckFp16MatchesFp32(def, in, {"X"}, {0, 1});
  Workspace ws;
  RunOp(def, {{"X", ToHalf(in["X"])}, {"L", in["L"]}, {"W", in["W"]}}, &ws);
  EXPECT_EQ(ws.GetTensor("P").dtype(), DataType::FLOAT);
  EXPECT_EQ(ws.GetTensor("loss").dtype(), DataType::FLOAT);

  // The gradient op: P from the float run, X (only its type and shape matter) in half.
  Workspace ref;
  RunOp(def, in, &ref);
  std::map<std::string, Tensor> gin = in;
  gin["P"].CopyFrom(ref.GetTensor("P"));
  gin["dloss"] = FloatTensor({}, {0.7f});
  auto gdef = MakeOperatorDef("SoftmaxWithLossGradient", "", {"X", "L", "W", "P", "dloss"}, {"dX"});
  CheckFp16MatchesFp32(gdef, gin, {"X"});
  Workspace ws16;
  gin["X"] = ToHalf(in["X"]);
  RunOp(gdef, gin, &ws16);
  EXPECT_EQ(ws16.GetTensor("dX").dtype(), DataType::FLOAT16);
}

TEST(SoftmaxWithLossOpTest, LabelOutOfRangeNamesOpSampleAndLabel) {
  auto def = MakeOperatorDef("SoftmaxWithLoss", "xent", {"X", "L"}, {"P", "loss"});
  std::string msg =
      ErrorOf(def, {{"X", RandomTensor({4, 5}, 1)}, {"L", IntTensor({4}, {0, 1, 7, 2})}});
  for (const char* part : {"SoftmaxWithLoss 'xent'", "label 7", "sample 2", "< 5"}) {
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
  msg = ErrorOf(def, {{"X", RandomTensor({4, 5}, 1)}, {"L", IntTensor({4}, {0, -1, 1, 2})}});
  EXPECT_NE(msg.find("label -1 of sample 1"), std::string::npos) << msg;
  // The gradient op checks too.
  auto gdef = MakeOperatorDef("SoftmaxWithLossGradient", "g", {"X", "L", "P", "dl"}, {"dX"});
  msg = ErrorOf(gdef, {{"X", RandomTensor({2, 3}, 1)},
                       {"L", IntTensor({2}, {3, 0})},
                       {"P", RandomTensor({2, 3}, 2)},
                       {"dl", FloatTensor({}, {1.f})}});
  EXPECT_NE(msg.find("label 3 of sample 0"), std::string::npos) << msg;
}

TEST(SoftmaxWithLossOpTest, ShapeAndTypeErrors) {
  auto def = MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L"}, {"P", "loss"});
  std::string msg =
      ErrorOf(def, {{"X", RandomTensor({4, 5}, 1)}, {"L", IntTensor({3}, {0, 1, 2})}});
  EXPECT_NE(msg.find("[3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4 samples"), std::string::npos) << msg;
  msg = ErrorOf(def, {{"X", RandomTensor({4, 5}, 1)}, {"L", RandomTensor({4}, 2)}});
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
  auto wdef = MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L", "W"}, {"P", "loss"});
  msg = ErrorOf(
      wdef,
      {{"X", RandomTensor({2, 5}, 1)}, {"L", IntTensor({2}, {0, 1})}, {"W", RandomTensor({3}, 2)}});
  EXPECT_NE(msg.find("weights"), std::string::npos) << msg;
  auto pdef = MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L"}, {"P", "loss"},
                              {MakeArgument("label_prob", 1)});
  msg = ErrorOf(pdef, {{"X", RandomTensor({2, 5}, 1)}, {"L", RandomTensor({2, 4}, 2)}});
  EXPECT_NE(msg.find("[2, 4]"), std::string::npos) << msg;
}

TEST(SoftmaxWithLossOpTest, RejectsNhwcOrder) {
  auto def = MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L"}, {"P", "loss"},
                             {MakeArgument("order", "NHWC")});
  std::string msg = ErrorOf(def, {{"X", RandomTensor({2, 5}, 1)}, {"L", IntTensor({2}, {0, 1})}});
  EXPECT_NE(msg.find("order"), std::string::npos) << msg;
}

TEST(SoftmaxWithLossOpTest, SchemaInfersFloatOutputs) {
  const OpSchema* s = OpSchemaRegistry::Schema("SoftmaxWithLoss");
  ASSERT_NE(s, nullptr);
  auto def = MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L"}, {"P", "loss"});
  auto out = s->InferShapes(def, {{{8, 10}, DataType::FLOAT16}, {{8}, DataType::INT32}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{8, 10}));
  EXPECT_EQ(out[0].dtype, DataType::FLOAT);
  EXPECT_TRUE(out[1].dims.empty());
  EXPECT_EQ(out[1].dtype, DataType::FLOAT);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
