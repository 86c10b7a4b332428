// The channels-last transform (models/channels_last.h) and the trainer's use of it: the rewritten
// net computes what the NCHW net computes (forward outputs, training losses and parameters), its
// convolutions, batch normalizations and pools run NHWC, and NCHW comes back only where an op that
// was not converted reads an activation (the FC after a pool, the loss, a kept blob).
#include "models/channels_last.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/net.h"
#include "core/workspace.h"
#include "models/backward.h"
#include "models/model_helper.h"
#include "models/trainer.h"
#include "models/zoo.h"
#include "operators/nn/bf16_kernels.h"
#include "operators/nn/channel_block.h"
#include "tests/util/resnet_job.h"
#include "tests/util/tiny_training.h"

namespace halfcaf {
namespace testing {
namespace {

int CountType(const NetDef& net, const std::string& type) {
  int n = 0;
  for (const auto& op : net.op()) n += op.type() == type;
  return n;
}

std::string OrderArg(const OperatorDef& op) {
  return ArgumentHelper(op).GetSingleArgument<std::string>("order", "NCHW");
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// ResNet-18 on 3 x 32 x 32 images: every convolution, batch normalization and pool goes NHWC,
// each residual Sum and ReLU stays there, and the only transposes are the data's, the filters'
// and the global pool's output on its way to the FC.
TEST(ChannelsLastTest, ResNetRunsNhwcFromTheFirstConvolutionToThePool) {
  ModelHelper h("resnet18", "NCHW", false);
  BuildResNet(&h, 18, 10, 32);
  const NetDef& fwd = h.net();
  const ChannelsLastResult r = ToChannelsLast(fwd, {});
  const int convs = CountType(fwd, "Conv");
  ASSERT_EQ(convs, 20);
  EXPECT_EQ(r.converted_convs, convs);
  EXPECT_EQ(CountType(r.net, "NCHW2NHWC"), 1 + convs);  // the data, each filter
  EXPECT_EQ(CountType(r.net, "NHWC2NCHW"), 1);          // pool5, for the FC
  EXPECT_EQ(r.transposes, 2 + convs);
  const std::vector<std::string> params = h.ParamNames();
  std::set<std::string> transposed_params;
  for (const auto& op : r.net.op()) {
    const std::string& t = op.type();
    if (t == "NCHW2NHWC" && std::count(params.begin(), params.end(), op.input(0))) {
      EXPECT_EQ(op.output(0), ChannelsLastName(op.input(0)));
      transposed_params.insert(op.output(0));
    }
    if (t == "Conv" || t == "SpatialBN" || t == "MaxPool" || t == "AveragePool") {
      EXPECT_EQ(OrderArg(op), "NHWC") << t << " " << op.output(0);
      EXPECT_TRUE(EndsWith(op.input(0), "_nhwc")) << t << " reads " << op.input(0);
      EXPECT_TRUE(EndsWith(op.output(0), "_nhwc")) << t << " writes " << op.output(0);
    }
    if (t == "Conv") {
      EXPECT_TRUE(transposed_params.count(op.input(1))) << op.output(0) << " reads " << op.input(1);
    }
    if (t == "SpatialBN") {  // scale, bias and statistics keep their names
      for (int i = 1; i < op.input_size(); ++i) EXPECT_FALSE(EndsWith(op.input(i), "_nhwc"));
      for (int i = 1; i < op.output_size(); ++i) EXPECT_FALSE(EndsWith(op.output(i), "_nhwc"));
    }
    if (t == "Sum" || t == "Relu") {
      for (const auto& in : op.input()) EXPECT_TRUE(EndsWith(in, "_nhwc")) << t << " reads " << in;
    }
    if (t == "FC") {
      EXPECT_EQ(op.input(0), "pool5");
    }
  }
}

// With nchw_filters (CPU): the convolutions read the NCHW filters themselves (filter_order NCHW),
// so the data's transpose is the only one in front; the forward is the NCHW net's.
TEST(ChannelsLastTest, NchwFiltersAreReadAsTheyAre) {
  ModelHelper h("resnet18", "NCHW", false);
  BuildResNet(&h, 18, 10, 32);
  const ChannelsLastResult r = ToChannelsLast(h.net(), {}, nullptr, true);
  EXPECT_EQ(r.converted_convs, 20);
  EXPECT_EQ(CountType(r.net, "NCHW2NHWC"), 1);  // the data
  EXPECT_EQ(CountType(r.net, "NHWC2NCHW"), 1);  // pool5, for the FC
  const std::vector<std::string> params = h.ParamNames();
  for (const auto& op : r.net.op()) {
    if (op.type() != "Conv") continue;
    EXPECT_EQ(OrderArg(op), "NHWC");
    EXPECT_EQ(ArgumentHelper(op).GetSingleArgument<std::string>("filter_order", ""), "NCHW");
    EXPECT_TRUE(std::count(params.begin(), params.end(), op.input(1))) << op.input(1);
  }
}

// Training with the filters read as they are is training with transposed copies, bit for bit:
// BF16 mixed precision (oneDNN reorders either layout into the same blocked filter) and FP32.
TEST(ChannelsLastTest, NchwFiltersTrainBitForBitAsTransposedOnes) {
  for (const DataType precision : {DataType::BFLOAT16, DataType::FLOAT}) {
    SCOPED_TRACE(DataTypeName(precision));
    auto run = [&](bool nchw_filters) {
      return TrainResNet18Job(precision, [&](TrainingJob* job) {
        job->channels_last = true;
        job->nchw_filters = nchw_filters;
      });
    };
    const TrainedJob transposed = run(false), as_they_are = run(true);
    // The data's, and in the backward part the gradient of pool5's way back to NCHW.
    EXPECT_EQ(CountType(as_they_are.job.nets[0].step, "NCHW2NHWC"), 2);
    EXPECT_GT(CountType(transposed.job.nets[0].step, "NCHW2NHWC"), 20);
    ExpectSameTraining(transposed, as_they_are);
  }
}

// Forward outputs of the NCHW and the rewritten net, one after the other in one workspace (the
// same parameters; training-mode batch normalization normalizes by the batch's statistics).
void ExpectSameForward(const NetDef& init, const NetDef& fwd, const NetDef& rewritten,
                       const std::vector<int64_t>& data_dims, int classes,
                       const std::vector<std::string>& blobs, float rtol) {
  Workspace ws;
  ws.RunNetOnce(init);
  SetInput(&ws, "data", RandomTensor(data_dims, 7));
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < data_dims[0]; ++i) labels.push_back(static_cast<int32_t>(i % classes));
  SetInput(&ws, "label", IntTensor({data_dims[0]}, labels));
  ws.RunNetOnce(fwd);
  std::vector<std::vector<float>> want;
  for (const auto& b : blobs) want.push_back(ToFloatVector(ws.GetTensor(b)));
  for (const auto& b : blobs) ws.RemoveBlob(b);
  ws.RunNetOnce(rewritten);
  for (size_t i = 0; i < blobs.size(); ++i) {
    const Tensor& got = ws.GetTensor(blobs[i]);
    const std::vector<float> g = ToFloatVector(got);
    ASSERT_EQ(g.size(), want[i].size()) << blobs[i];
    float scale = 0;
    for (float v : want[i]) scale = std::max(scale, std::fabs(v));
    for (size_t k = 0; k < g.size(); ++k) {
      ASSERT_NEAR(g[k], want[i][k], rtol * std::max(scale, 1.f)) << blobs[i] << "[" << k << "]";
    }
  }
}

TEST(ChannelsLastTest, ResNetForwardEqualsTheNchwNet) {
  ModelHelper h("resnet18", "NCHW", false);
  BuildResNet(&h, 18, 10, 64);
  for (const bool nchw_filters : {false, true}) {
    SCOPED_TRACE(nchw_filters);
    const NetDef rewritten = ToChannelsLast(h.net(), {}, nullptr, nchw_filters).net;
    ExpectSameForward(h.init_net(), h.net(), rewritten, {4, 3, 64, 64}, 10,
                      {"pred", "softmax", "loss"}, 1e-5f);
  }
}

// An activation the net's external outputs name, written in place by a ReLU after the
// convolution, and a pool that is not global before an FC (which flattens C, H, W in NCHW order):
// both read NCHW values under their own names.
TEST(ChannelsLastTest, KeptAndFlattenedActivationsAreNchw) {
  NetDef init, fwd;
  LoadTinyConvnet(&init, &fwd);
  fwd.add_external_output("conv1");
  const ChannelsLastResult r = ToChannelsLast(fwd, {"pool1"});
  EXPECT_EQ(r.converted_convs, 1);
  EXPECT_EQ(r.converted_ops, 3);  // Conv, Relu, MaxPool
  ExpectSameForward(init, fwd, r.net, {4, 1, 8, 8}, 4, {"conv1", "pool1", "pred", "loss"}, 1e-6f);
  // Without being asked for, conv1 has no NCHW copy at the end: only pool1 (the FC reads it).
  fwd.clear_external_output();
  const ChannelsLastResult lean = ToChannelsLast(fwd, {});
  EXPECT_EQ(CountType(lean.net, "NHWC2NCHW"), 1);
}

// Shapes the caller knows travel to the NHWC blobs, permuted (the backward pass reads them for
// broadcasting element-wise ops).
TEST(ChannelsLastTest, KnownShapesArePermuted) {
  NetDef init, fwd;
  LoadTinyConvnet(&init, &fwd);
  std::map<std::string, std::vector<int64_t>> dims = {{"data", {4, 1, 8, 8}},
                                                      {"conv1", {4, 8, 6, 7}}};  // any dims
  ToChannelsLast(fwd, {}, &dims);
  EXPECT_EQ(dims.at(ChannelsLastName("data")), (std::vector<int64_t>{4, 8, 8, 1}));
  EXPECT_EQ(dims.at(ChannelsLastName("conv1")), (std::vector<int64_t>{4, 6, 7, 8}));
}

double RelativeL2(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d += (a[i] - b[i]) * static_cast<double>(a[i] - b[i]);
    n += b[i] * static_cast<double>(b[i]);
  }
  return n > 0 ? std::sqrt(d / n) : std::sqrt(d);
}

// A transposed convolution (a GAN generator's) converts like a convolution: its filter
// (C_in, C_out, kH, kW) goes NHWC as (C_in, kH, kW, C_out). Forward and every parameter's
// gradient equal the NCHW net's (smooth activations, so no mask can flip).
TEST(ChannelsLastTest, ConvTransposeForwardAndGradientsEqualTheNchwNet) {
  NetDef init;
  auto fill = [&](const std::string& name, std::vector<int64_t> shape) {
    *init.add_op() = MakeOperatorDef("GaussianFill", "", {}, {name},
                                     {MakeArgument("shape", shape), MakeArgument("std", 0.3f)});
  };
  fill("c_w", {8, 4, 3, 3});
  fill("c_b", {8});
  fill("t_w", {8, 3, 4, 4});
  fill("t_b", {3});
  AssignRandomSeeds(&init, 5, "init");  // both runs start from the same parameters
  NetDef fwd;
  *fwd.add_op() = MakeOperatorDef("Conv", "", {"data", "c_w", "c_b"}, {"c"},
                                  {MakeArgument("kernel", 3), MakeArgument("pad", 1)});
  *fwd.add_op() = MakeOperatorDef("Tanh", "", {"c"}, {"c"});
  *fwd.add_op() = MakeOperatorDef("ConvTranspose", "", {"c", "t_w", "t_b"}, {"t"},
                                  {MakeArgument("kernel", 4), MakeArgument("stride", 2),
                                   MakeArgument("pad", 1)});
  *fwd.add_op() = MakeOperatorDef("Sigmoid", "", {"t"}, {"y"});
  *fwd.add_op() = MakeOperatorDef("SquaredL2Distance", "", {"y", "target"}, {"dist"});
  *fwd.add_op() = MakeOperatorDef("AveragedLoss", "", {"dist"}, {"loss"});
  const ChannelsLastResult r = ToChannelsLast(fwd, {"y"});
  EXPECT_EQ(r.converted_convs, 2);
  for (const auto& op : r.net.op()) {
    if (op.type() == "ConvTranspose") {
      EXPECT_EQ(OrderArg(op), "NHWC");
    }
  }
  std::vector<std::map<std::string, std::vector<float>>> runs;
  for (const NetDef* net : {static_cast<const NetDef*>(&fwd), &r.net}) {
    NetDef step = *net;
    Backward(&step, {"loss"});
    Workspace ws;
    ws.RunNetOnce(init);
    SetInput(&ws, "data", RandomTensor({2, 4, 5, 5}, 11));
    SetInput(&ws, "target", RandomTensor({2, 3, 10, 10}, 12, 0.f, 1.f));
    ws.RunNetOnce(step);
    std::map<std::string, std::vector<float>> got;
    for (const char* b : {"y", "loss", "c_w_grad", "c_b_grad", "t_w_grad", "t_b_grad"}) {
      got[b] = ToFloatVector(ws.GetTensor(b));
    }
    runs.push_back(got);
  }
  for (const auto& [blob, want] : runs[0]) {
    EXPECT_LT(RelativeL2(runs[1].at(blob), want), 1e-5) << blob;
  }
}

std::vector<float> TrainLosses(const TrainerOptions& o, const NetDef& init, const NetDef& fwd,
                               int steps, const std::string& param, std::vector<float>* w,
                               bool* channels_last) {
  Trainer t(init, fwd, o);
  *channels_last = t.channels_last();
  t.Initialize();
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i) {
    t.Step();
    losses.push_back(t.ReadStats().loss);
  }
  *w = ToFloatVector(t.workspace()->GetTensor(param));
  return losses;
}

// Every parameter's gradient after one step, by parameter.
std::map<std::string, std::vector<float>> FirstStepGradients(const TrainerOptions& o,
                                                             const NetDef& init, const NetDef& fwd,
                                                             float* loss) {
  Trainer t(init, fwd, o);
  t.Initialize();
  t.Step();
  *loss = t.ReadStats().loss;
  std::map<std::string, std::vector<float>> grads;
  for (const auto& pg : t.param_gradients()) {
    grads[pg.param] = ToFloatVector(t.workspace()->GetTensor(pg.grad));
  }
  return grads;
}


// Training through the transform is training: an FP32 ResNet-18 step gives the NCHW step's loss
// and every parameter's gradient (the filters' come back through the transposes' gradients).
// Its ReLUs are Tanh and its max pool an average pool here: where a pre-activation lies within
// rounding of zero, the two layouts' sums (different kernels) may fall on either side of it, and
// one flipped ReLU mask moves a batch-4 step's gradients by 1% (measured: two elements of 16384).
void ExpectFirstStepLikeNchw(const std::string& option, const std::string& value) {
  ModelHelper h("resnet18", "NCHW", false);
  BuildResNet(&h, 18, 10, 64);
  for (auto& op : *h.mutable_net()->mutable_op()) {
    if (op.type() == "Relu") op.set_type("Tanh");
    if (op.type() == "MaxPool") op.set_type("AveragePool");
  }
  TrainerOptions o = SyntheticImageOptions({3, 64, 64}, 10, 4);
  o.channels_last = "off";
  o.blocked_layout = "off";
  float loss_off = 0, loss_on = 0;
  const auto off = FirstStepGradients(o, h.init_net(), h.net(), &loss_off);
  (option == "channels_last"    ? o.channels_last
   : option == "blocked_layout" ? o.blocked_layout
                                : o.conv_algorithm) = value;
  const auto on = FirstStepGradients(o, h.init_net(), h.net(), &loss_on);
  EXPECT_NEAR(loss_on, loss_off, 1e-5 * loss_off);
  ASSERT_EQ(on.size(), off.size());
  ASSERT_EQ(off.size(), h.ParamNames(ParamRole::WEIGHT).size() +
                            h.ParamNames(ParamRole::BIAS).size() +
                            h.ParamNames(ParamRole::BN_SCALE).size() +
                            h.ParamNames(ParamRole::BN_BIAS).size());
  for (const auto& [param, g] : off) {
    ASSERT_EQ(on.at(param).size(), g.size()) << param;
    EXPECT_LT(RelativeL2(on.at(param), g), 1e-4) << param;
  }
}

TEST(ChannelsLastTest, Fp32GradientsEqualTheNchwStep) {
  ExpectFirstStepLikeNchw("channels_last", "on");
}

// BF16: "auto" turns it on exactly where oneDNN runs BF16 kernels (bf16_kernels.h); on or
// off, the runs learn alike (BF16 rounding apart), and a kept activation is NCHW under its own
// name.
TEST(ChannelsLastTest, BFloat16AutoAndTraining) {
  NetDef init, fwd;
  LoadTinyConvnet(&init, &fwd);
  TrainerOptions o = TinyTrainingOptions(DataType::BFLOAT16, 16);
  o.keep_blobs = {"conv1"};
  std::vector<float> w_auto, w_on, w_off;
  bool cl = false;
  TrainLosses(o, init, fwd, 1, "fc_w", &w_auto, &cl);
  EXPECT_EQ(cl, CpuBFloat16KernelsEnabled());
  o.channels_last = "off";
  const std::vector<float> off = TrainLosses(o, init, fwd, 30, "fc_w", &w_off, &cl);
  o.channels_last = "on";
  Trainer t(init, fwd, o);
  t.Initialize();
  std::vector<float> on;
  for (int i = 0; i < 30; ++i) {
    t.Step();
    on.push_back(t.ReadStats().loss);
  }
  const Tensor& conv1 = t.workspace()->GetTensor("conv1");
  EXPECT_EQ(conv1.dims(), (std::vector<int64_t>{16, 8, 8, 8}));
  double sum_on = 0, sum_off = 0;
  for (int i = 20; i < 30; ++i) {
    sum_on += on[i];
    sum_off += off[i];
  }
  EXPECT_NEAR(sum_on, sum_off, 0.05 * sum_off);
  EXPECT_NEAR(on[0], off[0], 0.01 * off[0]);
  // FP32 training leaves it off unless asked; a bad value is refused.
  o.precision = DataType::FLOAT;
  o.channels_last = "auto";
  TrainLosses(o, init, fwd, 1, "fc_w", &w_auto, &cl);
  EXPECT_FALSE(cl);
  o.channels_last = "sometimes";
  try {
    Trainer bad(init, fwd, o);
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("channels_last must be auto, on or off"),
              std::string::npos)
        << e.what();
  }
}

