#include "models/mixed_precision.h"

#include <gtest/gtest.h>

#include "core/net.h"
#include "core/proto_io.h"
#include "models/backward.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

NetDef Parse(const std::string& text) {
  NetDef net;
  ParseProtoFromString(text, "test", &net);
  return net;
}

// A small convnet with BatchNorm, a residual Add, and a softmax loss.
const char* kConvNet = R"(
  op { type: "Conv" input: "data" input: "c1_w" input: "c1_b" output: "c1" arg { name: "kernel" i: 3 } arg { name: "pad" i: 1 } }
  op { type: "SpatialBN" input: "c1" input: "bn_s" input: "bn_b" input: "bn_rm" input: "bn_rv"
       output: "bn" output: "bn_rm" output: "bn_rv" output: "bn_sm" output: "bn_siv" }
  op { type: "Relu" input: "bn" output: "bn" }
  op { type: "Conv" input: "bn" input: "c2_w" output: "c2" arg { name: "kernel" i: 3 } arg { name: "pad" i: 1 } }
  op { type: "Add" input: "c2" input: "bn" output: "sum" }
  op { type: "MaxPool" input: "sum" output: "pool" arg { name: "kernel" i: 2 } arg { name: "stride" i: 2 } }
  op { type: "FC" input: "pool" input: "fc_w" input: "fc_b" output: "pred" }
  op { type: "SoftmaxWithLoss" input: "pred" input: "label" output: "softmax" output: "loss" }
  op { type: "Accuracy" input: "softmax" input: "label" output: "accuracy" }
)";

const std::set<std::string> kParams{"c1_w", "c1_b", "bn_s", "bn_b", "c2_w", "fc_w", "fc_b"};

TEST(MixedPrecisionTest, GraphStructure) {
  MixedPrecisionResult mp = ToMixedPrecision(Parse(kConvNet), {"data"}, kParams);
  EXPECT_EQ(mp.fp16_params,
            (std::vector<std::string>{"c1_w", "c1_b", "c2_w", "fc_w", "fc_b"}));
  std::vector<std::string> types;
  for (const auto& op : mp.net.op()) types.push_back(op.type());
  // One cast, in front of the loss; BN keeps its FP32 parameters.
  EXPECT_EQ(std::count(types.begin(), types.end(), "HalfToFloat"), 1);
  EXPECT_EQ(std::count(types.begin(), types.end(), "FloatToHalf"), 0);
  for (const auto& op : mp.net.op()) {
    if (op.type() == "Conv" || op.type() == "FC") {
      for (int i = 1; i < op.input_size(); ++i) {
        EXPECT_NE(op.input(i).find("_fp16"), std::string::npos) << op.DebugString();
      }
    }
    if (op.type() == "SpatialBN") {
      EXPECT_EQ(op.input(1), "bn_s");
    }
    if (op.type() == "SoftmaxWithLoss") {
      EXPECT_EQ(op.input(0), "pred_fp32");
    }
    if (op.type() == "Accuracy") {
      EXPECT_EQ(op.input(0), "softmax");  // already float
    }
  }
}

// 1-D and 3-D convolutions and FCTransposed get FP16 weights like Conv and FC.
TEST(MixedPrecisionTest, ConvRankAliasesAndFCTransposedComputeInFp16) {
  for (const char* conv : {"Conv1D", "Conv3D"}) {
    NetDef net;
    *net.add_op() = MakeOperatorDef(conv, "", {"data", "cw", "cb"}, {"c"},
                                    {MakeArgument("kernel", 3)});
    *net.add_op() = MakeOperatorDef("FCTransposed", "", {"c", "fw", "fb"}, {"pred"});
    *net.add_op() = MakeOperatorDef("SoftmaxWithLoss", "", {"pred", "label"}, {"softmax", "loss"});
    MixedPrecisionResult mp = ToMixedPrecision(net, {"data"}, {"cw", "cb", "fw", "fb"});
    EXPECT_EQ(mp.fp16_params, (std::vector<std::string>{"cw", "cb", "fw", "fb"})) << conv;
    for (const auto& op : mp.net.op()) {
      if (op.type() != conv && op.type() != "FCTransposed") continue;
      for (int i = 1; i < op.input_size(); ++i) {
        EXPECT_NE(op.input(i).find("_fp16"), std::string::npos) << op.DebugString();
      }
    }
  }
}

