// The AC-GAN's training is PyTorch's, step by step: the same initial weights (halfcaf's, written
// as .npy), the same real batches, noise and requested classes, Adam (lr 2e-4, beta1 0.5) on
// both networks; each iteration a discriminator step and a generator step. The PyTorch peer
// (tools/peers/acgan_pytorch.py --equivalence) writes every step's d_loss and g_loss and the
// final state. Bounds, as tests/tools/train_equivalence_test.cc's:
//   - FP32: every step's losses within 1e-3 relative (absolute below 0.1), every final parameter
//     and BatchNorm statistic within 1e-3 relative L2;
//   - mixed precision (BF16; FP16 with a static loss scale of 128): the drift of the losses from
//     PyTorch's FP32 run at most twice PyTorch's own mixed-precision drift (at least 1e-3).
// Dropout is off (its masks cannot match). Needs python3-torch (skipped without it, failed
// under HALFCAF_PEER=1).
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/npy.h"
#include "models/gan_trainer.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/peer.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

constexpr int kSteps = 12, kBatch = 16, kNoise = 100, kClasses = 10;

// Per-step inputs: (S, B, ...) arrays, the same for both frameworks.
struct Inputs {
  Tensor real{{kSteps, kBatch, 1, 28, 28}, DataType::FLOAT};
  Tensor real_label{{kSteps, kBatch}, DataType::INT64};
  Tensor d_noise{{kSteps, kBatch, kNoise}, DataType::FLOAT};
  Tensor d_gen_label{{kSteps, kBatch}, DataType::INT64};
  Tensor g_noise{{kSteps, kBatch, kNoise}, DataType::FLOAT};
  Tensor g_gen_label{{kSteps, kBatch}, DataType::INT64};
};

// Real images: smooth class-dependent blobs in [-1, 1] (the generator's range), no data files.
Inputs MakeInputs() {
  Inputs in;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_int_distribution<int64_t> cls(0, kClasses - 1);
  for (int64_t i = 0; i < kSteps * kBatch; ++i) {
    const int64_t c = cls(rng);
    in.real_label.mutable_data<int64_t>()[i] = c;
    float* img = in.real.mutable_data<float>() + i * 784;
    const float cy = 6.f + 1.6f * static_cast<float>(c), cx = 14.f + 3.f * normal(rng);
    for (int y = 0; y < 28; ++y) {
      for (int x = 0; x < 28; ++x) {
        const float d2 = (y - cy) * (y - cy) + (x - cx) * (x - cx);
        img[y * 28 + x] = 2.f * std::exp(-d2 / 18.f) - 1.f;
      }
    }
    in.d_gen_label.mutable_data<int64_t>()[i] = cls(rng);
    in.g_gen_label.mutable_data<int64_t>()[i] = cls(rng);
  }
  for (Tensor* t : {&in.d_noise, &in.g_noise}) {
    for (int64_t i = 0; i < t->numel(); ++i) t->mutable_data<float>()[i] = normal(rng);
  }
  return in;
}

// Step s of an (S, B, ...) array, as the net's blob (labels int32).
Tensor Slice(const Tensor& all, int s) {
  std::vector<int64_t> dims(all.dims().begin() + 1, all.dims().end());
  const int64_t n = all.numel() / all.dim(0);
  if (all.dtype() == DataType::INT64) {
    Tensor out(dims, DataType::INT32);
    for (int64_t i = 0; i < n; ++i) {
      out.mutable_data<int32_t>()[i] = static_cast<int32_t>(all.data<int64_t>()[s * n + i]);
    }
    return out;
  }
  Tensor out(dims, DataType::FLOAT);
  std::copy_n(all.data<float>() + s * n, n, out.mutable_data<float>());
  return out;
}

struct GanRun {
  std::vector<double> d_loss, g_loss;
  std::map<std::string, Tensor> state;
};

GanTrainerOptions Options(DataType precision) {
  GanTrainerOptions o = GanTrainerOptions::Default();
  o.feed_inputs = true;
  o.model.batch_size = kBatch;
  o.model.dropout = 0.f;
  o.precision = precision;
  if (precision == DataType::FLOAT16) o.loss_scale = 128.f;
  return o;
}

std::vector<std::string> StateNames(const AcGanNets& nets) {
  std::vector<std::string> names = nets.g_params;
  names.insert(names.end(), nets.d_params.begin(), nets.d_params.end());
  return names;
}

