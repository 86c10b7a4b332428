// Acceptance test with real Caffe2 files (shared/testdata/caffe2: a Caffe2 MNIST tutorial's deploy
// net, training init net and training net, as Caffe2's Python front end wrote them). They carry
// `engine: "CUDNN"`, cuDNN-only args (exhaustive_search), `order` on Relu, `cuda_gpu_id`, explicit
// gradient ops and Print/Summarize with to_file: all must load and run on CPU unmodified, except
// for the LevelDB input (see below).
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "core/net.h"
#include "models/backward.h"
#include "core/proto_io.h"
#include "core/workspace.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const std::string kDir = std::string(HALFCAF_SHARED_DIR) + "/testdata/caffe2/";

NetDef ReadNet(const std::string& file) {
  NetDef net;
  ReadProtoFromFile(kDir + file, &net);
  return net;
}

std::string MakeTempDir(const std::string& tag) {
  std::string dir = ::testing::TempDir() + "/halfcaf_caffe2_" + tag + "_" +
                    std::to_string(getpid());
  mkdir(dir.c_str(), 0755);
  return dir;
}

OperatorDef GivenFill(const std::string& name, const Tensor& t) {
  std::vector<float> v(t.data<float>(), t.data<float>() + t.numel());
  return MakeOperatorDef("GivenTensorFill", "", {}, {name},
                         {MakeArgument("shape", t.dims()), MakeArgument("values", v)});
}

// The MNIST LeNet parameters and their shapes (from mnist_train_init_net.pbtxt).
const std::vector<std::pair<std::string, std::vector<int64_t>>> kParams = {
    {"conv1_w", {20, 1, 5, 5}}, {"conv1_b", {20}},  {"conv2_w", {50, 20, 5, 5}},
    {"conv2_b", {50}},          {"fc3_w", {500, 800}}, {"fc3_b", {500}},
    {"pred_w", {10, 500}},      {"pred_b", {10}},
};

std::vector<float> Values(const Tensor& t) { return ToFloatVector(t); }