// The losses beyond SoftmaxWithLoss run in FP32 too: their float16 inputs (the FC's prediction
// here) are cast to float in front of them, and their outputs stay float.
TEST(MixedPrecisionTest, OtherLossesRunInFp32) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> losses{
      {"L1Distance", {"pred", "target"}},
      {"SmoothL1Loss", {"pred", "target", "w_in", "w_out"}},
      {"CrossEntropy", {"pred", "target"}},
      {"MakeTwoClass", {"pred"}},
      {"WeightedSigmoidCrossEntropyWithLogits", {"pred", "target", "w_in"}}};
  for (const auto& loss : losses) {
    EXPECT_TRUE(RunsInFloat32(loss.first)) << loss.first;
    NetDef net;
    *net.add_op() = MakeOperatorDef("FC", "", {"data", "fw", "fb"}, {"pred"});
    *net.add_op() = MakeOperatorDef(loss.first, "", loss.second, {"loss"});
    *net.add_op() = MakeOperatorDef("Relu", "", {"loss"}, {"after"});
    MixedPrecisionResult mp = ToMixedPrecision(net, {"data"}, {"fw", "fb"});
    ASSERT_EQ(mp.net.op_size(), 4) << loss.first;
    EXPECT_EQ(mp.net.op(1).type(), "HalfToFloat") << loss.first;
    EXPECT_EQ(mp.net.op(2).type(), loss.first);
    EXPECT_EQ(mp.net.op(2).input(0), "pred_fp32") << loss.first;
    EXPECT_EQ(mp.net.op(3).input(0), "loss") << loss.first;  // float: no cast back
  }
}

TEST(MixedPrecisionTest, FloatDataGetsCastOnce) {
  MixedPrecisionResult mp = ToMixedPrecision(Parse(kConvNet), {}, kParams);
  EXPECT_EQ(mp.net.op(0).type(), "FloatToHalf");
  EXPECT_EQ(mp.net.op(0).input(0), "data");
  EXPECT_EQ(mp.net.op(1).input(0), "data_fp16");
}

TEST(MixedPrecisionTest, BFloat16CopiesAndCasts) {
  MixedPrecisionResult mp = ToMixedPrecision(Parse(kConvNet), {}, kParams, DataType::BFLOAT16);
  EXPECT_EQ(mp.fp16_params,
            (std::vector<std::string>{"c1_w", "c1_b", "c2_w", "fc_w", "fc_b"}));
  EXPECT_EQ(mp.net.op(0).type(), "FloatToBFloat16");
  EXPECT_EQ(mp.net.op(1).input(0), "data_bf16");
  int to_float = 0;
  for (const auto& op : mp.net.op()) {
    to_float += op.type() == "BFloat16ToFloat";
    EXPECT_NE(op.type(), "HalfToFloat");
    if (op.type() == "Conv" || op.type() == "FC") {
      for (int i = 1; i < op.input_size(); ++i) {
        EXPECT_EQ(op.input(i), LowPrecisionCopyName(op.input(i).substr(0, op.input(i).size() - 5),
                                                    DataType::BFLOAT16))
            << op.DebugString();
        EXPECT_NE(op.input(i).find("_bf16"), std::string::npos) << op.DebugString();
      }
    }
  }
  EXPECT_EQ(to_float, 1);
  EXPECT_EQ(CastOpType(DataType::FLOAT, DataType::FLOAT16), "FloatToHalf");
  EXPECT_EQ(CastOpType(DataType::BFLOAT16, DataType::FLOAT), "BFloat16ToFloat");
  EXPECT_THROW(ToMixedPrecision(Parse(kConvNet), {}, kParams, DataType::DOUBLE), EnforceNotMet);
}