// The channel-blocked variant (ToChannelBlocked): ResNet-18's convolutions read and write blocked
// activations with their filters as they are, the first one (3 input channels) reading the NCHW
// image; the batch normalizations, pools, residual Sums and ReLUs stay blocked: one conversion,
// before the FC.
std::map<std::string, std::vector<int64_t>> ParamDims(const ModelHelper& h) {
  std::map<std::string, std::vector<int64_t>> dims;
  for (const ParamInfo& p : h.params()) dims[p.name] = p.shape;
  return dims;
}

TEST(ChannelBlockedTest, ResNetRunsBlockedFromTheFirstConvolutionToTheFC) {
  ModelHelper h("resnet18", "NCHW", false);
  BuildResNet(&h, 18, 10, 32);
  const ChannelsLastResult r = ToChannelBlocked(h.net(), {}, 16, ParamDims(h));
  EXPECT_EQ(r.converted_convs, 20);
  EXPECT_EQ(CountType(r.net, "NCHW2NCHWc"), 0);
  EXPECT_EQ(CountType(r.net, "NCHWc2NCHW"), 1);
  EXPECT_EQ(r.transposes, 1);
  for (const auto& op : r.net.op()) {
    const std::string& t = op.type();
    const int64_t block = ArgumentHelper(op).GetSingleArgument<int64_t>("channel_block", 0);
    const bool first = op.output(0) == ChannelBlockedName("conv1");
    if (t == "Conv" || t == "SpatialBN" || t == "MaxPool" || t == "AveragePool") {
      EXPECT_EQ(block, 16) << t << " " << op.output(0);
      EXPECT_EQ(EndsWith(op.input(0), "_blocked"), !first) << t << " reads " << op.input(0);
      EXPECT_TRUE(EndsWith(op.output(0), "_blocked")) << t << " writes " << op.output(0);
      EXPECT_EQ(OrderArg(op), "NCHW");
    }
    if (t == "Conv") {
      EXPECT_FALSE(EndsWith(op.input(1), "_blocked")) << op.input(1);
    }
    if (t == "FC") {
      EXPECT_FALSE(EndsWith(op.input(0), "_blocked")) << t;
    }
    if (t == "Sum") {
      for (const auto& in : op.input()) EXPECT_TRUE(EndsWith(in, "_blocked")) << in;
    }
  }
  // With blocks of 8 (AVX2) the pools run blocked too; with blocks of 4 they stay NCHW: a
  // conversion after pool1 and before pool5.
  const ChannelsLastResult b8 = ToChannelBlocked(h.net(), {}, 8, ParamDims(h));
  EXPECT_EQ(b8.converted_convs, 20);
  EXPECT_EQ(CountType(b8.net, "NCHW2NCHWc"), 0);
  EXPECT_EQ(CountType(b8.net, "NCHWc2NCHW"), 1);
  const ChannelsLastResult b4 = ToChannelBlocked(h.net(), {}, 4, ParamDims(h));
  EXPECT_EQ(CountType(b4.net, "NCHW2NCHWc"), 1);
  EXPECT_EQ(CountType(b4.net, "NCHWc2NCHW"), 2);
  for (const auto& [net, blocked] :
       {std::make_pair(&b8.net, true), std::make_pair(&b4.net, false)}) {
    for (const auto& op : net->op()) {
      if (op.type() == "MaxPool" || op.type() == "AveragePool") {
        EXPECT_EQ(EndsWith(op.input(0), "_blocked"), blocked) << op.type();
      }
    }
  }
  // A first convolution over as many channels as a block, or more, that are not a multiple of
  // it stays NCHW (and what follows it).
  ModelHelper wide("wide", "NCHW", false);
  BuildResNet(&wide, 18, 10, 32);
  std::map<std::string, std::vector<int64_t>> dims = ParamDims(wide);
  dims["conv1_w"][1] = 20;
  const ChannelsLastResult w = ToChannelBlocked(wide.net(), {}, 16, dims);
  EXPECT_EQ(w.converted_convs, 19);
  EXPECT_EQ(CountType(w.net, "NCHW2NCHWc"), 1);
  // Without the filters' shapes nothing is converted; a block oneDNN has no layout for is refused.
  EXPECT_EQ(ToChannelBlocked(h.net(), {}, 16, {}).converted_convs, 0);
  EXPECT_THROW(ToChannelBlocked(h.net(), {}, 12, ParamDims(h)), EnforceNotMet);
}