// halfcaf's run; with write_init, its initial state goes to dir/init/<name>.npy first.
GanRun RunHalfcaf(const Inputs& in, DataType precision, const std::string& dir, bool write_init) {
  GanTrainer t(Options(precision));
  t.Initialize();
  Workspace* ws = t.workspace();
  if (write_init) {
    mkdir((dir + "/init").c_str(), 0755);
    for (const auto& name : StateNames(t.nets())) {
      WriteNpy(ws->GetTensor(name), dir + "/init/" + name + ".npy");
    }
  }
  GanRun r;
  for (int s = 0; s < kSteps; ++s) {
    ws->CreateTensor("data")->CopyFrom(Slice(in.real, s));
    ws->CreateTensor("label")->CopyFrom(Slice(in.real_label, s));
    ws->CreateTensor("d_noise")->CopyFrom(Slice(in.d_noise, s));
    ws->CreateTensor("d_gen_label")->CopyFrom(Slice(in.d_gen_label, s));
    ws->CreateTensor("g_noise")->CopyFrom(Slice(in.g_noise, s));
    ws->CreateTensor("g_gen_label")->CopyFrom(Slice(in.g_gen_label, s));
    t.Step();
    r.d_loss.push_back(ws->GetTensor("d_loss").data<float>()[0]);
    r.g_loss.push_back(ws->GetTensor("g_loss").data<float>()[0]);
  }
  for (const auto& name : StateNames(t.nets())) r.state[name].CopyFrom(ws->GetTensor(name));
  return r;
}

GanRun ReadTorch(const std::string& dir, const std::vector<std::string>& names) {
  GanRun r;
  std::ifstream in(dir + "/torch_losses.txt");
  double d, g;
  while (in >> d >> g) {
    r.d_loss.push_back(d);
    r.g_loss.push_back(g);
  }
  for (const auto& name : names) r.state[name] = ReadNpy(dir + "/final/" + name + ".npy");
  return r;
}

double LossDeviation(double got, double want) {
  return std::fabs(got - want) / std::max(std::fabs(want), 0.1);
}

double RelativeL2(const Tensor& a, const Tensor& b) {
  double diff = 0, ref = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    diff += (x - y) * (x - y);
    ref += y * y;
  }
  return ref > 0 ? std::sqrt(diff / ref) : std::sqrt(diff);
}

// The largest loss deviation of `run` from `ref` over both losses and every step.
double MaxDeviation(const GanRun& run, const GanRun& ref) {
  double m = 0;
  for (size_t i = 0; i < ref.d_loss.size() && i < run.d_loss.size(); ++i) {
    m = std::max({m, LossDeviation(run.d_loss[i], ref.d_loss[i]),
                  LossDeviation(run.g_loss[i], ref.g_loss[i])});
  }
  return m;
}

class GanEquivalenceTest : public ::testing::Test {
 protected:
  void SetUp() override { HALFCAF_REQUIRE_PEER(Peer::kTorch); }

  // The peer on dir's arrays: `precision` fp32 | bf16 | fp16, into dir/<out>.
  static GanRun Torch(const std::string& dir, const std::string& precision,
                   const std::vector<std::string>& names) {
    const auto r = RunShell("/usr/bin/python3 " + SourceDir() +
                            "/tools/peers/acgan_pytorch.py --equivalence " + dir +
                            " --dropout 0 --precision " + precision + " --out_name " + precision);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return ReadTorch(dir + "/" + precision, names);
  }
};

