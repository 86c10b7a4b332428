// Backward (models/backward.h): the structure of generated backward passes (op types, blob names,
// Sum placement, seeds) and, numerically, parameter gradients against finite differences of the
// loss on nets with fan-out, in-place ops, a stop-gradient branch and an op without gradient.
#include "models/backward.h"

#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "core/gradient.h"
#include "core/operator.h"
#include "core/workspace.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {

// ---- test-only operators (names start with "BackwardTest" so they cannot clash) ---------------

namespace {

// BackwardTestSquareSum: X (float, any shape) -> loss = sum(X^2), a 0-d tensor.
class SquareSumOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const float* x = X.data<float>();
    double s = 0;
    for (int64_t i = 0; i < X.numel(); ++i) s += static_cast<double>(x[i]) * x[i];
    Output(0, {})->mutable_data<float>()[0] = static_cast<float>(s);
  }
};

// BackwardTestSquareSumGradient: (X, dLoss) -> dX = 2 X dLoss.
class SquareSumGradientOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& dL = Input(1);
    HALFCAF_ENFORCE(dL.numel() == 1, "dLoss must have one element, got ", dL.DebugString());
    const float g = dL.data<float>()[0];
    const float* x = X.data<float>();
    float* dx = Output(0, X.dims())->mutable_data<float>();
    for (int64_t i = 0; i < X.numel(); ++i) dx[i] = 2.f * x[i] * g;
  }
};

class GetSquareSumGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("BackwardTestSquareSumGradient", {I(0), GO(0)}, {GI(0)});
  }
};

// Identity (float). Registered as BackwardTestStopGradient (NO_GRADIENT), BackwardTestNoMaker
// (no gradient registered at all) and BackwardTestAccuracy (SHOULD_NOT_DO_GRADIENT).
class IdentityOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    if (IsInputOutputAlias(0, 0)) return;
    const float* x = X.data<float>();
    float* y = Output(0, X.dims())->mutable_data<float>();
    std::copy(x, x + X.numel(), y);
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(BackwardTestSquareSum, SquareSumOp);
REGISTER_CPU_OPERATOR(BackwardTestSquareSumGradient, SquareSumGradientOp);
REGISTER_GRADIENT(BackwardTestSquareSum, GetSquareSumGradient);
REGISTER_CPU_OPERATOR(BackwardTestStopGradient, IdentityOp);
NO_GRADIENT(BackwardTestStopGradient);
REGISTER_CPU_OPERATOR(BackwardTestNoMaker, IdentityOp);
REGISTER_CPU_OPERATOR(BackwardTestAccuracy, IdentityOp);
SHOULD_NOT_DO_GRADIENT(BackwardTestAccuracy);