TEST(ChannelBlockedTest, ResNetForwardEqualsTheNchwNet) {
  if (CpuConvChannelBlock() == 0) GTEST_SKIP() << "no oneDNN blocked kernels";
  ModelHelper h("resnet18", "NCHW", false);
  BuildResNet(&h, 18, 10, 64);
  for (int64_t block : {16, 8}) {
    SCOPED_TRACE(block);
    const NetDef rewritten = ToChannelBlocked(h.net(), {}, block, ParamDims(h)).net;
    ExpectSameForward(h.init_net(), h.net(), rewritten, {4, 3, 64, 64}, 10,
                      {"pred", "softmax", "loss"}, 1e-4f);
  }
}

TEST(ChannelBlockedTest, Fp32GradientsEqualTheNchwStep) {
  if (CpuConvChannelBlock() == 0) GTEST_SKIP() << "no oneDNN blocked kernels";
  ExpectFirstStepLikeNchw("blocked_layout", "on");
}

// The blocked layout's training is the NCHW training bit for bit: oneDNN's NCHW convolutions
// compute in the same blocks (reordering around each), and batch normalization sums each channel
// in the NCHW order (spatial_bn_loops.h), on both with the ReLU after it fused in (models/
// bn_relu_fusion.h). ResNet-18 as built (ReLU, max pool), three steps of momentum SGD: every loss
// and every parameter after them equal.
// Three training steps of `h`'s net with the channel-blocked layout off and on: the same losses
// and parameters bit for bit. Both runs' ConvolutionSummary holds `both`, the blocked one's
// `blocked`.
void ExpectBlockedTrainingIsNchw(const ModelHelper& h, const std::string& both,
                                 const std::string& blocked_summary) {
  TrainerOptions o = SyntheticImageOptions({3, 64, 64}, 10, 4);
  auto run = [&](const std::string& layout, std::vector<float>* losses) {
    o.blocked_layout = layout;
    Trainer t(h.init_net(), h.net(), o);
    t.Initialize();
    EXPECT_EQ(t.channel_block() != 0, layout == "auto");
    const std::string summary = t.ConvolutionSummary();
    EXPECT_NE(summary.find(both), std::string::npos) << summary;
    if (layout == "auto") {
      EXPECT_NE(summary.find(blocked_summary), std::string::npos) << summary;
    }
    for (int i = 0; i < 3; ++i) {
      t.Step();
      losses->push_back(t.ReadStats().loss);
    }
    std::map<std::string, std::vector<float>> params;
    for (const auto& pg : t.param_gradients()) {
      params[pg.param] = ToFloatVector(t.workspace()->GetTensor(pg.param));
    }
    return params;
  };
  std::vector<float> loss_nchw, loss_blocked;
  const auto nchw = run("off", &loss_nchw);
  const auto blocked = run("auto", &loss_blocked);
  EXPECT_EQ(loss_blocked, loss_nchw);
  ASSERT_EQ(blocked.size(), nchw.size());
  for (const auto& [param, v] : nchw) {
    const std::vector<float>& b = blocked.at(param);
    ASSERT_EQ(b.size(), v.size()) << param;
    int64_t differ = 0;
    for (size_t i = 0; i < v.size(); ++i) differ += b[i] != v[i];
    EXPECT_EQ(differ, 0) << param << ": " << differ << " of " << v.size() << " values differ";
  }
}