TEST_F(GanEquivalenceTest, DiscriminatorAndGeneratorStepsLikePyTorch) {
  const std::string dir = TestTempDir() + "/gan_equivalence";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  const Inputs in = MakeInputs();
  WriteNpy(in.real, dir + "/real.npy");
  WriteNpy(in.real_label, dir + "/real_label.npy");
  WriteNpy(in.d_noise, dir + "/d_noise.npy");
  WriteNpy(in.d_gen_label, dir + "/d_gen_label.npy");
  WriteNpy(in.g_noise, dir + "/g_noise.npy");
  WriteNpy(in.g_gen_label, dir + "/g_gen_label.npy");
  const GanRun ours = RunHalfcaf(in, DataType::FLOAT, dir, /*write_init=*/true);
  std::vector<std::string> names;
  for (const auto& kv : ours.state) names.push_back(kv.first);
  const GanRun torch = Torch(dir, "fp32", names);
  ASSERT_EQ(torch.d_loss.size(), static_cast<size_t>(kSteps));

  // PyTorch's own sensitivity: its run from initial weights changed by 1e-7 (relative).
  const std::string perturbed = dir + "/perturbed";
  std::system(("mkdir -p " + perturbed + "/init").c_str());
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (const auto& name : names) {
    Tensor t = ReadNpy(dir + "/init/" + name + ".npy");
    for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] *= 1.f + 1e-7f * normal(rng);
    WriteNpy(t, perturbed + "/init/" + name + ".npy");
  }
  for (const char* a : {"real", "real_label", "d_noise", "d_gen_label", "g_noise", "g_gen_label"}) {
    std::system(("ln -sf " + dir + "/" + a + ".npy " + perturbed + "/" + a + ".npy").c_str());
  }
  const GanRun torch_perturbed = Torch(perturbed, "fp32", names);
  ASSERT_EQ(torch_perturbed.d_loss.size(), static_cast<size_t>(kSteps));

  // FP32: every step of both losses within 1e-3 while PyTorch's perturbed run stays within 1e-4
  // of it, then within twice the largest difference that run reaches (a GAN trained with Adam
  // amplifies rounding differences: biases with near-zero gradients take steps of size lr in
  // either direction); the final state likewise.
  double spread = 0;
  for (int s = 0; s < kSteps; ++s) {
    spread = std::max({spread, LossDeviation(torch_perturbed.d_loss[s], torch.d_loss[s]),
                       LossDeviation(torch_perturbed.g_loss[s], torch.g_loss[s])});
  }
  double running = 0;
  for (int s = 0; s < kSteps; ++s) {
    running = std::max({running, LossDeviation(torch_perturbed.d_loss[s], torch.d_loss[s]),
                        LossDeviation(torch_perturbed.g_loss[s], torch.g_loss[s])});
    const double bound = running < 1e-4 ? 1e-3 : std::max(1e-3, 2 * spread);
    EXPECT_LE(LossDeviation(ours.d_loss[s], torch.d_loss[s]), bound)
        << "step " << s << " d_loss " << ours.d_loss[s] << " vs PyTorch's " << torch.d_loss[s];
    EXPECT_LE(LossDeviation(ours.g_loss[s], torch.g_loss[s]), bound)
        << "step " << s << " g_loss " << ours.g_loss[s] << " vs PyTorch's " << torch.g_loss[s];
  }
  double state_spread = 0, worst = 0;
  for (const auto& name : names) {
    state_spread = std::max(state_spread, RelativeL2(torch_perturbed.state.at(name),
                                                     torch.state.at(name)));
  }
  const double state_bound = std::max(1e-3, 2 * state_spread);
  for (const auto& name : names) {
    const Tensor& a = ours.state.at(name);
    const Tensor& b = torch.state.at(name);
    ASSERT_EQ(a.numel(), b.numel()) << name;
    const double dev = RelativeL2(a, b);
    worst = std::max(worst, dev);
    EXPECT_LE(dev, state_bound) << name;
  }
  std::cout << "GAN equivalence fp32: loss deviation " << MaxDeviation(ours, torch)
            << " (PyTorch's spread " << spread << "), final state " << worst << " (bound "
            << state_bound << ")\n";

  // Mixed precision: drift from PyTorch's FP32 run within twice PyTorch's own.
  for (const auto& [precision, name] : {std::pair<DataType, std::string>{DataType::BFLOAT16, "bf16"},
                                        {DataType::FLOAT16, "fp16"}}) {
    const GanRun ours_low = RunHalfcaf(in, precision, dir, false);
    const GanRun torch_low = Torch(dir, name, names);
    ASSERT_EQ(torch_low.d_loss.size(), static_cast<size_t>(kSteps)) << name;
    const double theirs = MaxDeviation(torch_low, torch), mine = MaxDeviation(ours_low, torch);
    EXPECT_LE(mine, std::max(2 * theirs, 1e-3))
        << name << ": halfcaf drifts " << mine << " from PyTorch's FP32 run, PyTorch " << theirs;
    std::cout << "GAN equivalence " << name << ": drift " << mine << ", PyTorch's " << theirs
              << "\n";
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
