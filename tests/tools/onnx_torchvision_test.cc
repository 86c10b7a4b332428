// Models people already have: torchvision's ResNet-18 and MobileNetV2, exported to ONNX by
// Debian's python3-torch in the test itself (skipped without python3-torch, python3-torchvision
// and python3-onnx), run in halfcaf with outputs equal to PyTorch's, and fine-tuned by train_net
// in FP32 and mixed precision.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "core/workspace.h"
#include "onnx/onnx_import.h"
#include "tests/tools/tool_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const char kExport[] = R"PY(
import sys, torch, torchvision
from onnx import numpy_helper
out = sys.argv[1]
torch.manual_seed(0)
for name, make in [("resnet18", torchvision.models.resnet18),
                   ("mobilenet_v2", torchvision.models.mobilenet_v2)]:
    m = make(num_classes=10).eval()
    x = torch.randn(2, 3, 32, 32)
    # PRESERVE keeps BatchNormalization nodes (eval export would fold them into the convolutions).
    torch.onnx.export(m, x, f"{out}/{name}.onnx", opset_version=13, input_names=["input"],
                      output_names=["logits"], training=torch.onnx.TrainingMode.PRESERVE,
                      do_constant_folding=False)
    with torch.no_grad():
        y = m(x).numpy()
    open(f"{out}/{name}_in.pb", "wb").write(numpy_helper.from_array(x.numpy(), "input").SerializeToString())
    open(f"{out}/{name}_out.pb", "wb").write(numpy_helper.from_array(y, "logits").SerializeToString())
)PY";

class OnnxTorchvisionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!OnnxAvailable()) return;
    dir_ = new std::string(TestTempDir() + "/torchvision");
    mkdir(dir_->c_str(), 0755);
    std::ofstream(*dir_ + "/export.py") << kExport;
    const auto r = RunShell("/usr/bin/python3 " + *dir_ + "/export.py " + *dir_);
    exported_ = r.exit_code == 0;
    why_ = r.err.substr(std::max<size_t>(r.err.size(), 300) - 300);
  }
  void SetUp() override {
    if (!OnnxAvailable()) GTEST_SKIP() << OnnxMissingHint();
    if (!exported_) {
      GTEST_SKIP() << "no torchvision export (python3-torch, python3-torchvision, python3-onnx): "
                   << why_;
    }
  }
  static std::string* dir_;
  static bool exported_;
  static std::string why_;
};
std::string* OnnxTorchvisionTest::dir_ = nullptr;
bool OnnxTorchvisionTest::exported_ = false;
std::string OnnxTorchvisionTest::why_;

TEST_F(OnnxTorchvisionTest, OutputsEqualPyTorchs) {
  for (const std::string name : {"resnet18", "mobilenet_v2"}) {
    SCOPED_TRACE(name);
    const ImportedNet net = ImportOnnxFile(*dir_ + "/" + name + ".onnx");
    Workspace ws;
    ws.RunNetOnce(net.init);
    ReadOnnxTensorFile(*dir_ + "/" + name + "_in.pb", ws.CreateTensor(net.inputs.at(0).name));
    ws.RunNetOnce(net.predict);
    Tensor want;
    ReadOnnxTensorFile(*dir_ + "/" + name + "_out.pb", &want);
    const Tensor& got = ws.GetTensor(net.outputs.at(0).name);
    ASSERT_EQ(got.dims(), want.dims());
    float scale = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      scale = std::max(scale, std::fabs(want.data<float>()[i]));
    }
    ASSERT_GT(scale, 0.f);
    for (int64_t i = 0; i < want.numel(); ++i) {
      EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-4f * scale) << i;
    }
  }
}

// Losses of the --log_csv lines.
std::vector<double> CsvLosses(const std::string& csv) {
  std::vector<double> out;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string iter, epoch, loss;
    std::getline(f, iter, ',');
    std::getline(f, epoch, ',');
    std::getline(f, loss, ',');
    out.push_back(std::stod(loss));
  }
  return out;
}

// train_net --net resnet18.onnx fine-tunes it: on 16 synthetic images repeated, the loss falls
// far in 20 steps, in FP32 and mixed precision; --num_classes replaces the classifier.
TEST_F(OnnxTorchvisionTest, TrainNetFineTunesTheImportedResNet) {
  const std::string common = "--net " + *dir_ + "/resnet18.onnx --data_format synthetic "
                             "--synthetic_shape 3,32,32 --synthetic_count 16 --batch_size 16 "
                             "--iters 20 --log_every 5 --base_lr 0.05 --threads 2 ";
  for (const std::string dtype : {"float", "float16"}) {
    SCOPED_TRACE(dtype);
    const std::string csv = *dir_ + "/" + dtype + ".csv";
    auto r = RunTool("train_net", common + "--dtype " + dtype + " --log_csv " + csv);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("input 'input', loss on 'logits'"), std::string::npos) << r.out;
    const std::vector<double> losses = CsvLosses(ReadFile(csv));
    ASSERT_EQ(losses.size(), 4u);
    EXPECT_LT(losses.back(), 0.25 * losses.front()) << r.out;
  }
  auto seven = RunTool("train_net", common + "--num_classes 7 --iters 5");
  ASSERT_EQ(seven.exit_code, 0) << seven.err;
  EXPECT_NE(seven.out.find("classifier replaced"), std::string::npos) << seven.out;
  ExpectOneLineError(RunTool("train_net", common + "--init_net x.pb"), "train_net",
                     "leave out --init_net");
  ExpectOneLineError(RunTool("train_net", common + "--logits nothing_like_this"), "train_net",
                     "nothing_like_this");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
