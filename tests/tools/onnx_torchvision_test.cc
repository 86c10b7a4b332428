// Models people already have: torchvision's ResNet-18, ResNet-50 and MobileNetV2, exported to
// ONNX by Debian's python3-torch in the test itself (skipped without python3-torch,
// python3-torchvision and python3-onnx), run in halfcaf with outputs equal to PyTorch's, exported
// back by caffe2_to_onnx, fine-tuned by train_net in FP32 and mixed precision, and exported back
// with the fine-tuned parameters (checked against ONNX Runtime where tools/setup_ort.sh made it).
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/tensor_proto.h"
#include "core/workspace.h"
#include "onnx/onnx_import.h"
#include "tests/tools/ort_compare.h"
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
                   ("resnet50", torchvision.models.resnet50),
                   ("mobilenet_v2", torchvision.models.mobilenet_v2)]:
    m = make(num_classes=10).eval()
    # BatchNorm as after training (fresh statistics would make MobileNetV2's logits ~1e-10).
    for bn in m.modules():
        if isinstance(bn, torch.nn.BatchNorm2d):
            bn.weight.data.uniform_(0.5, 1.5); bn.bias.data.uniform_(-0.2, 0.2)
            bn.running_mean.uniform_(-0.2, 0.2); bn.running_var.uniform_(0.5, 1.5)
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
    HALFCAF_REQUIRE_PEER(Peer::kTorchOnnxExport);
    ASSERT_TRUE(exported_) << "the torchvision export failed: " << why_;
  }
  static std::string* dir_;
  static bool exported_;
  static std::string why_;
};
std::string* OnnxTorchvisionTest::dir_ = nullptr;
bool OnnxTorchvisionTest::exported_ = false;
std::string OnnxTorchvisionTest::why_;

// Runs the ONNX model `path` in halfcaf on `name`'s test input.
Tensor RunImported(const std::string& path, const std::string& input) {
  const ImportedNet net = ImportOnnxFile(path);
  Workspace ws;
  ws.RunNetOnce(net.init);
  ReadOnnxTensorFile(input, ws.CreateTensor(net.inputs.at(0).name));
  ws.RunNetOnce(net.predict);
  Tensor out;
  out.CopyFrom(ws.GetTensor(net.outputs.at(0).name));
  return out;
}

// Max |got - want| relative to max |want| (which must not be degenerate).
double RelativeDifference(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.dims(), want.dims());
  if (got.dims() != want.dims()) return 1e9;
  double scale = 0, diff = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    scale = std::max(scale, static_cast<double>(std::fabs(want.data<float>()[i])));
    diff = std::max(diff, static_cast<double>(std::fabs(got.data<float>()[i] - want.data<float>()[i])));
  }
  EXPECT_GT(scale, 1e-2) << "degenerate reference output";
  return diff / std::max(scale, 1e-30);
}

TEST_F(OnnxTorchvisionTest, OutputsEqualPyTorchs) {
  for (const std::string name : {"resnet18", "resnet50", "mobilenet_v2"}) {
    SCOPED_TRACE(name);
    Tensor want;
    ReadOnnxTensorFile(*dir_ + "/" + name + "_out.pb", &want);
    EXPECT_LT(RelativeDifference(RunImported(*dir_ + "/" + name + ".onnx",
                                             *dir_ + "/" + name + "_in.pb"), want), 1e-4);
  }
}

// caffe2_to_onnx --onnx: the imported model exported back still gives PyTorch's outputs, in
// halfcaf and in ONNX Runtime.
TEST_F(OnnxTorchvisionTest, ExportsBackToOnnx) {
  for (const std::string name : {"resnet18", "resnet50", "mobilenet_v2"}) {
    SCOPED_TRACE(name);
    const std::string back = *dir_ + "/" + name + "_back.onnx";
    auto r = RunTool("caffe2_to_onnx", "--onnx " + *dir_ + "/" + name + ".onnx --out " + back);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("input input [2, 3, 32, 32]"), std::string::npos) << r.out;
    Tensor want;
    ReadOnnxTensorFile(*dir_ + "/" + name + "_out.pb", &want);
    EXPECT_LT(RelativeDifference(RunImported(back, *dir_ + "/" + name + "_in.pb"), want), 1e-4);
    if (PeerCheckRuns(Peer::kOnnxRuntime)) {
      EXPECT_LT(OrtRelativeDifference(back, "2,3,32,32", *dir_), 1e-4);
    }
  }
}

// train_net --net model.onnx fine-tunes it: on 16 synthetic images repeated, the loss falls far in
// 20 steps, in FP32 and mixed precision. caffe2_to_onnx --onnx --params exports the fine-tuned
// model: its parameters are the checkpoint's and ONNX Runtime agrees with halfcaf on it.
// One model in one precision per test (model, dtype), so that no single test runs long.
class OnnxTorchvisionFineTuneTest
    : public OnnxTorchvisionTest,
      public ::testing::WithParamInterface<std::tuple<std::string, std::string>> {};