namespace testing {
namespace {

OperatorDef Op(const std::string& type, const std::vector<std::string>& in,
               const std::vector<std::string>& out, const std::vector<Argument>& args = {}) {
  return MakeOperatorDef(type, "", in, out, args);
}

OperatorDef FC(const std::string& x, const std::string& prefix, const std::string& y) {
  return Op("FC", {x, prefix + "_w", prefix + "_b"}, {y});
}

NetDef MakeNet(const std::vector<OperatorDef>& ops, const std::string& name = "test") {
  NetDef net;
  net.set_name(name);
  for (const auto& op : ops) *net.add_op() = op;
  return net;
}

std::vector<std::string> Strings(const ::google::protobuf::RepeatedPtrField<std::string>& r) {
  return std::vector<std::string>(r.begin(), r.end());
}

// The ops appended after the first `n_forward` ops.
std::vector<OperatorDef> BackwardOps(const NetDef& net, int n_forward) {
  return std::vector<OperatorDef>(net.op().begin() + n_forward, net.op().end());
}

void ExpectOp(const OperatorDef& op, const std::string& type, const std::vector<std::string>& in,
              const std::vector<std::string>& out) {
  EXPECT_EQ(op.type(), type);
  EXPECT_EQ(Strings(op.input()), in) << op.type();
  EXPECT_EQ(Strings(op.output()), out) << op.type();
}

std::string ThrownMessage(NetDef net, const std::vector<std::string>& losses,
                          const std::map<std::string, std::string>& seeds = {}) {
  try {
    AddGradientOperators(&net, losses, seeds);
  } catch (const EnforceNotMet& e) {
    return e.what();
  }
  ADD_FAILURE() << "AddGradientOperators did not throw";
  return "";
}

// ---- structure ---------------------------------------------------------------------------------

// data -> FC fc1 -> Relu (in place) -> FC fc2 -> SquareSum -> loss
NetDef SmallMlp() {
  return MakeNet({FC("data", "fc1", "fc1"), Op("Relu", {"fc1"}, {"fc1"}), FC("fc1", "fc2", "fc2"),
                  Op("BackwardTestSquareSum", {"fc2"}, {"loss"})});
}

TEST(BackwardTest, SmallMlpStructure) {
  NetDef net = SmallMlp();
  auto grads = AddGradientOperators(&net, {"loss"});
  auto ops = BackwardOps(net, 4);
  ASSERT_EQ(ops.size(), 5u);
  ExpectOp(ops[0], "ConstantFill", {"loss"}, {"loss_autogen_grad"});
  ASSERT_EQ(ops[0].arg_size(), 1);
  EXPECT_EQ(ops[0].arg(0).name(), "value");
  EXPECT_TRUE(ops[0].arg(0).has_f());
  EXPECT_EQ(ops[0].arg(0).f(), 1.0f);
  ExpectOp(ops[1], "BackwardTestSquareSumGradient", {"fc2", "loss_autogen_grad"}, {"fc2_grad"});
  ExpectOp(ops[2], "FCGradient", {"fc1", "fc2_w", "fc2_grad"},
           {"fc2_w_grad", "fc2_b_grad", "fc1_grad"});
  // The in-place Relu gets an in-place gradient.
  ExpectOp(ops[3], "ReluGradient", {"fc1", "fc1_grad"}, {"fc1_grad"});
  ExpectOp(ops[4], "FCGradient", {"data", "fc1_w", "fc1_grad"},
           {"fc1_w_grad", "fc1_b_grad", "data_grad"});
  for (size_t i = 1; i < ops.size(); ++i) EXPECT_TRUE(ops[i].is_gradient_op()) << i;

  std::map<std::string, std::string> dense;
  for (const auto& kv : grads) {
    EXPECT_TRUE(kv.second.IsDense()) << kv.first;
    dense[kv.first] = kv.second.dense;
  }
  EXPECT_EQ(dense, (std::map<std::string, std::string>{{"loss", "loss_autogen_grad"},
                                                       {"fc2", "fc2_grad"},
                                                       {"fc2_w", "fc2_w_grad"},
                                                       {"fc2_b", "fc2_b_grad"},
                                                       {"fc1", "fc1_grad"},
                                                       {"fc1_w", "fc1_w_grad"},
                                                       {"fc1_b", "fc1_b_grad"},
                                                       {"data", "data_grad"}}));
}

TEST(BackwardTest, BackwardAliasAndForwardOpsUntouched) {
  NetDef net = SmallMlp();
  NetDef before = net;
  Backward(&net, {"loss"});
  ASSERT_EQ(net.op_size(), 9);
  for (int i = 0; i < before.op_size(); ++i) {
    EXPECT_EQ(net.op(i).SerializeAsString(), before.op(i).SerializeAsString()) << i;
  }
}

// X is read by two FCs whose outputs are added.
NetDef TwoFCFanOut() {
  return MakeNet({FC("data", "f0", "X"), FC("X", "fa", "A"), FC("X", "fb", "B"),
                  Op("Sum", {"A", "B"}, {"S"}), Op("BackwardTestSquareSum", {"S"}, {"loss"})});
}

TEST(BackwardTest, FanOutTwoFCsSumAfterEarliestConsumer) {
  NetDef net = TwoFCFanOut();
  auto grads = AddGradientOperators(&net, {"loss"});
  auto ops = BackwardOps(net, 5);
  ASSERT_EQ(ops.size(), 6u);
  ExpectOp(ops[0], "ConstantFill", {"loss"}, {"loss_autogen_grad"});
  ExpectOp(ops[1], "BackwardTestSquareSumGradient", {"S", "loss_autogen_grad"}, {"S_grad"});
  // Sum's gradient is a pass-through: A and B's gradients are S_grad itself (no op).
  ExpectOp(ops[2], "FCGradient", {"X", "fb_w", "S_grad"}, {"fb_w_grad", "fb_b_grad", "X_grad"});
  ExpectOp(ops[3], "FCGradient", {"X", "fa_w", "S_grad"},
           {"fa_w_grad", "fa_b_grad", "_X_grad_autosplit_0"});
  ExpectOp(ops[4], "Sum", {"X_grad", "_X_grad_autosplit_0"}, {"X_grad"});
  EXPECT_FALSE(ops[4].is_gradient_op());  // as Caffe2 writes it
  ExpectOp(ops[5], "FCGradient", {"data", "f0_w", "X_grad"},
           {"f0_w_grad", "f0_b_grad", "data_grad"});
  EXPECT_EQ(grads.at("X").dense, "X_grad");
  EXPECT_EQ(grads.at("A").dense, "S_grad");
  EXPECT_EQ(grads.at("B").dense, "S_grad");
}

TEST(BackwardTest, ThreeConsumersNumberedAutosplits) {
  NetDef net =
      MakeNet({FC("data", "f0", "X"), FC("X", "fa", "A"), FC("X", "fb", "B"), FC("X", "fc", "C"),
               Op("Sum", {"A", "B", "C"}, {"S"}), Op("BackwardTestSquareSum", {"S"}, {"loss"})});
  AddGradientOperators(&net, {"loss"});
  auto ops = BackwardOps(net, 6);
  ASSERT_EQ(ops.size(), 7u);
  EXPECT_EQ(ops[2].output(2), "X_grad");               // FC C: the latest consumer
  EXPECT_EQ(ops[3].output(2), "_X_grad_autosplit_0");  // FC B
  EXPECT_EQ(ops[4].output(2), "_X_grad_autosplit_1");  // FC A
  ExpectOp(ops[5], "Sum", {"X_grad", "_X_grad_autosplit_0", "_X_grad_autosplit_1"}, {"X_grad"});
  EXPECT_EQ(ops[6].input(2), "X_grad");
}

TEST(BackwardTest, PassThroughContributionKeepsNameAndSumRunsInPlace) {
  // Residual: S = X + FC(X). The pass-through contribution S_grad comes first but the result
  // takes the real op's name X_grad, swapped into input slot 0.
  NetDef net = MakeNet({FC("data", "f0", "X"), FC("X", "fa", "A"), Op("Sum", {"X", "A"}, {"S"}),
                        Op("BackwardTestSquareSum", {"S"}, {"loss"})});
  auto grads = AddGradientOperators(&net, {"loss"});
  auto ops = BackwardOps(net, 4);
  ASSERT_EQ(ops.size(), 5u);
  ExpectOp(ops[2], "FCGradient", {"X", "fa_w", "S_grad"}, {"fa_w_grad", "fa_b_grad", "X_grad"});
  ExpectOp(ops[3], "Sum", {"X_grad", "S_grad"}, {"X_grad"});
  EXPECT_EQ(ops[4].input(2), "X_grad");
  EXPECT_EQ(grads.at("X").dense, "X_grad");
}

TEST(BackwardTest, OnlyPassThroughContributionsSumIntoXGrad) {
  NetDef net = MakeNet({FC("data", "f0", "X"), Op("Sum", {"X", "X"}, {"S"}),
                        Op("BackwardTestSquareSum", {"S"}, {"loss"})});
  auto grads = AddGradientOperators(&net, {"loss"});
  auto ops = BackwardOps(net, 3);
  ASSERT_EQ(ops.size(), 4u);
  ExpectOp(ops[2], "Sum", {"S_grad", "S_grad"}, {"X_grad"});
  EXPECT_EQ(ops[3].input(2), "X_grad");
  EXPECT_EQ(grads.at("X").dense, "X_grad");
}

TEST(BackwardTest, SuppliedSeedReplacesConstantFill) {
  NetDef net = SmallMlp();
  auto grads = AddGradientOperators(&net, {"loss"}, {{"loss", "loss_scale"}});
  auto ops = BackwardOps(net, 4);
  ASSERT_EQ(ops.size(), 4u);
  for (const auto& op : ops) EXPECT_NE(op.type(), "ConstantFill");
  ExpectOp(ops[0], "BackwardTestSquareSumGradient", {"fc2", "loss_scale"}, {"fc2_grad"});
  EXPECT_EQ(grads.at("loss").dense, "loss_scale");
}

TEST(BackwardTest, TwoLossesSeedsInOrder) {
  NetDef net = MakeNet({FC("data", "f0", "X"), Op("BackwardTestSquareSum", {"X"}, {"l1"}),
                        FC("X", "fa", "A"), Op("BackwardTestSquareSum", {"A"}, {"l2"})});
  AddGradientOperators(&net, {"l2", "l1"}, {{"l1", "l1_seed"}});
  auto ops = BackwardOps(net, 4);
  ASSERT_EQ(ops.size(), 6u);
  ExpectOp(ops[0], "ConstantFill", {"l2"}, {"l2_autogen_grad"});
  ExpectOp(ops[1], "BackwardTestSquareSumGradient", {"A", "l2_autogen_grad"}, {"A_grad"});
  ExpectOp(ops[2], "FCGradient", {"X", "fa_w", "A_grad"}, {"fa_w_grad", "fa_b_grad", "X_grad"});
  ExpectOp(ops[3], "BackwardTestSquareSumGradient", {"X", "l1_seed"},
           {"_X_grad_autosplit_0"});
  ExpectOp(ops[4], "Sum", {"X_grad", "_X_grad_autosplit_0"}, {"X_grad"});
  ExpectOp(ops[5], "FCGradient", {"data", "f0_w", "X_grad"},
           {"f0_w_grad", "f0_b_grad", "data_grad"});
}

TEST(BackwardTest, LossAlsoReadByAnotherLossIsAccumulated) {
  // l1 is a loss and also feeds l2: its seed keeps its name, the other contribution is renamed.
  NetDef net = MakeNet({FC("data", "f0", "l1"), Op("BackwardTestSquareSum", {"l1"}, {"l2"})});
  AddGradientOperators(&net, {"l1", "l2"});
  auto ops = BackwardOps(net, 2);
  ASSERT_EQ(ops.size(), 5u);
  ExpectOp(ops[0], "ConstantFill", {"l1"}, {"l1_autogen_grad"});
  ExpectOp(ops[1], "ConstantFill", {"l2"}, {"l2_autogen_grad"});
  ExpectOp(ops[2], "BackwardTestSquareSumGradient", {"l1", "l2_autogen_grad"},
           {"_l1_grad_autosplit_0"});
  ExpectOp(ops[3], "Sum", {"l1_autogen_grad", "_l1_grad_autosplit_0"}, {"l1_autogen_grad"});
  ExpectOp(ops[4], "FCGradient", {"data", "f0_w", "l1_autogen_grad"},
           {"f0_w_grad", "f0_b_grad", "data_grad"});
}

TEST(BackwardTest, StopGradientAndAccuracyAreSkipped) {
  // h -> StopGradient -> FC -> loss; Accuracy reads the loss input but nothing needs its output.
  NetDef net = MakeNet({FC("data", "f0", "h"), Op("BackwardTestStopGradient", {"h"}, {"hs"}),
                        FC("hs", "f1", "o"), Op("BackwardTestAccuracy", {"o"}, {"acc"}),
                        Op("BackwardTestSquareSum", {"o"}, {"loss"})});
  auto grads = AddGradientOperators(&net, {"loss"});
  auto ops = BackwardOps(net, 5);
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[1].type(), "BackwardTestSquareSumGradient");
  ExpectOp(ops[2], "FCGradient", {"hs", "f1_w", "o_grad"}, {"f1_w_grad", "f1_b_grad", "hs_grad"});
  EXPECT_TRUE(grads.count("f1_w"));
  EXPECT_FALSE(grads.count("h"));
  EXPECT_FALSE(grads.count("f0_w"));
  EXPECT_FALSE(grads.count("data"));
}

TEST(BackwardTest, InPlaceStopGradientEndsTheGradient) {
  NetDef net = MakeNet({FC("data", "f0", "h"), Op("BackwardTestStopGradient", {"h"}, {"h"}),
                        FC("h", "f1", "o"), Op("BackwardTestSquareSum", {"o"}, {"loss"})});
  auto grads = AddGradientOperators(&net, {"loss"});
  EXPECT_EQ(net.op_size(), 4 + 3);
  EXPECT_FALSE(grads.count("h"));  // the older version of h has no gradient
  EXPECT_FALSE(grads.count("f0_w"));
}

TEST(BackwardTest, OverwrittenBlobVersionsAreKeptApart) {
  // X (version 0) is read by an FC whose output is unused, then overwritten by an unrelated FC;
  // only version 1 has a gradient, so f0 (the producer of version 0) gets none.
  NetDef net = MakeNet({FC("data", "f0", "X"), FC("X", "fa", "unused"), FC("data2", "f1", "X"),
                        FC("X", "fb", "B"), Op("BackwardTestSquareSum", {"B"}, {"loss"})});
  auto grads = AddGradientOperators(&net, {"loss"});
  EXPECT_TRUE(grads.count("f1_w"));
  EXPECT_FALSE(grads.count("f0_w"));
  EXPECT_FALSE(grads.count("fa_w"));
  EXPECT_EQ(net.op_size(), 5 + 4);
}

TEST(BackwardTest, DeviceOptionsCopiedToSeedAndSum) {
  NetDef net = TwoFCFanOut();
  for (auto& op : *net.mutable_op()) {
    op.mutable_device_option()->set_device_type(1);
    op.mutable_device_option()->set_device_id(3);
  }
  AddGradientOperators(&net, {"loss"});
  for (int i = 5; i < net.op_size(); ++i) {
    EXPECT_EQ(net.op(i).device_option().device_type(), 1) << net.op(i).type();
    EXPECT_EQ(net.op(i).device_option().device_id(), 3) << net.op(i).type();
  }
}

// A device option that carries only a random seed (the trainers seed their forward nets before
// the passes) names no device: its op's gradient contributions sum with those of ops without one.
TEST(BackwardTest, ASeedAloneNamesNoDevice) {
  NetDef net = TwoFCFanOut();
  net.mutable_op(2)->mutable_device_option()->set_random_seed(7);
  AddGradientOperators(&net, {"loss"});
  bool summed = false;
  for (int i = 5; i < net.op_size(); ++i) summed |= net.op(i).type() == "Sum";
  EXPECT_TRUE(summed);
}

TEST(BackwardTest, ContributionsOnDifferentDevicesAreAnError) {
  NetDef net = TwoFCFanOut();
  net.mutable_op(2)->mutable_device_option()->set_device_type(1);
  std::string msg = ThrownMessage(net, {"loss"});
  EXPECT_NE(msg.find("different devices"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'X'"), std::string::npos) << msg;
}

// ZeroGradient has no outputs, so no output gradient can reach it; Backward processes it anyway.
// z is read only by ZeroGradient: it gets a zero gradient (and its producer's parameters zero
// gradients). h is read by ZeroGradient and by the loss path: the zero contribution is summed in.
NetDef ZeroGradientNet() {
  return MakeNet({FC("data", "f0", "h"), FC("data", "fz", "z"), Op("ZeroGradient", {"z"}, {}),
                  Op("ZeroGradient", {"h"}, {}), FC("h", "f1", "o"),
                  Op("BackwardTestSquareSum", {"o"}, {"loss"})});
}

TEST(BackwardTest, ZeroGradientIsProcessedWithoutOutputs) {
  NetDef net = ZeroGradientNet();
  auto grads = AddGradientOperators(&net, {"loss"});
  auto ops = BackwardOps(net, 6);
  ASSERT_EQ(ops.size(), 9u);
  ExpectOp(ops[0], "ConstantFill", {"loss"}, {"loss_autogen_grad"});
  ExpectOp(ops[1], "BackwardTestSquareSumGradient", {"o", "loss_autogen_grad"}, {"o_grad"});
  ExpectOp(ops[2], "FCGradient", {"h", "f1_w", "o_grad"}, {"f1_w_grad", "f1_b_grad", "h_grad"});
  // ZeroGradient(h): a zero fill, renamed, summed after h's earliest reader (the ZeroGradient).
  ExpectOp(ops[3], "ConstantFill", {"h"}, {"_h_grad_autosplit_0"});
  ASSERT_EQ(ops[3].arg_size(), 1);
  EXPECT_EQ(ops[3].arg(0).f(), 0.f);
  ExpectOp(ops[4], "Sum", {"h_grad", "_h_grad_autosplit_0"}, {"h_grad"});
  // ZeroGradient(z): z's only gradient, which then flows into its producer.
  ExpectOp(ops[5], "ConstantFill", {"z"}, {"z_grad"});
  ExpectOp(ops[6], "FCGradient", {"data", "fz_w", "z_grad"},
           {"fz_w_grad", "fz_b_grad", "data_grad"});
  ExpectOp(ops[7], "FCGradient", {"data", "f0_w", "h_grad"},
           {"f0_w_grad", "f0_b_grad", "_data_grad_autosplit_0"});
  ExpectOp(ops[8], "Sum", {"data_grad", "_data_grad_autosplit_0"}, {"data_grad"});
  EXPECT_EQ(grads.at("z").dense, "z_grad");
  EXPECT_EQ(grads.at("h").dense, "h_grad");
  EXPECT_EQ(grads.at("fz_w").dense, "fz_w_grad");
}

TEST(BackwardTest, ZeroGradientAloneMakesAGradientWithoutALossPath) {
  // Nothing reaches the loss from w, yet ZeroGradient gives it a (zero) gradient blob.
  NetDef net = MakeNet({FC("data", "f0", "o"), Op("BackwardTestSquareSum", {"o"}, {"loss"}),
                        Op("ZeroGradient", {"w"}, {})});
  auto grads = AddGradientOperators(&net, {"loss"});
  ASSERT_TRUE(grads.count("w"));
  EXPECT_EQ(grads.at("w").dense, "w_grad");
  auto ops = BackwardOps(net, 3);
  ASSERT_GE(ops.size(), 2u);
  ExpectOp(ops[1], "ConstantFill", {"w"}, {"w_grad"});
}

// ---- errors ------------------------------------------------------------------------------------

TEST(BackwardTest, LossNotProducedIsAnError) {
  std::string msg = ThrownMessage(SmallMlp(), {"nope"});
  EXPECT_NE(msg.find("'nope' is not produced"), std::string::npos) << msg;
  msg = ThrownMessage(SmallMlp(), {"data"});  // an external input is not produced either
  EXPECT_NE(msg.find("'data' is not produced"), std::string::npos) << msg;
}

TEST(BackwardTest, BadLossListsAndSeedsAreErrors) {
  EXPECT_NE(ThrownMessage(SmallMlp(), {}).find("at least one loss"), std::string::npos);
  EXPECT_NE(ThrownMessage(SmallMlp(), {"loss", "loss"}).find("listed twice"), std::string::npos);
  std::string msg = ThrownMessage(SmallMlp(), {"loss"}, {{"fc2", "s"}});
  EXPECT_NE(msg.find("not one of the losses"), std::string::npos) << msg;
}

TEST(BackwardTest, MissingGradientMakerNamesTheOp) {
  NetDef net = MakeNet({FC("data", "f0", "h"), Op("BackwardTestNoMaker", {"h"}, {"h2"}),
                        Op("BackwardTestSquareSum", {"h2"}, {"loss"})});
  std::string msg = ThrownMessage(net, {"loss"});
  EXPECT_NE(msg.find("op #1 (BackwardTestNoMaker)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no gradient is registered"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'h2'"), std::string::npos) << msg;
}

TEST(BackwardTest, ShouldNotDoOpOnThePathIsAnError) {
  NetDef net = MakeNet({FC("data", "f0", "h"), Op("BackwardTestAccuracy", {"h"}, {"acc"}),
                        Op("BackwardTestSquareSum", {"acc"}, {"loss"})});
  std::string msg = ThrownMessage(net, {"loss"});
  EXPECT_NE(msg.find("op #1 (BackwardTestAccuracy)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("should not be differentiated"), std::string::npos) << msg;
}

TEST(BackwardTest, NetIsUnchangedWhenBackwardFails) {
  NetDef net = MakeNet({FC("data", "f0", "h"), Op("BackwardTestNoMaker", {"h"}, {"h2"}),
                        Op("BackwardTestSquareSum", {"h2"}, {"loss"})});
  EXPECT_THROW(AddGradientOperators(&net, {"loss"}), EnforceNotMet);
  EXPECT_EQ(net.op_size(), 3);
}

// ---- numerics: gradients vs. finite differences of the loss ----------------------------------

struct NumericCase {
  NetDef forward;
  std::map<std::string, Tensor> inputs;  // data and parameters
  std::vector<std::string> losses;
  std::vector<std::string> params;       // blobs whose gradients are checked
  std::vector<std::string> relu_outputs; // skip elements whose perturbation flips a Relu
  std::map<std::string, std::string> seeds;
  std::map<std::string, Tensor> seed_values;
  float seed_scale = 1.f;                // the seeds' value (all seeds equal)
  BlobDims blob_dims;                    // given to Backward when not empty
};

// Runs `net` in a fresh workspace fed with `inputs` (+ `extra`), returns the workspace.
std::unique_ptr<Workspace> RunFresh(const NetDef& net, const std::map<std::string, Tensor>& inputs,
                                    const std::map<std::string, Tensor>& extra = {}) {
  auto ws = std::make_unique<Workspace>();
  for (const auto& kv : inputs) SetInput(ws.get(), kv.first, kv.second);
  for (const auto& kv : extra) SetInput(ws.get(), kv.first, kv.second);
  ws->RunNetOnce(net);
  return ws;
}

double TotalLoss(const Workspace& ws, const std::vector<std::string>& losses) {
  double total = 0;
  for (const auto& l : losses) {
    for (float v : ToFloatVector(ws.GetTensor(l))) total += v;
  }
  return total;
}

std::vector<std::vector<float>> ReluMasks(const Workspace& ws, const std::vector<std::string>& r) {
  std::vector<std::vector<float>> masks;
  for (const auto& name : r) {
    std::vector<float> m = ToFloatVector(ws.GetTensor(name));
    for (float& v : m) v = v > 0.f ? 1.f : 0.f;
    masks.push_back(m);
  }
  return masks;
}

// Stop-gradient ops mean "treat this value as a constant": the finite-difference net drops them
// and feeds their outputs at the unperturbed values.
void CheckAgainstFiniteDifferences(const NumericCase& c) {
  NetDef full = c.forward;
  auto grads = AddGradientOperators(&full, c.losses, c.seeds,
                                    c.blob_dims.empty() ? nullptr : &c.blob_dims);
  auto ws = RunFresh(full, c.inputs, c.seed_values);

  NetDef fd_net = c.forward;
  fd_net.clear_op();
  std::map<std::string, Tensor> frozen;
  auto base = RunFresh(c.forward, c.inputs);
  for (const auto& op : c.forward.op()) {
    if (op.type() == "BackwardTestStopGradient") {
      frozen[op.output(0)].CopyFrom(base->GetTensor(op.output(0)));
    } else {
      *fd_net.add_op() = op;
    }
  }
  const auto base_masks = ReluMasks(*base, c.relu_outputs);

  const float eps = 1e-2f;
  for (const auto& p : c.params) {
    SCOPED_TRACE("parameter " + p);
    ASSERT_TRUE(grads.count(p)) << "no gradient for " << p;
    std::vector<float> analytic = ToFloatVector(ws->GetTensor(grads.at(p).dense));
    const Tensor& value = c.inputs.at(p);
    ASSERT_EQ(static_cast<int64_t>(analytic.size()), value.numel());
    int checked = 0, skipped = 0;
    for (int64_t j = 0; j < value.numel(); ++j) {
      double loss[2];
      bool flipped = false;
      for (int s = 0; s < 2; ++s) {
        // Tensor copies share storage: perturb a deep copy.
        std::map<std::string, Tensor> in = c.inputs;
        Tensor perturbed;
        perturbed.CopyFrom(value);
        perturbed.mutable_data<float>()[j] += s == 0 ? eps : -eps;
        in[p] = perturbed;
        auto w = RunFresh(fd_net, in, frozen);
        loss[s] = TotalLoss(*w, c.losses) * c.seed_scale;
        flipped |= ReluMasks(*w, c.relu_outputs) != base_masks;
      }
      if (flipped) {
        ++skipped;
        continue;
      }
      ++checked;
      const double numeric = (loss[0] - loss[1]) / (2.0 * eps);
      const double tol = 2e-3 * std::max({1.0, std::fabs(numeric)});
      EXPECT_NEAR(analytic[j], numeric, tol) << p << " element " << j;
    }
    EXPECT_GT(checked, 3 * skipped) << p << ": too many elements near a Relu kink";
  }
}

Tensor Rand(std::vector<int64_t> dims, uint32_t seed) {
  return RandomTensor(std::move(dims), seed, -1.f, 1.f);
}

void AddFCParams(NumericCase* c, const std::string& prefix, int64_t n, int64_t k, uint32_t seed) {
  c->inputs[prefix + "_w"] = Rand({n, k}, seed);
  c->inputs[prefix + "_b"] = Rand({n}, seed + 1);
  c->params.push_back(prefix + "_w");
  c->params.push_back(prefix + "_b");
}

// data -> FC f1 -> h1 -> Relu (in place) -> { FC f2 -> a, FC f3 -> b, StopGradient -> FC f4 -> c }
// t = (a + b) + c, Scale in place, loss = sum(t^2); an Accuracy-like op reads t after the loss.
NumericCase FanOutCase() {
  NumericCase c;
  c.forward = MakeNet({FC("data", "f1", "h1"), Op("Relu", {"h1"}, {"h1"}), FC("h1", "f2", "a"),
                       FC("h1", "f3", "b"), Op("Sum", {"a", "b"}, {"s"}),
                       Op("BackwardTestStopGradient", {"h1"}, {"h1_stop"}),
                       FC("h1_stop", "f4", "c"),
                       Op("Sum", {"s", "c"}, {"t"}),
                       Op("Scale", {"t"}, {"t"}, {MakeArgument("scale", 0.5f)}),
                       Op("BackwardTestSquareSum", {"t"}, {"loss"}),
                       Op("BackwardTestAccuracy", {"t"}, {"acc"})});
  c.inputs["data"] = Rand({3, 4}, 10);
  c.params.push_back("data");
  AddFCParams(&c, "f1", 5, 4, 20);
  AddFCParams(&c, "f2", 3, 5, 30);
  AddFCParams(&c, "f3", 3, 5, 40);
  AddFCParams(&c, "f4", 3, 5, 50);
  c.losses = {"loss"};
  c.relu_outputs = {"h1"};
  return c;
}

TEST(BackwardNumericTest, FanOutInPlaceReluStopGradient) {
  NumericCase c = FanOutCase();
  // The structure this test relies on: h1's two contributions are summed, StopGradient adds none.
  NetDef net = c.forward;
  AddGradientOperators(&net, c.losses);
  int sums = 0;
  for (int i = c.forward.op_size(); i < net.op_size(); ++i) {
    if (net.op(i).type() == "Sum") {
      ++sums;
      EXPECT_EQ(Strings(net.op(i).input()),
                (std::vector<std::string>{"h1_grad", "_h1_grad_autosplit_0"}));
    }
  }
  EXPECT_EQ(sums, 1);
  CheckAgainstFiniteDifferences(c);
}

TEST(BackwardNumericTest, SuppliedSeedScalesGradients) {
  NumericCase c = FanOutCase();
  c.seeds = {{"loss", "loss_scale"}};
  Tensor scale({}, DataType::FLOAT);
  scale.mutable_data<float>()[0] = 4.f;
  c.seed_values["loss_scale"] = scale;
  c.seed_scale = 4.f;
  CheckAgainstFiniteDifferences(c);
}

TEST(BackwardNumericTest, ResidualTwoLossesAndRepeatedInput) {
  // x = Relu(FC(data)); r = x + FC(x) (pass-through + op contribution); d = r + r (one op reads r
  // twice); l1 = sum(d^2); l2 = sum(FC(x)^2) reads x a third time.
  NumericCase c;
  c.forward = MakeNet({FC("data", "f1", "x"), Op("Relu", {"x"}, {"x"}), FC("x", "f2", "y"),
                       Op("Sum", {"x", "y"}, {"r"}), Op("Sum", {"r", "r"}, {"d"}),
                       Op("BackwardTestSquareSum", {"d"}, {"l1"}), FC("x", "f3", "z"),
                       Op("BackwardTestSquareSum", {"z"}, {"l2"})});
  c.inputs["data"] = Rand({2, 3}, 60);
  c.params.push_back("data");
  AddFCParams(&c, "f1", 4, 3, 70);
  AddFCParams(&c, "f2", 4, 4, 80);
  AddFCParams(&c, "f3", 2, 4, 90);
  c.losses = {"l1", "l2"};
  c.relu_outputs = {"x"};
  CheckAgainstFiniteDifferences(c);
}

// Add / Sub / Mul / Div broadcasting NumPy-style: with the blobs' dims, Backward emits
// AddGradient & co., whose gradients have the parameters' shapes; without them, the same-shape ops.
TEST(BackwardNumericTest, NumpyBroadcastWithBlobDims) {
  NumericCase c;
  c.forward = MakeNet({FC("data", "f1", "h"), Op("Mul", {"h", "scale"}, {"m"}),
                       Op("Add", {"shift", "m"}, {"a"}), Op("Div", {"a", "div"}, {"q"}),
                       Op("Sub", {"q", "off"}, {"d"}),
                       Op("BackwardTestSquareSum", {"d"}, {"loss"})});
  c.inputs["data"] = Rand({3, 4}, 140);
  c.inputs["scale"] = Rand({1, 5}, 141);
  c.inputs["shift"] = Rand({3, 1}, 142);
  c.inputs["div"] = RandomTensorAwayFrom({5}, 143, {0.f}, 0.5f);
  c.inputs["off"] = Rand({}, 144);
  c.params = {"data", "scale", "shift", "div", "off"};
  AddFCParams(&c, "f1", 5, 4, 145);
  for (const auto& kv : c.inputs) c.blob_dims[kv.first] = kv.second.dims();
  for (const char* name : {"h", "m", "a", "q"}) c.blob_dims[name] = {3, 5};
  c.losses = {"loss"};

  NetDef net = c.forward;
  AddGradientOperators(&net, c.losses, {}, &c.blob_dims);
  std::vector<std::string> types;
  for (int i = c.forward.op_size(); i < net.op_size(); ++i) types.push_back(net.op(i).type());
  EXPECT_EQ(types, (std::vector<std::string>{"ConstantFill", "BackwardTestSquareSumGradient",
                                             "SubGradient", "DivGradient", "AddGradient",
                                             "MulGradient", "FCGradient"}));
  CheckAgainstFiniteDifferences(c);

  // Without the dims the makers assume identical shapes (Caffe2's same-shape gradient ops).
  NetDef plain = c.forward;
  AddGradientOperators(&plain, c.losses);
  EXPECT_EQ(plain.op(c.forward.op_size() + 2).type(), "Negative");
}

TEST(BackwardNumericTest, ZeroGradientAddsZeroToTheLossPath) {
  NumericCase c;
  c.forward = ZeroGradientNet();
  c.inputs["data"] = Rand({3, 4}, 100);
  c.params.push_back("data");
  AddFCParams(&c, "f0", 5, 4, 110);
  AddFCParams(&c, "fz", 2, 4, 120);  // feeds only ZeroGradient: numeric gradient 0
  AddFCParams(&c, "f1", 3, 5, 130);
  c.losses = {"loss"};
  CheckAgainstFiniteDifferences(c);

  // The values: z's gradient is all zeros of z's shape; h's is exactly the loss path's, as in the
  // same net without ZeroGradient ops.
  NetDef full = c.forward;
  AddGradientOperators(&full, c.losses);
  auto ws = RunFresh(full, c.inputs);
  const Tensor& z_grad = ws->GetTensor("z_grad");
  EXPECT_EQ(z_grad.dims(), ws->GetTensor("z").dims());
  EXPECT_EQ(ToFloatVector(z_grad), std::vector<float>(z_grad.numel(), 0.f));
  EXPECT_EQ(ToFloatVector(ws->GetTensor("fz_w_grad")), std::vector<float>(2 * 4, 0.f));
  NetDef plain = MakeNet({FC("data", "f0", "h"), FC("h", "f1", "o"),
                          Op("BackwardTestSquareSum", {"o"}, {"loss"})});
  AddGradientOperators(&plain, {"loss"});
  auto ref = RunFresh(plain, c.inputs);
  for (const char* blob : {"h_grad", "f0_w_grad", "f1_w_grad", "data_grad"}) {
    EXPECT_EQ(ToFloatVector(ws->GetTensor(blob)), ToFloatVector(ref->GetTensor(blob))) << blob;
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
