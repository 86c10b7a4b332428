// Acceptance test: a user trains a small convnet by running a hand-written Caffe2 training net
// (tests/fixtures/convnet_{init,train}_net.pbtxt) with run_net, on a fixed separable batch.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/proto_io.h"
#include "core/tensor_proto.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

const std::string kData = ::halfcaf::testing::SourceDir() + "/tests/fixtures/";
constexpr int kBatch = 16, kClasses = 4, kSide = 12;

// 16 images 1x12x12: faint noise plus a bright 4x4 square in the quadrant of the image's class
// (0 top-left, 1 top-right, 2 bottom-left, 3 bottom-right), jittered inside the quadrant.
void WriteBatch(const std::string& path) {
  Tensor data({kBatch, 1, kSide, kSide}, DataType::FLOAT);
  Tensor label({kBatch}, DataType::INT32);
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> noise(0.f, 0.2f);
  std::uniform_int_distribution<int> jitter(0, 2);
  float* d = data.mutable_data<float>();
  for (int n = 0; n < kBatch; ++n) {
    const int cls = n % kClasses;
    label.mutable_data<int32_t>()[n] = cls;
    float* img = d + n * kSide * kSide;
    for (int i = 0; i < kSide * kSide; ++i) img[i] = noise(rng);
    const int top = (cls / 2) * 6 + jitter(rng), left = (cls % 2) * 6 + jitter(rng);
    for (int y = top; y < top + 4; ++y) {
      for (int x = left; x < left + 4; ++x) img[y * kSide + x] = 1.f;
    }
  }
  TensorProtos protos;
  TensorToProto(data, "data", protos.add_protos());
  TensorToProto(label, "label", protos.add_protos());
  WriteProtoToFile(protos, path, /*text=*/false);
}