// Runs forward + backward on kConvNet in FP32 and in mixed precision (`type`, loss scale 128)
// from the same weights, and checks the loss and every parameter gradient agree within `tol` of
// the largest gradient plus `atol` (FP16 or BF16 accuracy). `atol` covers c1_b, the bias of a
// convolution that BatchNorm follows: its true gradient is 0 (FP32 gives ~1e-8), and in 16 bits
// it is a sum of 144 rounded terms that cancel.
void CheckLossAndGradients(DataType type, double loss_tol, float tol, float atol) {
  const float kScale = 128.f;
  auto feed = [kScale, type](Workspace* ws, bool half) {
    auto round = [type](const Tensor& t) { return RoundThrough(t, type); };
    Tensor data = RandomTensor({4, 3, 6, 6}, 1);
    SetInput(ws, "data", half ? ToFloat16Type(data, type) : round(data));
    SetInput(ws, "c1_w", round(RandomTensor({4, 3, 3, 3}, 2, -0.5f, 0.5f)));
    SetInput(ws, "c1_b", round(RandomTensor({4}, 3)));
    SetInput(ws, "bn_s", RandomTensor({4}, 4, 0.5f, 1.5f));
    SetInput(ws, "bn_b", RandomTensor({4}, 5));
    SetInput(ws, "bn_rm", RandomTensor({4}, 6));
    SetInput(ws, "bn_rv", RandomTensor({4}, 7, 0.5f, 1.5f));
    SetInput(ws, "c2_w", round(RandomTensor({4, 4, 3, 3}, 8, -0.3f, 0.3f)));
    SetInput(ws, "fc_w", round(RandomTensor({5, 36}, 9, -0.3f, 0.3f)));
    SetInput(ws, "fc_b", round(RandomTensor({5}, 10)));
    SetInput(ws, "label", IntTensor({4}, {0, 3, 4, 1}));
    Tensor scale({}, DataType::FLOAT);
    scale.mutable_data<float>()[0] = kScale;
    SetInput(ws, "loss_scale", scale);
  };
  // FP32.
  NetDef fp32 = Parse(kConvNet);
  auto g32 = Backward(&fp32, {"loss"});
  Workspace ws32;
  feed(&ws32, false);
  ws32.RunNetOnce(fp32);
  // Mixed precision, 16-bit copies made by FloatToHalf / FloatToBFloat16.
  MixedPrecisionResult mp = ToMixedPrecision(Parse(kConvNet), {"data"}, kParams, type);
  NetDef net16 = mp.net;
  auto g16 = Backward(&net16, {"loss"}, {{"loss", "loss_scale"}});
  Workspace ws16;
  feed(&ws16, true);
  NetDef copies;
  for (const auto& p : mp.fp16_params) {
    *copies.add_op() = MakeOperatorDef(CastOpType(DataType::FLOAT, type), "", {p},
                                       {LowPrecisionCopyName(p, type)});
  }
  ws16.RunNetOnce(copies);
  ws16.RunNetOnce(net16);

  EXPECT_NEAR(ToFloatVector(ws16.GetTensor("loss"))[0], ToFloatVector(ws32.GetTensor("loss"))[0],
              loss_tol);
  for (const auto& p : kParams) {
    const std::string copy = LowPrecisionCopyName(p, type);
    std::string via = g16.count(copy) ? copy : p;
    ASSERT_TRUE(g16.count(via)) << p;
    std::vector<float> a = ToFloatVector(ws16.GetTensor(g16[via].dense));
    std::vector<float> b = ToFloatVector(ws32.GetTensor(g32[p].dense));
    ASSERT_EQ(a.size(), b.size()) << p;
    float max_ref = 0;
    for (float v : b) max_ref = std::max(max_ref, std::fabs(v));
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_NEAR(a[i] / kScale, b[i], tol * max_ref + atol) << p << "[" << i << "]";
    }
  }
}

TEST(MixedPrecisionTest, LossAndGradientsMatchFp32) {
  CheckLossAndGradients(DataType::FLOAT16, 5e-3, 2e-2f, 1e-4f);
}

// BF16 keeps 8 significant bits to FP16's 11: eight times the tolerance (a bit more for c1_b).
TEST(MixedPrecisionTest, BFloat16LossAndGradientsMatchFp32) {
  CheckLossAndGradients(DataType::BFLOAT16, 4e-2, 1.6e-1f, 2e-3f);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