TEST(ChannelBlockedTest, TrainingIsTheNchwTrainingBitForBit) {
  if (CpuConvChannelBlock() == 0) GTEST_SKIP() << "no oneDNN blocked kernels";
  ModelHelper h("resnet18", "NCHW", false);
  BuildResNet(&h, 18, 10, 64);
  // Both run their batch normalizations and ReLUs fused (models/bn_relu_fusion.h).
  ExpectBlockedTrainingIsNchw(h, "batch norm + ReLU fused (9)", "");
}

// Dropout between convolutions runs blocked (channel_block: each element kept or dropped as on
// NCHW), and its seed is the one it has on NCHW: given before the passes insert conversions (here
// around the grouped convolution, which stays NCHW, ahead of both Dropouts).
TEST(ChannelBlockedTest, DropoutTrainingIsTheNchwTrainingBitForBit) {
  if (CpuConvChannelBlock() == 0) GTEST_SKIP() << "no oneDNN blocked kernels";
  ModelHelper h("dropout_net", "NCHW", false);
  h.AddInput(kZooData);
  h.AddInput(kZooLabel);
  ConvOptions same, grouped;
  same.pad = grouped.pad = 1;
  grouped.group = 2;
  h.Conv(kZooData, "conv0", 3, 16, 3, same);
  h.Conv("conv0", "conv0g", 16, 16, 3, grouped);
  h.Conv("conv0g", "conv1", 16, 16, 3, same);
  h.Relu("conv1", "conv1");
  h.Dropout("conv1", "drop1", 0.4f);
  h.Conv("drop1", "conv2", 16, 32, 3, same);
  h.SpatialBN("conv2", "bn2", 32);
  h.Relu("bn2", "bn2");
  h.Dropout("bn2", "drop2", 0.3f);
  h.GlobalAveragePool("drop2", "pool");
  h.FC("pool", "logits", 32, 10);
  h.SoftmaxWithLoss("logits", kZooLabel, "softmax", "loss");
  ExpectBlockedTrainingIsNchw(
      h, "batch norm + ReLU fused (1)",
      "channel-blocked (" + std::to_string(CpuConvChannelBlock()) + ": 3 convolutions)");
}