TEST_P(OnnxTorchvisionFineTuneTest, TrainNetFineTunesAndExportsBack) {
  const auto& [name, dtype] = GetParam();
  const std::string lr = name == "resnet18" ? "0.05" : "0.02";
  const std::string common = "--net " + *dir_ + "/" + name + ".onnx --data_format synthetic "
                             "--synthetic_shape 3,32,32 --synthetic_count 16 --batch_size 16 "
                             "--iters 20 --log_every 5 --threads 2 --base_lr " + lr + " ";
  SCOPED_TRACE(name + " " + dtype);
  const std::string csv = *dir_ + "/" + name + dtype + ".csv";
  const std::string ckpt = *dir_ + "/" + name + dtype;
  auto r = RunTool("train_net", common + "--dtype " + dtype + " --log_csv " + csv +
                                    " --checkpoint_dir " + ckpt);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("input 'input', loss on 'logits'"), std::string::npos) << r.out;
  const std::vector<double> losses = CsvLosses(ReadFile(csv));
  ASSERT_EQ(losses.size(), 4u);
  EXPECT_LT(losses.back(), 0.25 * losses.front()) << r.out;

  const std::string tuned = ckpt + "/tuned.onnx";
  auto exp = RunTool("caffe2_to_onnx", "--onnx " + *dir_ + "/" + name + ".onnx --params " +
                                           ckpt + "/checkpoint.pb --out " + tuned);
  ASSERT_EQ(exp.exit_code, 0) << exp.err;
  Workspace checkpoint;
  FeedTensorProtosFile(ckpt + "/checkpoint.pb", &checkpoint);
  const ImportedNet net = ImportOnnxFile(tuned);
  Workspace ws;
  ws.RunNetOnce(net.init);
  int compared = 0;
  for (const auto& op : net.init.op()) {
    const Tensor& got = ws.GetTensor(op.output(0));
    ASSERT_TRUE(checkpoint.HasBlob(op.output(0))) << op.output(0);
    const Tensor& want = checkpoint.GetTensor(op.output(0));
    ASSERT_EQ(got.dims(), want.dims()) << op.output(0);
    ASSERT_EQ(want.dtype(), DataType::FLOAT) << op.output(0);
    for (int64_t i = 0; i < want.numel(); ++i) {
      ASSERT_EQ(got.data<float>()[i], want.data<float>()[i]) << op.output(0) << " " << i;
    }
    ++compared;
  }
  EXPECT_NE(exp.out.find(std::to_string(compared) + " parameters from"), std::string::npos)
      << exp.out;
  if (PeerCheckRuns(Peer::kOnnxRuntime)) {
    EXPECT_LT(OrtRelativeDifference(tuned, "2,3,32,32", ckpt), 1e-4);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, OnnxTorchvisionFineTuneTest,
    ::testing::Combine(::testing::Values("resnet18", "mobilenet_v2"),
                       ::testing::Values("float", "float16")),
    [](const ::testing::TestParamInfo<std::tuple<std::string, std::string>>& info) {
      return std::get<0>(info.param) + "_" + std::get<1>(info.param);
    });

// benchmark --net model.onnx times the imported model: a training step (loss added on its logits,
// FP32 and mixed precision) and the forward net alone.
TEST_F(OnnxTorchvisionTest, BenchmarkTimesTheImportedModel) {
  const std::string net = "--net " + *dir_ + "/mobilenet_v2.onnx --batch_size 2 --iters 1 "
                          "--warmup 1 --threads 2 ";
  auto train = RunTool("benchmark", net + "--precision fp32,fp16");
  ASSERT_EQ(train.exit_code, 0) << train.err;
  EXPECT_NE(train.out.find("mobilenet_v2.onnx, train"), std::string::npos) << train.out;
  EXPECT_NE(train.out.find("\nfp16 "), std::string::npos) << train.out;
  auto fwd = RunTool("benchmark", net + "--precision fp32 --mode forward");
  ASSERT_EQ(fwd.exit_code, 0) << fwd.err;
  EXPECT_NE(fwd.out.find("\nfp32 "), std::string::npos) << fwd.out;
  ExpectOneLineError(RunTool("benchmark", net + "--init_net x.pb"), "benchmark",
                     "leave out --init_net");
}

// --num_classes replaces the classifier; the export of the fine-tuned model has 7 outputs.
TEST_F(OnnxTorchvisionTest, NewClassifierExportsWithItsClasses) {
  const std::string common = "--net " + *dir_ + "/resnet18.onnx --data_format synthetic "
                             "--synthetic_shape 3,32,32 --synthetic_count 16 --batch_size 16 "
                             "--log_every 5 --threads 2 ";
  const std::string ckpt = *dir_ + "/seven";
  auto seven = RunTool("train_net", common + "--num_classes 7 --iters 5 --checkpoint_dir " + ckpt);
  ASSERT_EQ(seven.exit_code, 0) << seven.err;
  EXPECT_NE(seven.out.find("classifier replaced"), std::string::npos) << seven.out;
  auto exp = RunTool("caffe2_to_onnx", "--onnx " + *dir_ + "/resnet18.onnx --params " + ckpt +
                                           "/checkpoint.pb --out " + ckpt + "/seven.onnx");
  ASSERT_EQ(exp.exit_code, 0) << exp.err;
  EXPECT_EQ(RunImported(ckpt + "/seven.onnx", *dir_ + "/resnet18_in.pb").dims(),
            (std::vector<int64_t>{2, 7}));

  ExpectOneLineError(RunTool("train_net", common + "--iters 5 --init_net x.pb"), "train_net",
                     "leave out --init_net");
  ExpectOneLineError(RunTool("train_net", common + "--iters 5 --logits nothing_like_this"),
                     "train_net", "nothing_like_this");
  // A checkpoint of another net is refused, not exported with the old parameters.
  ExpectOneLineError(RunTool("caffe2_to_onnx", "--onnx " + *dir_ + "/mobilenet_v2.onnx --params " +
                                                   ckpt + "/checkpoint.pb --out " + ckpt + "/x.onnx"),
                     "caffe2_to_onnx", "none of the init net's");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
