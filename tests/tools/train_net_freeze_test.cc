// Fine-tuning with a frozen backbone: `train_net --freeze REGEX` trains only the other parameters.
// The tiny convnet (tests/fixtures) with known initial values trains 5 steps with its convolution
// frozen; the checkpoint holds the convolution's initial values bit for bit (and its 16-bit copy
// in mixed precision), no optimizer state for it, and a classifier that moved. --param_groups
// scales a group's learning rate; bad groups fail with one clear error.
#include <sys/stat.h>

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/argument.h"
#include "core/proto_io.h"
#include "core/tensor_proto.h"
#include "core/workspace.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/op_test_util.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

const std::string kNet = SourceDir() + "/tests/fixtures/tiny_convnet_net.pbtxt";

// The tiny convnet's parameters with fixed values, as a binary init net (GivenTensorFill).
NetDef KnownInit() {
  NetDef init;
  const std::vector<std::pair<std::string, std::vector<int64_t>>> params{
      {"conv1_w", {8, 1, 3, 3}}, {"conv1_b", {8}}, {"fc_w", {4, 128}}, {"fc_b", {4}}};
  uint32_t seed = 1;
  for (const auto& [name, dims] : params) {
    *init.add_op() = MakeOperatorDef(
        "GivenTensorFill", "", {}, {name},
        {MakeArgument("shape", dims),
         MakeArgument("values", ToFloatVector(RandomTensor(dims, seed++, -0.3f, 0.3f)))});
  }
  return init;
}

std::vector<uint8_t> Bytes(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  return std::vector<uint8_t>(p, p + t.nbytes());
}

class TrainNetFreezeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TestTempDir() + "/freeze_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    mkdir(dir_.c_str(), 0755);
    WriteProtoToFile(KnownInit(), dir_ + "/init.pb", false);
    initial_.RunNetOnce(KnownInit());
  }

  ToolResult Train(const std::string& extra) {
    return RunTool("train_net", "--net " + kNet + " --init_net " + dir_ + "/init.pb" +
                                    " --data_format synthetic --synthetic_shape 1,8,8"
                                    " --num_classes 4 --batch_size 16 --iters 5 --base_lr 0.05"
                                    " --threads 1 --checkpoint_dir " + dir_ + "/ckpt " + extra);
  }

  void ExpectOnlyTheHeadMoved(const std::string& dtype) {
    const auto r = Train("--freeze '^conv' --dtype " + dtype);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("2 parameters frozen (--freeze '^conv'): conv1_b conv1_w"),
              std::string::npos) << r.out;
    Workspace ckpt;
    FeedTensorProtosFile(dir_ + "/ckpt/checkpoint.pb", &ckpt);
    for (const std::string p : {"conv1_w", "conv1_b"}) {
      ASSERT_TRUE(ckpt.HasBlob(p)) << p;
      EXPECT_EQ(Bytes(ckpt.GetTensor(p)), Bytes(initial_.GetTensor(p))) << p << " moved";
      EXPECT_FALSE(ckpt.HasBlob(p + "_momentum")) << p << " has optimizer state";
    }
    if (dtype != "float") {
      const std::string copy = std::string("conv1_w") + (dtype == "float16" ? "_fp16" : "_bf16");
      ASSERT_TRUE(ckpt.HasBlob(copy));
      const Tensor want = RoundThrough(initial_.GetTensor("conv1_w"),
                                       dtype == "float16" ? DataType::FLOAT16 : DataType::BFLOAT16);
      EXPECT_EQ(ToFloatVector(ckpt.GetTensor(copy)), ToFloatVector(want)) << copy << " moved";
    }
    for (const std::string p : {"fc_w", "fc_b"}) {
      EXPECT_NE(Bytes(ckpt.GetTensor(p)), Bytes(initial_.GetTensor(p))) << p << " did not train";
      EXPECT_TRUE(ckpt.HasBlob(p + "_momentum")) << p;
    }
  }

  std::string dir_;
  Workspace initial_;
};

TEST_F(TrainNetFreezeTest, FrozenBackboneFloat32) { ExpectOnlyTheHeadMoved("float"); }
TEST_F(TrainNetFreezeTest, FrozenBackboneFloat16) { ExpectOnlyTheHeadMoved("float16"); }
TEST_F(TrainNetFreezeTest, FrozenBackboneBFloat16) { ExpectOnlyTheHeadMoved("bfloat16"); }

// --param_groups 'fc_:0' stops the classifier as lr_mult 0 does (its momentum exists, at zero):
// the convolution trains alone.
TEST_F(TrainNetFreezeTest, ParamGroupLearningRate) {
  const auto r = Train("--param_groups 'fc_:0:1'");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Workspace ckpt;
  FeedTensorProtosFile(dir_ + "/ckpt/checkpoint.pb", &ckpt);
  EXPECT_EQ(Bytes(ckpt.GetTensor("fc_w")), Bytes(initial_.GetTensor("fc_w")));
  EXPECT_NE(Bytes(ckpt.GetTensor("conv1_w")), Bytes(initial_.GetTensor("conv1_w")));
}

TEST_F(TrainNetFreezeTest, BadGroupsFailClearly) {
  ExpectOneLineError(Train("--freeze '^backbone'"), "train_net",
                     "parameter group '^backbone' matches no parameter");
  ExpectOneLineError(Train("--freeze '('"), "train_net", "is not a valid regex");
  ExpectOneLineError(Train("--freeze '.'"), "train_net", "is frozen: nothing to train");
  ExpectOneLineError(Train("--param_groups 'fc_:fast'"), "train_net",
                     "'fast' is not a multiplier");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