// Winograd's algorithm (TrainerOptions::conv_algorithm; ResNet-18's first stage runs on 16 x 16
// images here, which Winograd's kernels take): the first step's loss and gradients are the direct
// algorithm's to float rounding.
TEST(ChannelBlockedTest, WinogradGradientsEqualTheDirectStep) {
  ExpectFirstStepLikeNchw("conv_algorithm", "winograd");
}

// "auto" is on for FP32 training on the CPU; "on" where it cannot be says what is missing.
TEST(ChannelBlockedTest, SettingResolves) {
  const int64_t block = CpuConvChannelBlock();
  EXPECT_EQ(ResolveChannelBlock("auto", DataType::FLOAT, DeviceType::CPU, "NCHW", false), block);
  EXPECT_EQ(ResolveChannelBlock("off", DataType::FLOAT, DeviceType::CPU, "NCHW", false), 0);
  EXPECT_EQ(ResolveChannelBlock("auto", DataType::BFLOAT16, DeviceType::CPU, "NCHW", false), 0);
  EXPECT_EQ(ResolveChannelBlock("auto", DataType::FLOAT, DeviceType::CPU, "NCHW", true), 0);
  auto error = [](const std::string& setting, DataType t, DeviceType d, const std::string& order,
                  bool cl) {
    try {
      ResolveChannelBlock(setting, t, d, order, cl);
    } catch (const EnforceNotMet& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("on", DataType::BFLOAT16, DeviceType::CPU, "NCHW", false).find("float32"),
            std::string::npos);
  EXPECT_NE(error("on", DataType::FLOAT, DeviceType::CUDA, "NCHW", false).find("on the CPU"),
            std::string::npos);
  EXPECT_NE(error("on", DataType::FLOAT, DeviceType::CPU, "NHWC", false).find("NCHW net"),
            std::string::npos);
  EXPECT_NE(error("on", DataType::FLOAT, DeviceType::CPU, "NCHW", true).find("channels last"),
            std::string::npos);
  EXPECT_NE(error("sometimes", DataType::FLOAT, DeviceType::CPU, "NCHW", false)
                .find("blocked_layout must be auto, on or off"),
            std::string::npos);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
