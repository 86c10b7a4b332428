// make_model on good and bad input; its files load in run_net and train in train_net.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "core/half.h"
#include "core/proto_io.h"
#include "core/tensor_proto.h"
#include "core/workspace.h"
#include "tests/tools/tool_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

int CountOps(const NetDef& net, const std::string& type) {
  int n = 0;
  for (const auto& op : net.op()) n += op.type() == type;
  return n;
}

// A TensorProtos file with `data` (dims, float or float16) and `label` (int32 zeros).
std::string WriteInputs(const std::string& path, std::vector<int64_t> dims, bool fp16) {
  Workspace ws;
  Tensor* data = ws.CreateTensor("data");
  data->Resize(dims);
  for (int64_t i = 0; i < data->numel(); ++i) {
    const float v = static_cast<float>((i * 37) % 101) / 101.f - 0.5f;
    if (fp16) {
      data->mutable_data<Half>()[i] = Half(v);
    } else {
      data->mutable_data<float>()[i] = v;
    }
  }
  Tensor* label = ws.CreateTensor("label");
  label->Resize({dims[0]});
  for (int64_t i = 0; i < dims[0]; ++i) label->mutable_data<int32_t>()[i] = 0;
  WriteBlobsToFile(ws, {"data", "label"}, path);
  return path;
}

std::string Files(const std::string& dir) {
  return "--net " + dir + "/train_net.pbtxt --init_net " + dir + "/init_net.pbtxt ";
}

TEST(MakeModelTest, ResNet50FilesDescribeTheZooModel) {
  const std::string dir = TestTempDir() + "/r50";
  auto r = RunTool("make_model", "--model resnet50 --out " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("25557032 parameters"), std::string::npos) << r.out;
  NetDef init, net;
  ReadProtoFromFile(dir + "/init_net.pbtxt", &init);
  ReadProtoFromFile(dir + "/train_net.pbtxt", &net);
  EXPECT_EQ(CountOps(net, "Conv"), 53);  // stem + 16 blocks x 3 + 4 projections
  EXPECT_EQ(CountOps(net, "SpatialBN"), 53);
  EXPECT_EQ(CountOps(net, "FC"), 1);
  EXPECT_EQ(CountOps(net, "SoftmaxWithLoss"), 1);
  EXPECT_EQ(CountOps(init, "FloatToHalf"), 0);
  EXPECT_EQ(init.op_size(), 53 + 53 * 4 + 2);  // conv weights, BN s/b/rm/riv, FC w/b
}

