// Training that is PyTorch's training, step by step. For each model family, the PyTorch peer
// (tools/peers/train_equivalence.py) builds the model from a fixed seed, exports it for training
// to ONNX (BatchNorm stays a trainable layer), trains it on one fixed batch of 64 Fashion-MNIST
// images with momentum SGD and writes every step's loss and the final state. train_net then
// fine-tunes the same ONNX file on the same batch with the same settings, caffe2_to_onnx exports
// the result, and:
//   - every step's loss agrees within 1e-3 relative (1e-4 absolute below 0.1), 30 steps;
//   - every final parameter and BatchNorm running statistic of the exported model agrees with
//     PyTorch's within 1e-3 relative L2.
// Needs python3-torch and python3-onnx (skipped without them, failed under HALFCAF_PEER=1).
//
// Adding a case: a family in train_equivalence.py's FAMILIES (an nn.Module) and a line in
// Cases() below with the optimizer settings, given to both sides.
#include <sys/stat.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/workspace.h"
#include "onnx/onnx_import.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/op_test_util.h"
#include "tests/util/peer.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

struct EquivalenceCase {
  std::string name;
  std::string family;  // train_equivalence.py --family
  double lr = 0.01, momentum = 0.9, weight_decay = 0;
  bool nesterov = false;
  int steps = 30;
};

std::ostream& operator<<(std::ostream& os, const EquivalenceCase& c) { return os << c.name; }

std::vector<EquivalenceCase> Cases() {
  std::vector<EquivalenceCase> cases;
  cases.push_back({"mlp", "mlp"});
  cases.push_back({"lenet_nesterov", "lenet", 0.01, 0.9, 0, true});
  cases.push_back({"bn_cnn", "bn_cnn"});
  cases.push_back({"bn_cnn_weight_decay", "bn_cnn", 0.01, 0.9, 5e-4});
  cases.push_back({"resnet_block", "resnet_block"});
  return cases;
}

std::vector<double> TextLosses(const std::string& text) {
  std::vector<double> out;
  std::istringstream in(text);
  double v;
  while (in >> v) out.push_back(v);
  return out;
}

// |a - b| / |b| over all values (L2); the absolute L2 difference when b is all zeros.
double RelativeL2(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    ref += static_cast<double>(b[i]) * b[i];
  }
  return ref > 0 ? std::sqrt(diff / ref) : std::sqrt(diff);
}

class TrainEquivalenceTest : public ::testing::TestWithParam<EquivalenceCase> {
 protected:
  void SetUp() override {
    if (!OnnxAvailable()) GTEST_SKIP() << OnnxMissingHint();
    HALFCAF_REQUIRE_PEER(Peer::kTorchOnnxExport);
  }
};

