// train_net --write_plan: the run written as one Caffe2 PlanDef, which run_plan executes with the
// same losses, weights and test figures as train_net itself.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "core/proto_io.h"
#include "core/tensor_proto.h"
#include "core/workspace.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

const std::string kData = ::halfcaf::testing::SourceDir() + "/tests/fixtures/";

double JsonNumber(const std::string& json, const std::string& key) {
  const size_t p = json.find("\"" + key + "\": ");
  EXPECT_NE(p, std::string::npos) << key << " in " << json;
  return p == std::string::npos ? NAN : std::stod(json.substr(p + key.size() + 4));
}

// The tiny convnet with dropout after the pooling, so the plan must reproduce random masks.
std::string WriteDropoutNet(const std::string& dir) {
  std::ifstream in(kData + "tiny_convnet_net.pbtxt");
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.find("\"FC\"") != std::string::npos) {
      out += "op { input: \"pool1\" output: \"pool1_drop\" output: \"pool1_mask\" type: "
             "\"Dropout\" arg { name: \"ratio\" f: 0.25 } }\n";
      const size_t p = line.find("input: \"pool1\"");
      line.replace(p, 14, "input: \"pool1_drop\"");
    }
    out += line + "\n";
  }
  const std::string path = dir + "/tiny_dropout_net.pbtxt";
  std::ofstream(path) << out;
  return path;
}

float Scalar(const Workspace& ws, const std::string& blob) {
  const Tensor& t = ws.GetTensor(blob);
  EXPECT_EQ(t.numel(), 1) << blob;
  return t.data<float>()[0];
}

// For each precision (and a net with dropout): train_net trains 25 iterations with a test every
// 10; --write_plan writes the same run, run_plan executes it; the final loss, every parameter
// and optimizer state and the test figures are equal.
TEST(TrainNetPlanTest, RunPlanReproducesTrainNet) {
  const std::string dir = TestTempDir() + "/write_plan";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  struct Case {
    std::string name, flags;
  };
  const std::string common = "--init_net " + kData + "tiny_convnet_init.pbtxt --data_format "
                             "synthetic --synthetic_shape 1,8,8 --num_classes 4 --batch_size 16 "
                             "--base_lr 0.05 --threads 1 --iters 25 --test_every 10 ";
  const std::string tiny = "--net " + kData + "tiny_convnet_net.pbtxt ";
  for (const Case& c : {Case{"float", tiny + "--dtype float"},
                        Case{"float16", tiny + "--dtype float16 --optimizer adam --base_lr 0.01"},
                        Case{"dropout", "--net " + WriteDropoutNet(dir) + " --dtype bfloat16"}}) {
    SCOPED_TRACE(c.name);
    const std::string ck = dir + "/ck_" + c.name, plan = dir + "/" + c.name + "_plan.pbtxt";
    const std::string summary = dir + "/" + c.name + ".json";
    const auto trained = RunTool("train_net", common + c.flags + " --log_every 25 --checkpoint_dir " +
                                                  ck + " --summary_json " + summary);
    ASSERT_EQ(trained.exit_code, 0) << trained.err;
    const auto written = RunTool("train_net", common + c.flags + " --write_plan " + plan);
    ASSERT_EQ(written.exit_code, 0) << written.err;
    EXPECT_NE(written.out.find("wrote the plan of 25 iterations to " + plan), std::string::npos)
        << written.out;
    EXPECT_EQ(written.out.find("iter "), std::string::npos) << "it trained: " << written.out;

    // Every blob of the checkpoint (parameters, optimizer and loss-scale state), from run_plan.
    Workspace by_train;
    FeedTensorProtosFile(ck + "/checkpoint.pb", &by_train);
    std::string blobs = "loss,test/loss,test/accuracy";
    int compared = 0;
    for (const auto& b : by_train.Blobs()) {
      if (b == "data_reader_state" || b.rfind("random_state_", 0) == 0) continue;
      blobs += "," + b;
      ++compared;
    }
    ASSERT_GE(compared, 6);
    const std::string out = dir + "/" + c.name + "_out.pb";
    const auto ran = RunTool("run_plan", "--plan " + plan + " --output_blobs " + blobs +
                                             " --output " + out);
    ASSERT_EQ(ran.exit_code, 0) << ran.err;
    Workspace by_plan;
    FeedTensorProtosFile(out, &by_plan);
    for (const auto& b : by_train.Blobs()) {
      if (!by_plan.HasBlob(b)) continue;
      const Tensor& x = by_train.GetTensor(b);
      const Tensor& y = by_plan.GetTensor(b);
      ASSERT_EQ(x.nbytes(), y.nbytes()) << b;
      EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()), 0) << b << " differs";
    }
    const std::string json = ReadFile(summary);
    // summary_json prints 9 significant digits: a float read back exactly.
    EXPECT_EQ(static_cast<float>(JsonNumber(json, "final_loss")), Scalar(by_plan, "loss"));
    EXPECT_NEAR(JsonNumber(json, "test_loss"), Scalar(by_plan, "test/loss"), 1e-5);
    EXPECT_NEAR(JsonNumber(json, "test_accuracy"), Scalar(by_plan, "test/accuracy"), 1e-6);
  }
}

TEST(TrainNetPlanTest, PlanIsRefusedWhereItCannotHoldTheRun) {
  const std::string dir = TestTempDir() + "/write_plan_bad";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  const std::string tiny = "--net " + kData + "tiny_convnet_net.pbtxt --init_net " + kData +
                           "tiny_convnet_init.pbtxt --data_format synthetic --synthetic_shape "
                           "1,8,8 --num_classes 4 --batch_size 16 --iters 5 ";
  ASSERT_EQ(RunTool("train_net", tiny + "--checkpoint_dir " + dir + "/ck").exit_code, 0);
  const auto resumed = RunTool("train_net", tiny + "--iters 8 --checkpoint_dir " + dir +
                                                   "/ck --resume --write_plan " + dir + "/p.pbtxt");
  EXPECT_EQ(resumed.exit_code, 1);
  EXPECT_NE(resumed.err.find("not with --resume"), std::string::npos) << resumed.err;
  const auto unwritable = RunTool("train_net", tiny + "--write_plan " + dir + "/no/such/p.pbtxt");
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_NE(unwritable.err.find("write_plan"), std::string::npos) << unwritable.err;
  EXPECT_NE(std::system(("test -e " + dir + "/p.pbtxt").c_str()), 0);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