TEST(Caffe2FilesTest, DeployNetRunsOnCpuWithFilledWeights) {
  NetDef deploy = ReadNet("mnist_deploy_net.pbtxt");
  ASSERT_EQ(deploy.op_size(), 8);

  // Init net built here: XavierFill weights (seeded), GivenTensorFill biases and data.
  NetDef init;
  init.set_name("deploy_init");
  uint32_t seed = 100;
  for (const auto& p : kParams) {
    if (p.second.size() > 1) {
      OperatorDef op = MakeOperatorDef("XavierFill", "", {}, {p.first},
                                       {MakeArgument("shape", p.second)});
      op.mutable_device_option()->set_random_seed(seed++);
      *init.add_op() = op;
    } else {
      *init.add_op() = GivenFill(p.first, RandomTensor(p.second, seed++, -0.1f, 0.1f));
    }
  }
  *init.add_op() = GivenFill("data", RandomTensor({2, 1, 28, 28}, 7, 0.f, 1.f));

  Workspace ws;
  ws.RunNetOnce(init);
  ws.CreateNet(deploy);
  ws.RunNet(deploy.name());

  const Tensor& softmax = ws.GetTensor("softmax");
  ASSERT_EQ(softmax.dims(), (std::vector<int64_t>{2, 10}));
  EXPECT_EQ(ws.GetTensor("conv1").dims(), (std::vector<int64_t>{2, 20, 24, 24}));
  EXPECT_EQ(ws.GetTensor("pool2").dims(), (std::vector<int64_t>{2, 50, 4, 4}));
  EXPECT_EQ(ws.GetTensor("fc3").dims(), (std::vector<int64_t>{2, 500}));
  std::vector<float> p = Values(softmax);
  for (int n = 0; n < 2; ++n) {
    double sum = 0;
    for (int k = 0; k < 10; ++k) {
      const float v = p[n * 10 + k];
      EXPECT_TRUE(v > 0.f && v < 1.f) << "row " << n << " class " << k << ": " << v;
      sum += v;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << n;
  }
  // The two images differ, and so do their predictions.
  bool differ = false;
  for (int k = 0; k < 10; ++k) differ |= std::fabs(p[k] - p[10 + k]) > 1e-7f;
  EXPECT_TRUE(differ);
  // Relu ran in place on fc3 (order arg, CUDNN engine both accepted on CPU).
  for (float v : Values(ws.GetTensor("fc3"))) ASSERT_GE(v, 0.f);
}

// The training nets. Two edits, both about the LevelDB that is not part of the test data:
//  - the init net's first op, CreateDB (db_type leveldb), opens a LevelDB on the author's disk;
//    halfcaf has no DB readers (its data input is DataInput), so CreateDB is not registered and
//    the op is dropped;
//  - the training net's first op, TensorProtosDBInput, reads that DB into data_uint8 / label;
//    it is removed and both blobs are fed instead (what the DB would give: uint8 images
//    N x 1 x 28 x 28 and int32 labels).
// Everything else runs unmodified.
class Caffe2TrainingNetTest : public ::testing::Test {
 protected:
  static constexpr int kBatch = 4;

  void SetUp() override {
    init_ = ReadNet("mnist_train_init_net.pbtxt");
    train_ = ReadNet("mnist_train_net.pbtxt");
    ASSERT_EQ(init_.op(0).type(), "CreateDB");
    ASSERT_EQ(train_.op(0).type(), "TensorProtosDBInput");
    init_.mutable_op()->erase(init_.mutable_op()->begin());
    train_.mutable_op()->erase(train_.mutable_op()->begin());

    Tensor data({kBatch, 1, 28, 28}, DataType::UINT8);
    std::mt19937 rng(5);
    for (int64_t i = 0; i < data.numel(); ++i) data.mutable_data<uint8_t>()[i] = rng() % 256;
    data_.CopyFrom(data);
    label_ = IntTensor({kBatch}, {3, 1, 4, 1});
  }

  NetDef init_, train_;
  Tensor data_, label_;
};

TEST_F(Caffe2TrainingNetTest, RunsOneIterationAndWritesLogs) {
  const std::string root = MakeTempDir("train");
  Workspace ws(root);
  ws.RunNetOnce(init_);
  EXPECT_EQ(ws.GetTensor("iter").dtype(), DataType::INT64);
  // Parameters before the update.
  std::map<std::string, std::vector<float>> before;
  for (const auto& p : kParams) {
    EXPECT_EQ(ws.GetTensor(p.first).dims(), p.second) << p.first;
    before[p.first] = Values(ws.GetTensor(p.first));
  }
  SetInput(&ws, "data_uint8", data_);
  SetInput(&ws, "label", label_);

  ws.CreateNet(train_);
  ws.RunNet(train_.name());

  const float loss = ws.GetTensor("loss").data<float>()[0];
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_GT(loss, 0.f);
  const float accuracy = ws.GetTensor("accuracy").data<float>()[0];
  EXPECT_GE(accuracy, 0.f);
  EXPECT_LE(accuracy, 1.f);
  EXPECT_EQ(ws.GetTensor("iter").data<int64_t>()[0], 1);
  // LearningRate, step policy: base_lr * gamma^floor(iter / stepsize) with iter = 1.
  const float lr = ws.GetTensor("LR").data<float>()[0];
  EXPECT_NEAR(lr, -0.1f * 0.999f, 1e-6f);
  // Plain SGD through WeightedSum(param, ONE, grad, LR): param' = param + LR * grad.
  for (const auto& p : kParams) {
    std::vector<float> after = Values(ws.GetTensor(p.first));
    std::vector<float> grad = Values(ws.GetTensor(p.first + "_grad"));
    ASSERT_EQ(grad.size(), after.size()) << p.first;
    double grad_norm = 0;
    for (size_t i = 0; i < after.size(); ++i) {
      ASSERT_NEAR(after[i], before[p.first][i] + lr * grad[i], 1e-6f) << p.first << " " << i;
      grad_norm += std::fabs(grad[i]);
    }
    EXPECT_GT(grad_norm, 0) << p.first << " got no gradient";
  }

  // Print (to_file) appends "<blob> (...): values" to <root>/<blob>.log; Summarize (to_file)
  // writes "min max mean std" to <root>/<blob>.summary.
  for (const char* blob : {"accuracy", "loss"}) {
    std::ifstream in(root + "/" + blob + ".log");
    ASSERT_TRUE(in.good()) << root << "/" << blob << ".log missing";
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line.rfind(blob, 0), 0u) << line;
  }
  int summaries = 0;
  for (const auto& p : kParams) {
    for (const std::string& blob : {p.first, p.first + "_grad"}) {
      std::ifstream in(root + "/" + blob + ".summary");
      ASSERT_TRUE(in.good()) << root << "/" << blob << ".summary missing";
      float lo, hi, mean, stddev;
      ASSERT_TRUE(in >> lo >> hi >> mean >> stddev) << blob;
      EXPECT_LE(lo, mean) << blob;
      EXPECT_LE(mean, hi) << blob;
      EXPECT_GE(stddev, 0.f) << blob;
      ++summaries;
    }
  }
  EXPECT_EQ(summaries, 16);
}

