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

TEST(MixedPrecisionTest, FloatDataGetsCastOnce) {
  MixedPrecisionResult mp = ToMixedPrecision(Parse(kConvNet), {}, kParams);
  EXPECT_EQ(mp.net.op(0).type(), "FloatToHalf");
  EXPECT_EQ(mp.net.op(0).input(0), "data");
  EXPECT_EQ(mp.net.op(1).input(0), "data_fp16");
}

// Runs forward + backward on kConvNet in FP32 and in mixed precision (loss scale 128) from the
// same weights, and checks the loss and every parameter gradient agree within FP16 accuracy.
TEST(MixedPrecisionTest, LossAndGradientsMatchFp32) {
  const float kScale = 128.f;
  auto feed = [kScale](Workspace* ws, bool half) {
    Tensor data = RandomTensor({4, 3, 6, 6}, 1);
    SetInput(ws, "data", half ? ToHalf(data) : RoundThroughHalf(data));
    SetInput(ws, "c1_w", RoundThroughHalf(RandomTensor({4, 3, 3, 3}, 2, -0.5f, 0.5f)));
    SetInput(ws, "c1_b", RoundThroughHalf(RandomTensor({4}, 3)));
    SetInput(ws, "bn_s", RandomTensor({4}, 4, 0.5f, 1.5f));
    SetInput(ws, "bn_b", RandomTensor({4}, 5));
    SetInput(ws, "bn_rm", RandomTensor({4}, 6));
    SetInput(ws, "bn_rv", RandomTensor({4}, 7, 0.5f, 1.5f));
    SetInput(ws, "c2_w", RoundThroughHalf(RandomTensor({4, 4, 3, 3}, 8, -0.3f, 0.3f)));
    SetInput(ws, "fc_w", RoundThroughHalf(RandomTensor({5, 36}, 9, -0.3f, 0.3f)));
    SetInput(ws, "fc_b", RoundThroughHalf(RandomTensor({5}, 10)));
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
  // Mixed precision, FP16 copies made by FloatToHalf.
  MixedPrecisionResult mp = ToMixedPrecision(Parse(kConvNet), {"data"}, kParams);
  NetDef net16 = mp.net;
  auto g16 = Backward(&net16, {"loss"}, {{"loss", "loss_scale"}});
  Workspace ws16;
  feed(&ws16, true);
  NetDef copies;
  for (const auto& p : mp.fp16_params) {
    *copies.add_op() = MakeOperatorDef("FloatToHalf", "", {p}, {Fp16CopyName(p)});
  }
  ws16.RunNetOnce(copies);
  ws16.RunNetOnce(net16);

  EXPECT_NEAR(ToFloatVector(ws16.GetTensor("loss"))[0], ToFloatVector(ws32.GetTensor("loss"))[0],
              5e-3);
  for (const auto& p : kParams) {
    std::string via = g16.count(Fp16CopyName(p)) ? Fp16CopyName(p) : p;
    ASSERT_TRUE(g16.count(via)) << p;
    std::vector<float> a = ToFloatVector(ws16.GetTensor(g16[via].dense));
    std::vector<float> b = ToFloatVector(ws32.GetTensor(g32[p].dense));
    ASSERT_EQ(a.size(), b.size()) << p;
    float max_ref = 0;
    for (float v : b) max_ref = std::max(max_ref, std::fabs(v));
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_NEAR(a[i] / kScale, b[i], 2e-2f * max_ref + 1e-4f) << p << "[" << i << "]";
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
