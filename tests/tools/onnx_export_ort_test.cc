// caffe2_to_onnx against ONNX Runtime: a trained LeNet (train_net's checkpoint), ResNet-50
// (make_model) and the one-operator nets of tests/onnx/export_cases.h exported and run by
// onnxruntime, whose outputs equal halfcaf's to 1e-4 (index outputs exactly). Needs the
// virtual environment tools/setup_ort.sh makes (<repo>/.venv-ort); skipped without it (failed
// under HALFCAF_PEER=1).
#include <sys/stat.h>

#include <string>

#include <gtest/gtest.h>

#include "core/proto_io.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "tests/onnx/export_cases.h"
#include "tests/tools/ort_compare.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

class OnnxExportOrtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!OnnxAvailable()) GTEST_SKIP() << OnnxMissingHint();
    HALFCAF_REQUIRE_PEER(Peer::kOnnxRuntime);
    dir_ = TestTempDir() + "/ort";
    mkdir(dir_.c_str(), 0755);
  }
  double Compare(const std::string& model, const std::string& shape) {
    return OrtRelativeDifference(model, shape, dir_);
  }
  std::string dir_;
};

TEST_F(OnnxExportOrtTest, TrainedLeNetMatchesOnnxRuntime) {
  const std::string src = SourceDir();
  const std::string nets = "--init_net " + src + "/models/lenet/lenet_init_net.pbtxt ";
  auto train = RunTool("train_net", "--net " + src + "/models/lenet/lenet_train_net.pbtxt " + nets +
                                        "--data_format synthetic --iters 20 --log_every 10 "
                                        "--checkpoint_dir " + dir_ + "/ckpt");
  ASSERT_EQ(train.exit_code, 0) << train.err;
  auto exp = RunTool("caffe2_to_onnx", nets + "--predict_net " + src +
                                           "/models/lenet/lenet_train_net.pbtxt --params " +
                                           dir_ + "/ckpt/checkpoint.pb --input_shape 4,1,28,28 "
                                           "--out " + dir_ + "/lenet.onnx");
  ASSERT_EQ(exp.exit_code, 0) << exp.err;
  EXPECT_LT(Compare(dir_ + "/lenet.onnx", "4,1,28,28"), 1e-4);
}

TEST_F(OnnxExportOrtTest, ResNet50MatchesOnnxRuntime) {
  auto make = RunTool("make_model", "--model resnet50 --is_test --out " + dir_ + "/r50");
  ASSERT_EQ(make.exit_code, 0) << make.err;
  auto exp = RunTool("caffe2_to_onnx", "--init_net " + dir_ + "/r50/init_net.pbtxt --predict_net " +
                                           dir_ + "/r50/train_net.pbtxt --input_shape 1,3,224,224 "
                                           "--out " + dir_ + "/r50.onnx");
  ASSERT_EQ(exp.exit_code, 0) << exp.err << make.out;
  EXPECT_LT(Compare(dir_ + "/r50.onnx", "1,3,224,224"), 1e-4);
}

TEST_F(OnnxExportOrtTest, OperatorsMatchOnnxRuntime) {
  for (const ExportCase& c : ExportCases()) {
    SCOPED_TRACE(c.name);
    OnnxExportOptions o;
    o.input_dims["x"] = c.x_dims;
    const std::string model = dir_ + "/" + c.name + ".onnx";
    WriteFileAtomically(model, ExportOnnx(c.init, c.predict, o));
    std::string shape;
    for (int64_t d : c.x_dims) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    EXPECT_LT(Compare(model, shape), 1e-4);
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
