// caffe2_to_onnx against ONNX Runtime: a trained LeNet (train_net's checkpoint) and ResNet-50
// (make_model) exported and run by onnxruntime, whose outputs equal halfcaf's to 1e-4. Needs the
// virtual environment tools/setup_ort.sh makes (<repo>/.venv-ort); skipped without it.
#include <sys/stat.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "onnx/onnx_import.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

// Runs the model in onnxruntime on random input (seeded) and in halfcaf (run_net on the same
// file), and compares; prints "max_diff <x> scale <y>".
const char kCompare[] = R"PY(
import sys, subprocess, numpy as np, onnxruntime as ort
from onnx import numpy_helper
model, shape, run_net, work = sys.argv[1], [int(v) for v in sys.argv[2].split(",")], sys.argv[3], sys.argv[4]
s = ort.InferenceSession(model)
x = np.random.RandomState(0).rand(*shape).astype(np.float32)
y = s.run(None, {s.get_inputs()[0].name: x})[0]
open(f"{work}/x.pb", "wb").write(numpy_helper.from_array(x, s.get_inputs()[0].name).SerializeToString())
out = subprocess.run([run_net, "--net", model, "--onnx_inputs", f"{work}/x.pb"], check=True,
                     capture_output=True, text=True).stdout
vals = [float(l.split(":")[1]) for l in out.splitlines() if l.strip().startswith("float_data:")]
got = np.array(vals, dtype=np.float32).reshape(y.shape)
print("max_diff", float(np.abs(got - y).max()), "scale", float(np.abs(y).max()))
)PY";

class OnnxExportOrtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!OnnxAvailable()) GTEST_SKIP() << OnnxMissingHint();
    python_ = SourceDir() + "/.venv-ort/bin/python";
    struct stat st;
    if (stat(python_.c_str(), &st) != 0) {
      GTEST_SKIP() << "no ONNX Runtime (run tools/setup_ort.sh to make " << python_ << ")";
    }
    dir_ = TestTempDir() + "/ort";
    mkdir(dir_.c_str(), 0755);
    std::ofstream(dir_ + "/compare.py") << kCompare;
  }
  // max |halfcaf - onnxruntime| relative to max |onnxruntime|.
  double Compare(const std::string& model, const std::string& shape) {
    auto r = RunShell(python_ + " " + dir_ + "/compare.py " + model + " " + shape + " " +
                      HALFCAF_BIN_DIR + "/run_net " + dir_);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    const size_t a = r.out.find("max_diff "), b = r.out.find(" scale ");
    if (a == std::string::npos || b == std::string::npos) return 1e9;
    return std::stod(r.out.substr(a + 9)) / std::max(1e-30, std::stod(r.out.substr(b + 7)));
  }
  std::string python_, dir_;
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

}  // namespace
}  // namespace testing
}  // namespace halfcaf