// Runs the training net `iters` times after the init net and reads back `blobs`; `nets`: the
// fixtures convnet_<nets>_net.pbtxt.
void RunTraining(const std::string& dir, int iters, const std::string& blobs, Workspace* ws,
                 const std::string& nets = "") {
  const std::string out = dir + "/out_" + nets + std::to_string(iters) + ".pbtxt";
  const std::string prefix = kData + "convnet_" + (nets.empty() ? "" : nets + "_");
  auto r = RunTool("run_net", "--init_net " + prefix + "init_net.pbtxt --net " + prefix +
                                  "train_net.pbtxt --inputs " + dir + "/batch.pb --iters " +
                                  std::to_string(iters) + " --output_blobs " + blobs +
                                  " --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  FeedTensorProtosFile(out, ws);
}

struct TrainResult {
  float loss = NAN, accuracy = NAN;
  std::vector<float> conv1_w;
};

TrainResult Train(const std::string& dir, int iters) {
  Workspace ws;
  RunTraining(dir, iters, "loss,accuracy,conv1_w", &ws);
  TrainResult r;
  if (!ws.HasBlob("loss")) return r;
  const Tensor& loss = ws.GetTensor("loss");
  const Tensor& acc = ws.GetTensor("accuracy");
  EXPECT_EQ(loss.numel(), 1);
  EXPECT_EQ(acc.numel(), 1);
  r.loss = loss.data<float>()[0];
  r.accuracy = acc.data<float>()[0];
  const Tensor& w = ws.GetTensor("conv1_w");
  r.conv1_w.assign(w.data<float>(), w.data<float>() + w.numel());
  return r;
}

TEST(ConvnetTrainingTest, LossFallsAndBatchIsLearned) {
  const std::string dir = TestTempDir();
  WriteBatch(dir + "/batch.pb");

  // One iteration: the loss of the freshly initialised net (4 classes: about log 4).
  TrainResult first = Train(dir, 1);
  ASSERT_TRUE(std::isfinite(first.loss));
  EXPECT_GT(first.loss, 0.7f);
  EXPECT_LT(first.loss, 3.0f);

  TrainResult last = Train(dir, 300);
  ASSERT_TRUE(std::isfinite(last.loss));
  EXPECT_LT(last.loss, 0.05f * first.loss) << "initial loss " << first.loss;
  EXPECT_EQ(last.accuracy, 1.0f);

  // The gradient reached the first layer: the conv filters moved (the FC layer alone could
  // separate this batch, so a broken ConvGradient would not show in the loss).
  Workspace init;
  RunTraining(dir, 0, "conv1_w", &init);
  const Tensor& w0 = init.GetTensor("conv1_w");
  ASSERT_EQ(static_cast<size_t>(w0.numel()), last.conv1_w.size());
  double moved = 0, norm = 0;
  for (int64_t i = 0; i < w0.numel(); ++i) {
    moved += std::fabs(last.conv1_w[i] - w0.data<float>()[i]);
    norm += std::fabs(w0.data<float>()[i]);
  }
  EXPECT_GT(moved, 0.05 * norm) << "conv1_w barely changed during training";
}

// A Caffe2 Adam training net (Iter, LearningRate with a negative base_lr, Adam per parameter)
// runs unmodified in run_net, learns the batch, and each step follows Caffe2's Adam rule:
// t = iter + 1 with iter already counting the step, epsilon added to sqrt(m2).
TEST(ConvnetTrainingTest, CaffeAdamNetFollowsTheAdamRule) {
  const std::string dir = TestTempDir() + "/adam";
  std::system(("mkdir -p " + dir).c_str());
  WriteBatch(dir + "/batch.pb");
  const std::string p = "pred_w";
  Workspace one, two;
  RunTraining(dir, 1, p + "," + p + "_first_moment," + p + "_second_moment,loss", &one, "adam");
  RunTraining(dir, 2, p + "," + p + "_grad,iter,loss", &two, "adam");
  ASSERT_TRUE(one.HasBlob(p) && two.HasBlob(p + "_grad"));
  EXPECT_EQ(two.GetTensor("iter").data<int64_t>()[0], 2);
  const float* p1 = one.GetTensor(p).data<float>();
  const float* m1 = one.GetTensor(p + "_first_moment").data<float>();
  const float* v1 = one.GetTensor(p + "_second_moment").data<float>();
  const float* g2 = two.GetTensor(p + "_grad").data<float>();
  const float* p2 = two.GetTensor(p).data<float>();
  const int t = 3;  // the second step: iter 2, t = iter + 1
  const double c = std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
  double worst = 0;
  for (int64_t i = 0; i < one.GetTensor(p).numel(); ++i) {
    const double m = 0.9 * m1[i] + 0.1 * g2[i], v = 0.999 * v1[i] + 0.001 * g2[i] * g2[i];
    const double want = p1[i] + -0.01 * c * m / (std::sqrt(v) + 1e-5);
    worst = std::max(worst, std::fabs(want - p2[i]) / std::max(std::fabs(want - p1[i]), 1e-12));
  }
  EXPECT_LT(worst, 1e-3) << "largest error relative to the step";

  Workspace last;
  RunTraining(dir, 150, "loss,accuracy", &last, "adam");
  EXPECT_LT(last.GetTensor("loss").data<float>()[0], 0.1f * one.GetTensor("loss").data<float>()[0]);
  EXPECT_EQ(last.GetTensor("accuracy").data<float>()[0], 1.f);
}

// The same training as a Caffe2 plan (init once, then 3 x 10 training iterations in nested
// steps) through run_plan: bit for bit run_net's 30 iterations.
TEST(ConvnetTrainingTest, RunPlanReproducesRunNet) {
  const std::string dir = TestTempDir() + "/plan";
  std::system(("mkdir -p " + dir).c_str());
  WriteBatch(dir + "/batch.pb");
  PlanDef plan;
  plan.set_name("convnet");
  NetDef* init = plan.add_network();
  ReadProtoFromFile(kData + "convnet_init_net.pbtxt", init);
  init->set_name("init");
  NetDef* train = plan.add_network();
  ReadProtoFromFile(kData + "convnet_train_net.pbtxt", train);
  train->set_name("train");
  ExecutionStep* first = plan.add_execution_step();
  first->set_name("init");
  first->add_network("init");
  ExecutionStep* loop = plan.add_execution_step();
  loop->set_name("epochs");
  loop->set_num_iter(3);
  ExecutionStep* inner = loop->add_substep();
  inner->set_name("epoch");
  inner->add_network("train");
  inner->set_num_iter(10);
  WriteProtoToFile(plan, dir + "/plan.pbtxt", /*text=*/true);
  const auto r = RunTool("run_plan", "--plan " + dir + "/plan.pbtxt --inputs " + dir +
                                         "/batch.pb --output_blobs loss,conv1_w,pred_w --output " +
                                         dir + "/plan_out.pb");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Workspace by_plan, by_net;
  FeedTensorProtosFile(dir + "/plan_out.pb", &by_plan);
  RunTraining(dir, 30, "loss,conv1_w,pred_w", &by_net);
  for (const char* blob : {"loss", "conv1_w", "pred_w"}) {
    const Tensor& a = by_plan.GetTensor(blob);
    const Tensor& b = by_net.GetTensor(blob);
    ASSERT_EQ(a.numel(), b.numel()) << blob;
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0) << blob;
  }
  // A malformed plan: one clear error, exit 1, nothing written.
  plan.mutable_execution_step(1)->add_network("train");  // substeps and networks
  WriteProtoToFile(plan, dir + "/bad.pbtxt", /*text=*/true);
  const auto bad = RunTool("run_plan", "--plan " + dir + "/bad.pbtxt --inputs " + dir +
                                           "/batch.pb --output_blobs loss --output " + dir +
                                           "/bad_out.pb");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("run_plan: error: ExecutionStep 'epochs' has both substeps and networks"),
            std::string::npos)
      << bad.err;
  EXPECT_NE(std::system(("test -e " + dir + "/bad_out.pb").c_str()), 0);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
