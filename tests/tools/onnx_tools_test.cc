// onnx_to_caffe2 and run_net --net model.onnx on a model of ONNX's backend test data (Debian's
// libonnx-testdata; skipped without it or without ONNX support), with good and bad input.
#include <sys/stat.h>

#include <string>

#include <gtest/gtest.h>

#include "core/proto_io.h"
#include "onnx/onnx_import.h"
#include "proto/halfcaf.pb.h"
#include "tests/tools/tool_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const std::string kCase = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/";

class OnnxToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!OnnxAvailable()) GTEST_SKIP() << OnnxMissingHint();
    struct stat st;
    if (stat((kCase + "model.onnx").c_str(), &st) != 0) {
      GTEST_SKIP() << "libonnx-testdata is not installed";
    }
    dir_ = TestTempDir();
  }
  std::string dir_;
};

TEST_F(OnnxToolsTest, OnnxToCaffe2WritesRunnableNets) {
  auto r = RunTool("onnx_to_caffe2", "--onnx " + kCase + "model.onnx --init_net " + dir_ +
                                         "/init.pb --predict_net " + dir_ + "/predict.pbtxt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 ops"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("input  x float [1, 1, 7, 5]"), std::string::npos) << r.out;
  NetDef predict;
  ReadProtoFromFile(dir_ + "/predict.pbtxt", &predict);
  ASSERT_EQ(predict.op_size(), 1);
  EXPECT_EQ(predict.op(0).type(), "Conv");
}

TEST_F(OnnxToolsTest, RunNetRunsAnOnnxModelOnItsTestData) {
  auto r = RunTool("run_net", "--net " + kCase + "model.onnx --onnx_inputs " + kCase +
                                  "test_data_set_0/input_0.pb," + kCase +
                                  "test_data_set_0/input_1.pb");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // y[0, 0, 0, 0] of ONNX's expected output is 12.
  EXPECT_NE(r.out.find("y: float[1, 1, 4, 3]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("12"), std::string::npos) << r.out;
}

TEST_F(OnnxToolsTest, BadInputIsOneLineError) {
  ExpectOneLineError(RunTool("onnx_to_caffe2", "--onnx /nonexistent.onnx --init_net " + dir_ +
                                                   "/i.pb --predict_net " + dir_ + "/p.pb"),
                     "onnx_to_caffe2", "/nonexistent.onnx");
  ExpectOneLineError(RunTool("onnx_to_caffe2", "--onnx " + kCase + "model.onnx"),
                     "onnx_to_caffe2", "--init_net and --predict_net are required");
  ExpectOneLineError(RunTool("onnx_to_caffe2",
                             "--onnx /usr/share/libonnx-testdata/data/node/test_tril/model.onnx "
                             "--init_net " + dir_ + "/i.pb --predict_net " + dir_ + "/p.pb"),
                     "onnx_to_caffe2", "Trilu");
  ExpectOneLineError(RunTool("run_net", "--net " + kCase + "model.onnx --init_net x.pb"),
                     "run_net", "leave out --init_net");
  ExpectOneLineError(RunTool("run_net", "--net " + kCase + "model.onnx --onnx_inputs " + kCase +
                                            "test_data_set_0/input_0.pb"),
                     "run_net", "1 file(s) for the model's 2 input(s)");
  ExpectOneLineError(RunTool("run_net", "--net " + kCase + "model.onnx --onnx_inputs " + kCase +
                                            "model.onnx," + kCase + "model.onnx"),
                     "run_net", "not an ONNX TensorProto");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
