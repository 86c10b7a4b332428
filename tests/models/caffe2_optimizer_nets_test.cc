// End to end: training nets in the form Caffe2's Python optimizers write (build_fp16_sgd on
// float16 and on float parameters): an init net with the CPU iteration counter, CreateMutex and
// the parameters with their momentum buffers, and a train net with forward, gradient ops,
// AtomicIter, LearningRate and FP16/FP32MomentumSGDUpdate. The nets are hand-written pbtxt files
// in tests/fixtures; they run unmodified through the Workspace on a small separable problem.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <string>

#include "core/proto_io.h"
#include "core/workspace.h"
#include "tests/util/net_file.h"
#include "tests/util/op_test_util.h"
#include "tests/util/separable_classes.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

const std::string kData = ::halfcaf::testing::SourceDir() + "/tests/fixtures/";

// The net in tests/fixtures/`file`, with `from` replaced by `to` when given.
NetDef ReadNet(const std::string& file, const std::string& from = "", const std::string& to = "") {
  return ReadNetReplacing(kData + file, from, to);
}

struct TrainResult {
  float first_loss = 0, last_loss = 0;
  int64_t counter = 0;
  DataType param_dtype = DataType::UNDEFINED;
};

// Runs the init net, then `iters` iterations of the train net on one fixed batch.
TrainResult Train(const std::string& precision, int iters, const std::string& from = "",
                  const std::string& to = "") {
  Workspace ws;
  ws.RunNetOnce(ReadNet("caffe2_" + precision + "_sgd_init_net.pbtxt"));
  const SeparableClasses problem(24, 4, 3, 5);
  SetInput(&ws, "data", problem.data);
  SetInput(&ws, "label", problem.label);
  const NetDef train = ReadNet("caffe2_" + precision + "_sgd_train_net.pbtxt", from, to);
  ws.CreateNet(train);
  TrainResult r;
  for (int i = 0; i < iters; ++i) {
    ws.RunNet(train.name());
    const float loss = ToFloatVector(ws.GetTensor("loss"))[0];
    EXPECT_TRUE(std::isfinite(loss)) << "iteration " << i;
    if (i == 0) r.first_loss = loss;
    r.last_loss = loss;
  }
  const Tensor& it = ws.GetTensor("optimizer_iteration");
  EXPECT_EQ(it.dtype(), DataType::INT64);
  EXPECT_EQ(it.device().type, DeviceType::CPU);
  r.counter = it.data<int64_t>()[0];
  r.param_dtype = ws.GetTensor("fc1_w").dtype();
  return r;
}

TEST(Caffe2OptimizerNetsTest, Fp16MomentumSGDUpdateTrains) {
  const TrainResult r = Train("fp16", 60);
  EXPECT_EQ(r.param_dtype, DataType::FLOAT16);
  EXPECT_EQ(r.counter, 60);
  EXPECT_NEAR(r.first_loss, std::log(3.f), 0.4f) << "an untrained 3-class model";
  EXPECT_LT(r.last_loss, 0.05f * r.first_loss) << "first " << r.first_loss;
}

TEST(Caffe2OptimizerNetsTest, Fp16MathUpdateTrainsToo) {
  const TrainResult r =
      Train("fp16", 60, "name: \"fp32_update\" i: 1", "name: \"fp32_update\" i: 0");
  EXPECT_EQ(r.counter, 60);
  EXPECT_LT(r.last_loss, 0.05f * r.first_loss) << "first " << r.first_loss;
}

TEST(Caffe2OptimizerNetsTest, Fp32MomentumSGDUpdateTrains) {
  const TrainResult r = Train("fp32", 60);
  EXPECT_EQ(r.param_dtype, DataType::FLOAT);
  EXPECT_EQ(r.counter, 60);
  EXPECT_NEAR(r.first_loss, std::log(3.f), 0.4f) << "an untrained 3-class model";
  EXPECT_LT(r.last_loss, 0.05f * r.first_loss) << "first " << r.first_loss;
}

// The learning rate matters: with base_lr 0 nothing moves (so the drop above is the update's).
TEST(Caffe2OptimizerNetsTest, ZeroLearningRateLeavesTheLoss) {
  for (const char* precision : {"fp16", "fp32"}) {
    const TrainResult r = Train(precision, 5, "name: \"base_lr\" f: 0.1", "name: \"base_lr\" f: 0");
    EXPECT_EQ(r.counter, 5) << precision;
    EXPECT_EQ(r.last_loss, r.first_loss) << precision;
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
