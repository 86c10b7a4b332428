// The AC-GAN's nets and its two-net trainer: shapes, which network each step updates, and that
// every precision trains (finite losses, the mixed-precision state per net).
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/net.h"
#include "core/workspace.h"
#include "models/acgan.h"
#include "models/gan_trainer.h"
#include "models/training_job.h"

namespace halfcaf {
namespace testing {
namespace {

GanTrainerOptions Synthetic(DataType precision) {
  GanTrainerOptions o = GanTrainerOptions::Default();
  o.data_format = "synthetic";
  o.reader_args = {MakeArgument("synthetic_shape", std::vector<int64_t>{1, 28, 28}),
                   MakeArgument("num_classes", 10), MakeArgument("synthetic_count", int64_t{256})};
  o.model.batch_size = 16;
  o.precision = precision;
  if (precision == DataType::FLOAT16) {
    o.dynamic_loss_scale = true;
    o.loss_scale = 1024.f;
  }
  o.prefetch = false;
  return o;
}

std::vector<char> Bytes(const Tensor& t) {
  const char* p = static_cast<const char*>(t.raw_data());
  return std::vector<char>(p, p + t.nbytes());
}

// Three iterations' losses and the parameters after them, as bytes.
struct Trained {
  std::vector<double> losses;
  std::map<std::string, std::vector<char>> params;
};
Trained TrainThreeIterations(GanTrainer* t) {
  Trained r;
  for (int i = 0; i < 3; ++i) {
    t->Step();
    const GanStats s = t->ReadStats();
    r.losses.insert(r.losses.end(), {s.d_loss, s.g_loss});
  }
  for (const auto& p : t->nets().g_params) r.params[p] = Bytes(t->workspace()->GetTensor(p));
  for (const auto& p : t->nets().d_params) r.params[p] = Bytes(t->workspace()->GetTensor(p));
  return r;
}

// The first run's result is kept in *want; later ones must equal it bit for bit.
void ExpectSameOrKeep(const Trained& got, Trained* want) {
  if (want->losses.empty()) {
    *want = got;
    return;
  }
  EXPECT_EQ(got.losses, want->losses);
  for (const auto& [name, bytes] : want->params) EXPECT_EQ(got.params.at(name), bytes) << name;
}

TEST(AcGanTest, NetsHaveTheDocumentedShapes) {
  AcGanOptions o;
  o.batch_size = 4;
  o.noise_ops = false;
  const AcGanNets nets = BuildAcGan(o);
  Workspace ws;
  ws.RunNetOnce(nets.init);
  EXPECT_EQ(ws.GetTensor("g_fc_w").dims(), (std::vector<int64_t>{6272, 100}));
  EXPECT_EQ(ws.GetTensor("g_deconv1_w").dims(), (std::vector<int64_t>{128, 64, 4, 4}));
  EXPECT_EQ(ws.GetTensor("d_cls_w").dims(), (std::vector<int64_t>{10, 6272}));
  Tensor noise({4, 100}, DataType::FLOAT), label({4}, DataType::INT32);
  for (int64_t i = 0; i < noise.numel(); ++i) noise.mutable_data<float>()[i] = 0.01f * (i % 17);
  for (int i = 0; i < 4; ++i) label.mutable_data<int32_t>()[i] = i;
  ws.CreateTensor(kAcGanSampleNoise)->CopyFrom(noise);
  ws.CreateTensor(kAcGanSampleLabel)->CopyFrom(label);
  ws.RunNetOnce(nets.sampler);
  const Tensor& s = ws.GetTensor(kAcGanSample);
  EXPECT_EQ(s.dims(), (std::vector<int64_t>{4, 1, 28, 28}));
  for (int64_t i = 0; i < s.numel(); ++i) {
    ASSERT_LE(std::fabs(s.data<float>()[i]), 1.f);
  }
  EXPECT_THROW(BuildAcGan(AcGanOptions{0}), EnforceNotMet);
}

// Each step updates its own network only; the frozen bias stays zero.
TEST(GanTrainerTest, EachStepUpdatesItsOwnNetwork) {
  GanTrainer t(Synthetic(DataType::FLOAT));
  t.Initialize();
  std::map<std::string, std::vector<char>> before;
  const AcGanNets& n = t.nets();
  for (const auto& p : n.g_params) before[p] = Bytes(t.workspace()->GetTensor(p));
  for (const auto& p : n.d_params) before[p] = Bytes(t.workspace()->GetTensor(p));
  t.Step();
  for (const char* p : {"g_fc_w", "g_embed_w", "g_deconv2_b", "d_conv1_w", "d_cls_b"}) {
    EXPECT_NE(Bytes(t.workspace()->GetTensor(p)), before[p]) << p << " did not change";
  }
  EXPECT_EQ(Bytes(t.workspace()->GetTensor("g_fc_b")), before["g_fc_b"]);
  EXPECT_EQ(t.iteration(), 1);
  // The generator's optimizer holds no state for the discriminator and the reverse.
  EXPECT_TRUE(t.workspace()->HasBlob("g/g_fc_w_moment_1") || t.workspace()->HasBlob("g_fc_w_moment_1"));
  EXPECT_FALSE(t.workspace()->HasBlob("g/d_conv1_w_moment_1"));
  EXPECT_FALSE(t.workspace()->HasBlob("d/g_fc_w_moment_1"));
}

TEST(GanTrainerTest, TrainsInEveryPrecision) {
  for (DataType p : {DataType::FLOAT, DataType::BFLOAT16, DataType::FLOAT16}) {
    SCOPED_TRACE(DataTypeName(p));
    GanTrainer t(Synthetic(p));
    t.Initialize();
    for (int i = 0; i < 6; ++i) t.Step();
    const GanStats s = t.ReadStats();
    EXPECT_EQ(s.iter, 6);
    EXPECT_EQ(s.steps, 6);
    EXPECT_TRUE(std::isfinite(s.d_loss) && s.d_loss > 0) << s.d_loss;
    EXPECT_TRUE(std::isfinite(s.g_loss) && s.g_loss > 0) << s.g_loss;
    EXPECT_LT(s.d_skipped + s.g_skipped, 6);
    Tensor labels;
    const Tensor img = t.SampleClasses(2, 3, &labels);
    EXPECT_EQ(img.dims(), (std::vector<int64_t>{20, 1, 28, 28}));
    EXPECT_EQ(labels.data<int32_t>()[19], 9);
    for (int64_t i = 0; i < img.numel(); ++i) {
      ASSERT_TRUE(img.data<float>()[i] >= 0.f && img.data<float>()[i] <= 1.f);
    }
  }
}

// Recomputation in both nets' backward passes (the generator's batch normalizations and ReLUs,
// the discriminator's LeakyReLUs; with "all" its convolutions too): the same losses and
// parameters, bit for bit.
TEST(GanTrainerTest, RecomputeTrainsBitForBitAsWithout) {
  Trained want;
  for (const char* mode : {"off", "elementwise", "all"}) {
    SCOPED_TRACE(mode);
    GanTrainerOptions o = Synthetic(DataType::FLOAT);
    o.recompute = mode;
    GanTrainer t(o);
    t.Initialize();
    ExpectSameOrKeep(TrainThreeIterations(&t), &want);
  }
}

// FP32 on oneDNN's channel-blocked layout (blocked_layout auto, the default where oneDNN blocks):
// the convolutions, both transposed convolutions but the generator's last (to one channel), the
// training batch normalizations and the element-wise ops between them, Dropout included, run on
// blocked tensors, and the training is the NCHW training bit for bit (the same kernels; Dropout
// keeps the same elements).
TEST(GanTrainerTest, BlockedLayoutTrainsBitForBitAsNchw) {
  Trained want;
  for (const char* mode : {"off", "auto"}) {
    SCOPED_TRACE(mode);
    GanTrainerOptions o = Synthetic(DataType::FLOAT);
    o.model.dropout = 0.4f;
    o.blocked_layout = mode;
    GanTrainer t(o);
    t.Initialize();
    if (std::string(mode) == "auto") {
      if (!t.channel_blocked()) GTEST_SKIP() << "oneDNN keeps plain layouts on this CPU";
      std::map<std::string, int> blocked;  // op type -> ops with channel_block, both step nets
      for (const JobNet& net : t.job().nets) {
        for (const auto& op : net.step.op()) {
          for (const auto& a : op.arg()) {
            if (a.name() == "channel_block" && a.i() > 0) ++blocked[op.type()];
          }
        }
      }
      EXPECT_GE(blocked["Conv"], 4);
      EXPECT_GE(blocked["ConvTranspose"], 2);  // the generator's first, in each step net
      EXPECT_GE(blocked["ConvTransposeGradient"], 1);
      EXPECT_GE(blocked["Dropout"], 4);
      EXPECT_GE(blocked["SpatialBN"], 2);
    }
    ExpectSameOrKeep(TrainThreeIterations(&t), &want);
  }
}

// The generator's step takes the gradient through the discriminator's convolutions for their
// dX alone (the discriminator is frozen there): the backward pass marks those gradient ops
// no_weight_gradient, and the discriminator's own step, which trains them, does not.
TEST(GanTrainerTest, FrozenConvolutionsComputeOnlyTheirDataGradient) {
  GanTrainer t(Synthetic(DataType::FLOAT));
  auto marked = [](const NetDef& step, bool* any_conv_grad) {
    int n = 0;
    for (const auto& op : step.op()) {
      if (op.type() != "ConvGradient") continue;
      *any_conv_grad = true;
      for (const auto& a : op.arg()) n += a.name() == "no_weight_gradient" && a.i() == 1;
    }
    return n;
  };
  bool d_has = false, g_has = false;
  EXPECT_EQ(marked(t.job().nets[0].step, &d_has), 0);
  EXPECT_EQ(marked(t.job().nets[1].step, &g_has), 2);  // d_conv1's and d_conv2's
  EXPECT_TRUE(d_has && g_has);
}

int64_t TensorBytes(const Workspace& ws) {
  int64_t n = 0;
  for (const auto& name : ws.Blobs()) {
    const Blob* b = ws.GetBlob(name);
    if (b && b->IsTensor()) n += static_cast<int64_t>(b->GetTensor().nbytes());
  }
  return n;
}

// Memory planning over an iteration's four nets (on by default): the temporaries of both steps
// share buffers, and the training is the unplanned training bit for bit, in every precision,
// with Dropout, and with the activations recomputed.
TEST(GanTrainerTest, MemoryPlanTrainsBitForBitAsWithout) {
  for (DataType p : {DataType::FLOAT, DataType::BFLOAT16, DataType::FLOAT16}) {
    for (const char* recompute : {"off", "all"}) {
      SCOPED_TRACE(std::string(DataTypeName(p)) + ", recompute " + recompute);
      Trained want;
      int64_t unplanned = 0;
      for (bool plan : {false, true}) {
        GanTrainerOptions o = Synthetic(p);
        o.model.dropout = 0.4f;
        o.recompute = recompute;
        o.optimize_memory = plan;
        GanTrainer t(o);
        t.Initialize();
        ExpectSameOrKeep(TrainThreeIterations(&t), &want);
        const int64_t bytes = TensorBytes(*t.workspace());
        if (!plan) unplanned = bytes;
        // Parameters and optimizer state are a third of the unplanned workspace at batch 16.
        if (plan) EXPECT_LT(bytes, unplanned * 3 / 4) << bytes << " bytes against " << unplanned;
      }
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