// The forward half of the training net and the deploy net compute the same function: the
// training net's softmax (taken before its update) matches the deploy net's on data / 256.
TEST_F(Caffe2TrainingNetTest, ForwardMatchesDeployNet) {
  const std::string root = MakeTempDir("match");
  Workspace train_ws(root);
  train_ws.RunNetOnce(init_);
  Workspace deploy_ws(root);
  for (const auto& p : kParams) SetInput(&deploy_ws, p.first, train_ws.GetTensor(p.first));
  Tensor scaled({kBatch, 1, 28, 28}, DataType::FLOAT);
  for (int64_t i = 0; i < scaled.numel(); ++i) {
    scaled.mutable_data<float>()[i] = data_.data<uint8_t>()[i] * 0.00390625f;
  }
  SetInput(&deploy_ws, "data", scaled);
  NetDef deploy = ReadNet("mnist_deploy_net.pbtxt");
  deploy_ws.RunNetOnce(deploy);

  SetInput(&train_ws, "data_uint8", data_);
  SetInput(&train_ws, "label", label_);
  train_ws.RunNetOnce(train_);

  ExpectNear(Values(train_ws.GetTensor("softmax")), Values(deploy_ws.GetTensor("softmax")), 1e-6f,
             1e-5f, "softmax");
}

// halfcaf's backward pass of the training net's forward ops is the one Caffe2 wrote into the file:
// same gradient op types, blob names, order, arguments, engines and is_gradient_op.
TEST_F(Caffe2TrainingNetTest, GeneratedBackwardMatchesTheFile) {
  // train_ (DB input removed): 14 forward ops, 11 gradient ops (seed first), then the update.
  ASSERT_EQ(train_.op(13).type(), "Accuracy");
  ASSERT_EQ(train_.op(14).type(), "ConstantFill");
  ASSERT_EQ(train_.op(24).type(), "ConvGradient");
  ASSERT_EQ(train_.op(25).type(), "Iter");
  NetDef forward = train_;
  forward.mutable_op()->DeleteSubrange(14, train_.op_size() - 14);
  AddGradientOperators(&forward, {"loss"});
  ASSERT_EQ(forward.op_size(), 25);
  auto args = [](const OperatorDef& op) {
    std::multiset<std::string> out;
    for (const auto& a : op.arg()) out.insert(a.ShortDebugString());
    return out;
  };
  for (int i = 14; i < 25; ++i) {
    const OperatorDef& want = train_.op(i);
    const OperatorDef& got = forward.op(i);
    SCOPED_TRACE("op #" + std::to_string(i) + " " + want.type());
    EXPECT_EQ(got.type(), want.type());
    EXPECT_EQ(std::vector<std::string>(got.input().begin(), got.input().end()),
              std::vector<std::string>(want.input().begin(), want.input().end()));
    EXPECT_EQ(std::vector<std::string>(got.output().begin(), got.output().end()),
              std::vector<std::string>(want.output().begin(), want.output().end()));
    EXPECT_EQ(got.is_gradient_op(), want.is_gradient_op());
    EXPECT_EQ(got.engine(), want.engine());
    EXPECT_EQ(args(got), args(want));
  }
}

// The same iteration under the "dag" executor (independent ops in parallel) updates the
// parameters as the simple executor does (same values up to BLAS rounding).
TEST_F(Caffe2TrainingNetTest, DagExecutorMatchesSimple) {
  // Unseeded XavierFills draw a new seed per op: fill once, start both runs from those values.
  Workspace init_ws;
  init_ws.RunNetOnce(init_);
  std::map<std::string, std::vector<float>> updated[2];
  for (int k = 0; k < 2; ++k) {
    Workspace ws(MakeTempDir(k == 0 ? "simple" : "dag"));
    for (const auto& name : init_ws.Blobs()) SetInput(&ws, name, init_ws.GetTensor(name));
    SetInput(&ws, "data_uint8", data_);
    SetInput(&ws, "label", label_);
    NetDef net = train_;
    if (k == 1) {
      net.set_type("dag");
      net.set_num_workers(4);
    }
    ws.RunNetOnce(net);
    for (const auto& p : kParams) updated[k][p.first] = Values(ws.GetTensor(p.first));
  }
  for (const auto& p : kParams) {
    ExpectNear(updated[1][p.first], updated[0][p.first], 1e-7f, 1e-6f, p.first);
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