TEST_P(TrainEquivalenceTest, EveryStepLikePyTorch) {
  const EquivalenceCase& c = GetParam();
  const std::string dir = TestTempDir() + "/equivalence_" + c.name;
  mkdir(dir.c_str(), 0755);
  std::ostringstream settings;
  settings << " --lr " << c.lr << " --momentum " << c.momentum << " --weight_decay "
           << c.weight_decay << " --steps " << c.steps << (c.nesterov ? " --nesterov" : "");
  const auto peer = RunShell("/usr/bin/python3 " + SourceDir() +
                             "/tools/peers/train_equivalence.py --family " + c.family + " --out " +
                             dir + settings.str());
  ASSERT_EQ(peer.exit_code, 0) << peer.err;

  std::ostringstream flags;
  flags << "--net " << dir << "/model.onnx --train_data " << dir
        << "/train-images-idx3-ubyte --data_format idx --batch_size 64 --iters " << c.steps
        << " --log_every 1 --log_csv " << dir << "/halfcaf.csv --checkpoint_dir " << dir
        << "/ckpt --threads 1 --base_lr " << c.lr << " --momentum " << c.momentum
        << " --weight_decay " << c.weight_decay << " --weight_decay_all"
        << (c.nesterov ? " --nesterov" : "");
  const auto run = RunTool("train_net", flags.str());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;

  const std::vector<double> want = TextLosses(ReadFile(dir + "/torch_losses.txt"));
  const std::vector<double> got = CsvLosses(ReadFile(dir + "/halfcaf.csv"));
  ASSERT_EQ(want.size(), static_cast<size_t>(c.steps));
  ASSERT_EQ(got.size(), want.size()) << run.out;
  for (size_t i = 0; i < want.size(); ++i) {
    const double tol = want[i] < 0.1 ? 1e-4 : 1e-3 * want[i];
    EXPECT_NEAR(got[i], want[i], tol) << "step " << i;
  }

  // Final state: every initializer of the model (parameters and running statistics), as
  // caffe2_to_onnx exports the fine-tuned model.
  const auto exported = RunTool("caffe2_to_onnx", "--onnx " + dir + "/model.onnx --params " + dir +
                                                      "/ckpt/checkpoint.pb --out " + dir +
                                                      "/tuned.onnx");
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  Workspace torch_final;
  torch_final.RunNetOnce(ImportOnnxFile(dir + "/torch_final.onnx").init);
  Workspace ours;
  ours.RunNetOnce(ImportOnnxFile(dir + "/tuned.onnx").init);
  const ImportedNet model = ImportOnnxFile(dir + "/model.onnx");
  int compared = 0;
  for (const auto& op : model.init.op()) {
    const std::string& name = op.output(0);
    if (!torch_final.HasBlob(name) || torch_final.GetTensor(name).dtype() != DataType::FLOAT) {
      continue;
    }
    ASSERT_TRUE(ours.HasBlob(name)) << name << " is not in the exported model";
    const Tensor& t = torch_final.GetTensor(name);
    EXPECT_LT(RelativeL2(ToFloatVector(ours.GetTensor(name)), ToFloatVector(t)), 1e-3) << name;
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

// PyTorch's default (eval-mode) export folds each BatchNorm into the convolution before it: the
// model still imports and fine-tunes, with a warning naming the folded convolutions and how to
// export for training; the loss no longer follows PyTorch's (which trains the BatchNorm).
TEST_F(TrainEquivalenceTest, EvalExportTrainsWithAWarning) {
  const std::string dir = TestTempDir() + "/equivalence_eval_export";
  mkdir(dir.c_str(), 0755);
  const auto peer = RunShell("/usr/bin/python3 " + SourceDir() +
                             "/tools/peers/train_equivalence.py --family bn_cnn --eval_export "
                             "--out " + dir);
  ASSERT_EQ(peer.exit_code, 0) << peer.err;
  const auto run = RunTool("train_net", "--net " + dir + "/model.onnx --train_data " + dir +
                                            "/train-images-idx3-ubyte --data_format idx "
                                            "--batch_size 64 --iters 30 --log_every 1 --log_csv " +
                                            dir + "/halfcaf.csv --threads 1 --momentum 0.9");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find(", 0 BatchNorm layers trained"), std::string::npos) << run.out;
  EXPECT_NE(run.err.find("warning: 2 convolutions have BatchNorm folded in by the exporter"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("training=torch.onnx.TrainingMode.TRAINING"), std::string::npos);
  const std::vector<double> got = CsvLosses(ReadFile(dir + "/halfcaf.csv"));
  const std::vector<double> torch = TextLosses(ReadFile(dir + "/torch_losses.txt"));
  ASSERT_EQ(got.size(), 30u);
  ASSERT_EQ(torch.size(), 30u);
  EXPECT_LT(got.back(), got.front());                 // it trains,
  EXPECT_GT(std::fabs(got.back() - torch.back()), 0.1);  // but not as PyTorch's BatchNorm net
}

INSTANTIATE_TEST_SUITE_P(Families, TrainEquivalenceTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<EquivalenceCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace testing
}  // namespace halfcaf
