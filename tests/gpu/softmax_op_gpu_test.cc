// Softmax / SoftmaxGradient and SoftmaxWithLoss / SoftmaxWithLossGradient on CUDA against the
// CPU operators: float and float16, axes, rows wider than a block, large logits, weights,
// label distributions, zero weights, mixed dtypes; label range errors reported like on CPU.
// Device tests skip without a GPU.
#include <gtest/gtest.h>

#include "core/net.h"
#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const DataType kDtypes[] = {DataType::FLOAT, DataType::FLOAT16};

struct SoftmaxCase {
  const char* name;
  std::vector<int64_t> dims;
  int axis;
};

std::vector<SoftmaxCase> Cases() {
  return {
      {"(5, 13)", {5, 13}, 1},
      {"(2, 3, 4, 5) axis 2", {2, 3, 4, 5}, 2},
      {"(3, 7, 6) axis -1", {3, 7, 6}, -1},
      {"(3, 2000): rows wider than a block", {3, 2000}, 1},
      {"(1037, 3): many short rows", {1037, 3}, 1},
      {"1-D, axis 0", {17}, 0},
  };
}

OperatorDef AxisDef(const std::string& type, std::vector<std::string> in,
                    std::vector<std::string> out, int axis, std::vector<Argument> extra = {}) {
  extra.push_back(MakeArgument("axis", axis));
  return MakeOperatorDef(type, "", in, out, extra);
}

TEST(SoftmaxGpuTest, Registered) {
  for (const char* type :
       {"Softmax", "SoftmaxGradient", "SoftmaxWithLoss", "SoftmaxWithLossGradient"}) {
    EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, type)) << type;
  }
}

TEST(SoftmaxGpuTest, ForwardAndGradientMatchCpu) {
  REQUIRE_GPU();
  for (const SoftmaxCase& c : Cases()) {
    // Logits up to +-20: exp would overflow without the max subtraction in float16.
    const Tensor x = RandomTensor(c.dims, 1, -20.f, 20.f);
    Workspace ws;
    RunOp(AxisDef("Softmax", {"X"}, {"Y"}, c.axis), {{"X", x}}, &ws);
    Tensor y;
    y.CopyFrom(ws.GetTensor("Y"));
    const std::map<std::string, Tensor> in{{"X", x}, {"Y", y}, {"dY", RandomTensor(c.dims, 2)}};
    for (DataType dt : kDtypes) {
      SCOPED_TRACE(MakeString(c.name, " ", DataTypeName(dt)));
      const auto data = AsDtype(in, dt);
      DeviceChecker().Check(AxisDef("Softmax", {"X"}, {"Y"}, c.axis), data);
      DeviceChecker().Check(AxisDef("SoftmaxGradient", {"Y", "dY"}, {"dX"}, c.axis), data);
    }
    SCOPED_TRACE(MakeString(c.name, " mixed dtypes"));
    const auto def = AxisDef("SoftmaxGradient", {"Y", "dY"}, {"dX"}, c.axis);
    DeviceChecker().Check(def, {{"Y", ToHalf(y)}, {"dY", in.at("dY")}});
    DeviceChecker().Check(def, {{"Y", y}, {"dY", ToHalf(in.at("dY"))}});
  }
}

TEST(SoftmaxGpuTest, InPlace) {
  REQUIRE_GPU();
  for (DataType dt : kDtypes) {
    SCOPED_TRACE(DataTypeName(dt));
    DeviceChecker().Check(AxisDef("Softmax", {"X"}, {"X"}, 1),
                          AsDtype({{"X", RandomTensor({4, 300}, 3, -5.f, 5.f)}}, dt));
  }
}

// ---- SoftmaxWithLoss ---------------------------------------------------------------------------

struct LossCase {
  const char* name;
  std::vector<int64_t> x_dims;
  std::vector<int64_t> label_dims;
  int axis;
  int64_t N, D;
};

std::vector<LossCase> LossCases() {
  return {
      {"(7, 10)", {7, 10}, {7}, 1, 7, 10},
      {"(6, 1), labels (6, 1)", {6, 1}, {6, 1}, 1, 6, 1},
      {"(2, 3, 5) axis 2", {2, 3, 5}, {2, 3}, 2, 6, 5},
      {"(5, 1500)", {5, 1500}, {5}, 1, 5, 1500},
  };
}

Tensor Labels(const LossCase& c, uint32_t seed) {
  Tensor t(c.label_dims, DataType::INT32);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.mutable_data<int32_t>()[i] = static_cast<int32_t>(rng() % static_cast<uint32_t>(c.D));
  }
  return t;
}

// Rows that sum to 1 (nonnegative), shaped like X.
Tensor Distributions(const LossCase& c, uint32_t seed) {
  Tensor t = RandomTensor(c.x_dims, seed, 0.f, 1.f);
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < c.N; ++i) {
    float sum = 0;
    for (int64_t j = 0; j < c.D; ++j) sum += p[i * c.D + j];
    for (int64_t j = 0; j < c.D; ++j) p[i * c.D + j] /= sum;
  }
  return t;
}

