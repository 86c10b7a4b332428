// The batch norm + ReLU fusion of CPU training nets (models/bn_relu_fusion.h): which pairs it
// fuses and which it leaves, and where the trainer asks for it. The fused ops against the separate
// ones are tests/operators/spatial_bn_relu_test.cc; ChannelBlockedTest.
// TrainingIsTheNchwTrainingBitForBit trains fused on both layouts; the PyTorch equivalence suite
// trains the zoo's ResNets with it.
#include "models/bn_relu_fusion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/argument.h"
#include "models/model_helper.h"
#include "models/trainer.h"
#include "models/zoo.h"
#include "tests/util/tiny_training.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef BlockedBN(const std::string& x, const std::string& y) {
  return MakeOperatorDef("SpatialBN", "", {x, "s", "b", "rm", "rv"}, {y, "rm", "rv", "sm", "si"},
                         {MakeArgument("is_test", 0), MakeArgument("channel_block", int64_t{16})});
}

OperatorDef Relu(const std::string& x, const std::string& y) {
  return MakeOperatorDef("Relu", "", {x}, {y});
}

NetDef Net(const std::vector<OperatorDef>& ops) {
  NetDef n;
  for (const auto& op : ops) *n.add_op() = op;
  return n;
}

std::vector<std::string> Types(const NetDef& n) {
  std::vector<std::string> t;
  for (const auto& op : n.op()) t.push_back(op.type());
  return t;
}

bool Fused(const OperatorDef& op) {
  return ArgumentHelper(op).GetSingleArgument<int>("fuse_relu", 0) == 1;
}

TEST(BNReluFusionTest, FusesInPlaceAndNewOutputRelus) {
  // NCHW and NHWC as well as channel-blocked.
  OperatorDef nchw = BlockedBN("x", "y");
  nchw.clear_arg();
  BNReluFusion plain = FuseBNRelu(Net({nchw, Relu("y", "y")}), {});
  EXPECT_EQ(plain.fused, 1);
  OperatorDef nhwc = nchw;
  SetArgument(&nhwc, "order", std::string("NHWC"));
  plain = FuseBNRelu(Net({nhwc, Relu("y", "y")}), {});
  EXPECT_EQ(plain.fused, 1);
  EXPECT_TRUE(Fused(plain.net.op(0)));
  // In place (Caffe2's ResNets): the BN keeps its output name.
  BNReluFusion f = FuseBNRelu(Net({BlockedBN("x", "y"), Relu("y", "y"), Relu("y", "z")}), {});
  EXPECT_EQ(f.fused, 1);
  EXPECT_EQ(Types(f.net), (std::vector<std::string>{"SpatialBN", "Relu"}));
  EXPECT_TRUE(Fused(f.net.op(0)));
  EXPECT_EQ(f.net.op(0).output(0), "y");
  EXPECT_EQ(f.net.op(1).input(0), "y");
  // To a new blob: the BN writes it, y is gone.
  f = FuseBNRelu(Net({BlockedBN("x", "y"), Relu("y", "r"), Relu("r", "z")}), {});
  EXPECT_EQ(f.fused, 1);
  EXPECT_EQ(f.net.op(0).output(0), "r");
  EXPECT_EQ(f.net.op(1).input(0), "r");
  // Other ops between them are fine when they touch neither.
  f = FuseBNRelu(
      Net({BlockedBN("x", "y"), MakeOperatorDef("Copy", "", {"x"}, {"x2"}), Relu("y", "r")}), {});
  EXPECT_EQ(f.fused, 1);
  EXPECT_EQ(Types(f.net), (std::vector<std::string>{"SpatialBN", "Copy"}));
}