TEST(MakeModelTest, Float16FilesHoldTheMixedPrecisionNet) {
  const std::string dir = TestTempDir() + "/r18_fp16";
  auto r = RunTool("make_model",
                   "--model resnet18 --dtype float16 --image_size 32 "
                   "--num_classes 10 --out " +
                       dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  NetDef init, net;
  ReadProtoFromFile(dir + "/init_net.pbtxt", &init);
  ReadProtoFromFile(dir + "/train_net.pbtxt", &net);
  // One FP16 copy per Conv weight and for the FC weight and bias, made at the end of init.
  EXPECT_EQ(CountOps(init, "FloatToHalf"), 20 + 2);
  EXPECT_EQ(init.op(init.op_size() - 1).type(), "FloatToHalf");
  for (const auto& op : net.op()) {
    if (op.type() == "Conv" || op.type() == "FC") {
      EXPECT_NE(op.input(1).find("_fp16"), std::string::npos) << op.DebugString();
    }
  }
  EXPECT_EQ(CountOps(net, "HalfToFloat"), 1);  // in front of the FP32 softmax + loss
}

TEST(MakeModelTest, RunNetRunsTheFilesInBothOrdersAndPrecisions) {
  const std::string tmp = TestTempDir();
  struct Case {
    const char* args;
    std::vector<int64_t> dims;
    bool fp16;
  };
  const Case cases[] = {
      {"--model lenet", {2, 1, 28, 28}, false},
      {"--model lenet --dtype float16", {2, 1, 28, 28}, true},
      {"--model resnet18 --image_size 32 --num_classes 10 --order NHWC", {2, 32, 32, 3}, false},
      {"--model resnet18 --image_size 32 --num_classes 10 --dtype float16 --is_test",
       {2, 3, 32, 32},
       true},
  };
  int k = 0;
  for (const auto& c : cases) {
    const std::string dir = tmp + "/run" + std::to_string(k++);
    auto r = RunTool("make_model", std::string(c.args) + " --out " + dir);
    ASSERT_EQ(r.exit_code, 0) << c.args << "\n" << r.err;
    const std::string inputs = WriteInputs(dir + "/inputs.pb", c.dims, c.fp16);
    const std::string out = dir + "/out.pb";
    r = RunTool("run_net", Files(dir) + "--inputs " + inputs +
                               " --output_blobs softmax,loss "
                               "--output " +
                               out);
    ASSERT_EQ(r.exit_code, 0) << c.args << "\n" << r.err;
    Workspace ws;
    FeedTensorProtosFile(out, &ws);
    EXPECT_EQ(ws.GetTensor("softmax").dims(), (std::vector<int64_t>{2, 10})) << c.args;
    const float loss = ws.GetTensor("loss").data<float>()[0];
    EXPECT_TRUE(std::isfinite(loss) && loss > 0) << c.args << " loss " << loss;
  }
}

// The AC-GAN's files: both training steps' forward nets run with run_net on a real batch of 64
// (the nets draw their own noise), and the sampler makes images in the tanh range.
TEST(MakeModelTest, AcGanFilesRun) {
  const std::string dir = TestTempDir() + "/acgan";
  auto r = RunTool("make_model", "--model acgan --out " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("{init,d_step,g_step,sampler}_net.pbtxt"), std::string::npos) << r.out;
  const std::string inputs = WriteInputs(dir + "/inputs.pb", {64, 1, 28, 28}, false);
  for (const char* step : {"d_step", "g_step"}) {
    const std::string out = dir + "/" + step + ".pb";
    r = RunTool("run_net", "--init_net " + dir + "/init_net.pbtxt --net " + dir + "/" + step +
                               "_net.pbtxt --inputs " + inputs + " --output_blobs " +
                               (std::string(step) == "d_step" ? "d_loss" : "g_loss") +
                               " --output " + out);
    ASSERT_EQ(r.exit_code, 0) << step << "\n" << r.err;
    Workspace ws;
    FeedTensorProtosFile(out, &ws);
    const float loss = ws.GetTensor(std::string(step) == "d_step" ? "d_loss" : "g_loss")
                           .data<float>()[0];
    EXPECT_TRUE(std::isfinite(loss) && loss > 0 && loss < 50) << step << " loss " << loss;
  }
}

TEST(MakeModelTest, TrainNetTrainsTheFiles) {
  const std::string tmp = TestTempDir();
  const std::string common =
      "--data_format synthetic --synthetic_shape 1,28,28 --batch_size 16 "
      "--iters 40 --log_every 40 --threads 1 ";
  ASSERT_EQ(RunTool("make_model", "--model lenet --out " + tmp + "/l32").exit_code, 0);
  ASSERT_EQ(RunTool("make_model", "--model lenet --dtype float16 --out " + tmp + "/l16").exit_code,
            0);
  std::string losses[3];
  const std::pair<std::string, std::string> runs[3] = {
      {tmp + "/l32", "float"}, {tmp + "/l32", "float16"}, {tmp + "/l16", "float16"}};
  for (int i = 0; i < 3; ++i) {
    const std::string summary = tmp + "/summary" + std::to_string(i) + ".json";
    auto r = RunTool("train_net", Files(runs[i].first) + common + "--dtype " + runs[i].second +
                                      " --summary_json " + summary);
    ASSERT_EQ(r.exit_code, 0) << runs[i].first << " " << runs[i].second << "\n" << r.err;
    const std::string json = ReadFile(summary);
    const size_t p = json.find("\"final_loss\": ");
    ASSERT_NE(p, std::string::npos) << json;
    losses[i] = json.substr(p, json.find(',', p) - p);
  }
  // The ready-made mixed-precision files train exactly like the FP32 files in float16.
  EXPECT_EQ(losses[1], losses[2]);
  // ... and are refused in FP32, with a clear message.
  auto r = RunTool("train_net", Files(tmp + "/l16") + common + "--dtype float");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("already mixed precision"), std::string::npos) << r.err;
  EXPECT_EQ(CountLines(r.err), 1) << r.err;
}

TEST(MakeModelTest, BadFlagsGiveOneClearErrorLine) {
  const std::string dir = TestTempDir();
  std::ofstream(dir + "/a_file") << "x";
  const std::pair<std::string, std::string> cases[] = {
      {"--model lenet", "--out is required"},
      {"--model vgg16 --out " + dir + "/x", "--model must be resnet50, resnet18, lenet or acgan"},
      {"--model acgan --dtype float16 --out " + dir + "/x", "--model acgan is written in float32"},
      {"--model lenet --order nchw --out " + dir + "/x", "--order must be NCHW or NHWC"},
      {"--model lenet --dtype half --out " + dir + "/x", "--dtype must be float or float16"},
      {"--model lenet --num_classes -3 --out " + dir + "/x", "--num_classes"},
      {"--model lenet --image_size 8 --out " + dir + "/x", "image_size must be >= 16"},
      {"--model resnet18 --image_channels 1 --out " + dir + "/x", "ResNet takes 3 channels"},
      {"--model lenet --out " + dir + "/a_file", "is not a folder"},
      {"--model lenet --out " + dir + "/x extra", "unexpected argument 'extra'"},
  };
  for (const auto& c : cases) {
    auto r = RunTool("make_model", c.first);
    EXPECT_EQ(r.exit_code, 1) << c.first;
    EXPECT_EQ(CountLines(r.err), 1) << c.first << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("make_model: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.second), std::string::npos) << c.first << "\n" << r.err;
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