// Forward and gradient of one configuration in both dtypes (float inputs converted).
void CheckLoss(const LossCase& c, bool weighted, bool label_prob, float scale,
               const Tensor* weights_override = nullptr) {
  std::vector<Argument> args{MakeArgument("scale", scale),
                             MakeArgument("label_prob", label_prob ? 1 : 0)};
  std::map<std::string, Tensor> in{{"X", RandomTensor(c.x_dims, 1, -4.f, 4.f)},
                                   {"L", label_prob ? Distributions(c, 2) : Labels(c, 2)},
                                   {"dloss", FloatTensor({}, {1.3f})}};
  std::vector<std::string> fwd_in{"X", "L"};
  if (weighted) {
    in["W"] = weights_override ? *weights_override : RandomTensor({c.N}, 3, 0.f, 2.f);
    fwd_in.push_back("W");
  }
  const OperatorDef fwd = AxisDef("SoftmaxWithLoss", fwd_in, {"P", "loss"}, c.axis, args);
  Workspace ws;
  RunOp(fwd, in, &ws);
  in["P"].CopyFrom(ws.GetTensor("P"));
  std::vector<std::string> grad_in = fwd_in;
  grad_in.push_back("P");
  grad_in.push_back("dloss");
  const OperatorDef grad = AxisDef("SoftmaxWithLossGradient", grad_in, {"dX"}, c.axis, args);
  for (DataType dt : kDtypes) {
    SCOPED_TRACE(MakeString(c.name, weighted ? " weighted" : "", label_prob ? " label_prob" : "",
                            " scale ", scale, " ", DataTypeName(dt)));
    // float16 X (and weights, distributions, P, dloss): P and the loss stay float.
    const auto data = AsDtype(in, dt);
    DeviceChecker().Check(fwd, data);
    DeviceChecker().Check(grad, data);
  }
}

TEST(SoftmaxWithLossGpuTest, MatchesCpu) {
  REQUIRE_GPU();
  for (const LossCase& c : LossCases()) {
    CheckLoss(c, false, false, 1.f);
    CheckLoss(c, true, false, 0.5f);
    CheckLoss(c, false, true, 1.f);
    CheckLoss(c, true, true, 2.f);
  }
}

TEST(SoftmaxWithLossGpuTest, ZeroWeightsGiveZeroLossAndGradient) {
  REQUIRE_GPU();
  const LossCase c = LossCases()[0];
  const Tensor zeros = FloatTensor({c.N}, std::vector<float>(static_cast<size_t>(c.N), 0.f));
  CheckLoss(c, true, false, 1.f, &zeros);
  CheckLoss(c, true, true, 1.f, &zeros);
}

TEST(SoftmaxWithLossGpuTest, EmptyBatch) {
  REQUIRE_GPU();
  DeviceChecker().Check(MakeOperatorDef("SoftmaxWithLoss", "", {"X", "L"}, {"P", "loss"}),
                        {{"X", RandomTensor({0, 4}, 4)}, {"L", IntTensor({0}, {})}});
}

// Found on the device and reported by CheckDeferredErrors (the run does not wait): the first bad
// sample with its own label and the valid range, as on CPU.
TEST(SoftmaxWithLossGpuTest, LabelOutOfRange) {
  REQUIRE_GPU();
  const std::map<std::string, Tensor> in{{"X", RandomTensor({5, 4}, 5)},
                                         {"L", IntTensor({5}, {0, 3, 7, -1, 2})},
                                         {"P", RandomTensor({5, 4}, 6)},
                                         {"dloss", FloatTensor({}, {1.f})}};
  for (const OperatorDef& def :
       {MakeOperatorDef("SoftmaxWithLoss", "sm", {"X", "L"}, {"P2", "loss"}),
        MakeOperatorDef("SoftmaxWithLossGradient", "sm_grad", {"X", "L", "P", "dloss"}, {"dX"})}) {
    ExpectDeferredLabelError(def, in, "L",
                             "label 7 of sample 2 is out of range, expected 0 <= label < 4 (the "
                             "number of classes)");
  }
}

// In a net, the error names the net and the op as a failed run would, at the check.
TEST(SoftmaxWithLossGpuTest, NetReportsTheDeferredLabelError) {
  REQUIRE_GPU();
  Workspace ws;
  const Device gpu{DeviceType::CUDA, 0};
  ws.CreateTensor("X", gpu)->CopyFrom(RandomTensor({3, 4}, 7));
  ws.CreateTensor("L", gpu)->CopyFrom(IntTensor({3}, {1, 4, 0}));
  NetDef net;
  net.set_name("loss_net");
  *net.add_op() = OnCuda(MakeOperatorDef("SoftmaxWithLoss", "xent", {"X", "L"}, {"P", "loss"}));
  *net.add_op() = OnCuda(MakeOperatorDef("Accuracy", "acc", {"P", "L"}, {"accuracy"}));
  NetBase* n = ws.CreateNet(net);
  EXPECT_NO_THROW(n->Run());
  std::string msg = "label 4 of 4 classes accepted";
  try {
    n->CheckDeferredErrors();
  } catch (const EnforceNotMet& e) {
    msg = e.what();
  }
  for (const char* needle : {"net 'loss_net' op #0 (SoftmaxWithLoss 'xent')",
                             "label 4 of sample 1 is out of range, expected 0 <= label < 4"}) {
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
  // Accuracy found it too; its report comes at the next check.
  EXPECT_THROW(n->CheckDeferredErrors(), EnforceNotMet);
  EXPECT_NO_THROW(n->CheckDeferredErrors());
  // A one-shot run checks by itself.
  EXPECT_THROW(ws.RunNetOnce(net), EnforceNotMet);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
