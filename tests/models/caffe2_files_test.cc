// Acceptance test with real Caffe2 files (tests/fixtures/caffe2: a Caffe2 MNIST tutorial's deploy
// net, training init net and training net, as Caffe2's Python front end wrote them). They carry
// `engine: "CUDNN"`, cuDNN-only args (exhaustive_search), `order` on Relu, `cuda_gpu_id`, explicit
// gradient ops and Print/Summarize with to_file: all must load and run on CPU unmodified, except
// for the LevelDB path (see below).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "core/net.h"
#include "core/proto_io.h"
#include "core/workspace.h"
#include "data/db.h"
#include "models/backward.h"
#include "tests/util/net_file.h"
#include "tests/util/op_test_util.h"
#include "tests/util/process_temp_dir.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

const std::string kDir = SourceDir() + "/tests/fixtures/caffe2/";

NetDef ReadNet(const std::string& file) {
  NetDef net;
  ReadProtoFromFile(kDir + file, &net);
  return net;
}

std::string MakeTempDir(const std::string& tag) {
  return ProcessTempDirs::Get("halfcaf_caffe2_" + tag + "_");
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

// The training nets. The init net's first op, CreateDB (db_type leveldb), opens a LevelDB on the
// author's disk, and the training net's first op, TensorProtosDBInput (batch_size 64), reads it
// into data_uint8 / label. The fixture writes a LevelDB of 64 records (uint8 images 1 x 28 x 28,
// int32 labels, as make_mnist_db writes them) and replaces only the DB path in both files (it
// also names the reader blob). Everything else runs unmodified. In a build without LevelDB the
// two ops are dropped instead and data_uint8 / label are fed.
class Caffe2TrainingNetTest : public ::testing::Test {
 protected:
  static constexpr int kBatch = 64;  // the training net's batch_size
  static constexpr const char* kAuthorDB =
      "/home/charlesrwest/cpp/projects/caffe2/cpp/MNIST/datasets/mnist-train-nchw-leveldb";

  void SetUp() override {
    Tensor data({kBatch, 1, 28, 28}, DataType::UINT8);
    std::mt19937 rng(5);
    for (int64_t i = 0; i < data.numel(); ++i) data.mutable_data<uint8_t>()[i] = rng() % 256;
    data_.CopyFrom(data);
    std::vector<int32_t> labels(kBatch);
    for (auto& l : labels) l = static_cast<int32_t>(rng() % 10);
    label_ = IntTensor({kBatch}, labels);

    use_db_ = db::DBTypeAvailable("leveldb");
    if (!use_db_) {
      init_ = ReadNet("mnist_train_init_net.pbtxt");
      train_ = ReadNet("mnist_train_net.pbtxt");
      ASSERT_EQ(init_.op(0).type(), "CreateDB");
      ASSERT_EQ(train_.op(0).type(), "TensorProtosDBInput");
      init_.mutable_op()->erase(init_.mutable_op()->begin());
      train_.mutable_op()->erase(train_.mutable_op()->begin());
      return;
    }
    const std::string db_path = MakeTempDir("db") + "/mnist-train-nchw-leveldb";
    std::error_code ec;
    std::filesystem::remove_all(db_path, ec);
    {
      std::unique_ptr<db::DB> out = db::OpenDB("leveldb", db_path, db::Mode::NEW);
      std::unique_ptr<db::Transaction> txn = out->NewTransaction();
      for (int n = 0; n < kBatch; ++n) {
        TensorProtos protos;
        TensorProto* image = protos.add_protos();
        image->set_data_type(TensorProto::BYTE);
        for (int d : {1, 28, 28}) image->add_dims(d);
        image->set_byte_data(std::string(
            reinterpret_cast<const char*>(data_.data<uint8_t>()) + n * 784, 784));
        TensorProto* label = protos.add_protos();
        label->set_data_type(TensorProto::INT32);
        label->add_int32_data(labels[n]);
        char key[16];
        std::snprintf(key, sizeof(key), "%08d", n);
        txn->Put(key, protos.SerializeAsString());
      }
      txn->Commit();
    }
    reader_ = "dbreader_" + db_path;
    init_ = ReadNetReplacing(kDir + "mnist_train_init_net.pbtxt", kAuthorDB, db_path);
    train_ = ReadNetReplacing(kDir + "mnist_train_net.pbtxt", kAuthorDB, db_path);
    ASSERT_EQ(init_.op(0).type(), "CreateDB");
    ASSERT_EQ(init_.op(0).output(0), reader_);
    ASSERT_EQ(train_.op(0).type(), "TensorProtosDBInput");
    ASSERT_EQ(train_.op(0).input(0), reader_);
  }

  // Without the DB, the blobs TensorProtosDBInput would produce; with it, nothing to do.
  void FeedData(Workspace* ws) {
    if (use_db_) return;
    SetInput(ws, "data_uint8", data_);
    SetInput(ws, "label", label_);
  }

  bool use_db_ = false;
  std::string reader_;
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
  FeedData(&ws);

  ws.CreateNet(train_);
  ws.RunNet(train_.name());
  // The batch the net trained on: the DB's 64 records in key order.
  EXPECT_EQ(ws.GetTensor("data_uint8").dims(), data_.dims());
  EXPECT_EQ(ws.GetTensor("data_uint8").dtype(), DataType::UINT8);
  EXPECT_EQ(std::memcmp(ws.GetTensor("data_uint8").raw_data(), data_.raw_data(), data_.nbytes()),
            0);
  EXPECT_EQ(ws.GetTensor("label").dims(), label_.dims());
  EXPECT_EQ(std::memcmp(ws.GetTensor("label").raw_data(), label_.raw_data(), label_.nbytes()), 0);

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

  FeedData(&train_ws);
  train_ws.RunNetOnce(train_);

  ExpectNear(Values(train_ws.GetTensor("softmax")), Values(deploy_ws.GetTensor("softmax")), 1e-6f,
             1e-5f, "softmax");
}

// halfcaf's backward pass of the training net's forward ops is the one Caffe2 wrote into the file:
// same gradient op types, blob names, order, arguments, engines and is_gradient_op.
TEST_F(Caffe2TrainingNetTest, GeneratedBackwardMatchesTheFile) {
  // train_: 14 forward ops after the DB input (when kept), 11 gradient ops (seed first), then
  // the update.
  const int d = use_db_ ? 1 : 0;
  ASSERT_EQ(train_.op(d + 13).type(), "Accuracy");
  ASSERT_EQ(train_.op(d + 14).type(), "ConstantFill");
  ASSERT_EQ(train_.op(d + 24).type(), "ConvGradient");
  ASSERT_EQ(train_.op(d + 25).type(), "Iter");
  NetDef forward = train_;
  forward.mutable_op()->DeleteSubrange(d + 14, train_.op_size() - (d + 14));
  AddGradientOperators(&forward, {"loss"});
  ASSERT_EQ(forward.op_size(), d + 25);
  auto args = [](const OperatorDef& op) {
    std::multiset<std::string> out;
    for (const auto& a : op.arg()) out.insert(a.ShortDebugString());
    return out;
  };
  for (int i = d + 14; i < d + 25; ++i) {
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
  // The DB reader is not copied: each run opens its own (LevelDB allows one at a time).
  if (use_db_) init_ws.RemoveBlob(reader_);
  NetDef create_db;
  create_db.set_name("create_db");
  if (use_db_) *create_db.add_op() = init_.op(0);
  std::map<std::string, std::vector<float>> updated[2];
  for (int k = 0; k < 2; ++k) {
    Workspace ws(MakeTempDir(k == 0 ? "simple" : "dag"));
    for (const auto& name : init_ws.Blobs()) SetInput(&ws, name, init_ws.GetTensor(name));
    if (use_db_) ws.RunNetOnce(create_db);
    FeedData(&ws);
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