TEST(BNReluFusionTest, LeavesWhatItCannotFuse) {
  const auto unchanged = [](const NetDef& net, const std::set<std::string>& keep,
                            const std::string& why) {
    const BNReluFusion f = FuseBNRelu(net, keep);
    EXPECT_EQ(f.fused, 0) << why;
    EXPECT_EQ(f.net.DebugString(), net.DebugString()) << why;
  };
  // y read by another op as well (the pre-ReLU value would be lost).
  unchanged(Net({BlockedBN("x", "y"), Relu("y", "r"), MakeOperatorDef("Copy", "", {"y"}, {"c"})}),
            {}, "y read after the Relu");
  unchanged(Net({BlockedBN("x", "y"), MakeOperatorDef("Copy", "", {"y"}, {"c"}), Relu("y", "r")}),
            {}, "Relu not the first reader");
  // y kept for the caller, or an external output.
  unchanged(Net({BlockedBN("x", "y"), Relu("y", "r")}), {"y"}, "y kept");
  NetDef out = Net({BlockedBN("x", "y"), Relu("y", "r")});
  out.add_external_output("y");
  unchanged(out, {}, "y an external output");
  // The Relu's output touched between the two (it would be written earlier).
  unchanged(Net({BlockedBN("x", "y"), MakeOperatorDef("Copy", "", {"r"}, {"c"}), Relu("y", "r")}),
            {}, "r read before the Relu");
  // The Relu's output is the BN's input (the gradient needs X).
  unchanged(Net({BlockedBN("x", "y"), Relu("y", "x")}), {}, "r is X");
  // Not a training BN on the default CPU engine: an engine asked for, test mode, already fused;
  // nor a Relu with an engine or on CUDA.
  OperatorDef dnnl = BlockedBN("x", "y");
  dnnl.set_engine("DNNL");
  unchanged(Net({dnnl, Relu("y", "y")}), {}, "BN with an engine");
  OperatorDef fused = BlockedBN("x", "y");
  SetArgument(&fused, "fuse_relu", 1);
  unchanged(Net({fused, Relu("y", "y")}), {}, "BN already fused");
  OperatorDef test = BlockedBN("x", "y");
  SetArgument(&test, "is_test", 1);
  test.mutable_output()->DeleteSubrange(1, 4);
  unchanged(Net({test, Relu("y", "y")}), {}, "test-mode BN");
  OperatorDef cuda_relu = Relu("y", "y");
  cuda_relu.mutable_device_option()->set_device_type(1);
  unchanged(Net({BlockedBN("x", "y"), cuda_relu}), {}, "Relu on CUDA");
  OperatorDef engine_relu = Relu("y", "y");
  engine_relu.set_engine("CUDNN");
  unchanged(Net({BlockedBN("x", "y"), engine_relu}), {}, "Relu with an engine");
  unchanged(Net({BlockedBN("x", "y"), MakeOperatorDef("Sigmoid", "", {"y"}, {"y"})}), {},
            "not a Relu");
}

// The trainer fuses where the fused op takes the batch normalization's X: float32 in any layout,
// bfloat16 channels last (NHWC); not bfloat16 NCHW nor float16 (ResNet-18: nine BN + ReLU pairs).
TEST(BNReluFusionTest, TheTrainerFusesWhereTheFusedOpTakesX) {
  ModelHelper h("resnet18", "NCHW", false);
  BuildResNet(&h, 18, 10, 32);
  struct Case {
    DataType precision;
    const char* channels_last;
    bool fused;
  };
  for (const Case& c :
       {Case{DataType::FLOAT, "off", true}, Case{DataType::FLOAT, "on", true},
        Case{DataType::BFLOAT16, "on", true}, Case{DataType::BFLOAT16, "off", false},
        Case{DataType::FLOAT16, "off", false}}) {
    SCOPED_TRACE(std::string(DataTypeName(c.precision)) + " channels_last " + c.channels_last);
    TrainerOptions o = SyntheticImageOptions({3, 32, 32}, 10, 2);
    o.precision = c.precision;
    o.channels_last = c.channels_last;
    o.blocked_layout = "off";
    Trainer t(h.init_net(), h.net(), o);
    t.Initialize();
    const bool fused =
        t.ConvolutionSummary().find("batch norm + ReLU fused (9)") != std::string::npos;
    EXPECT_EQ(fused, c.fused) << t.ConvolutionSummary();
    t.Step();
    EXPECT_TRUE(std::isfinite(t.ReadStats().loss));
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
