// Model zoo (models/zoo.h): the LeNet .pbtxt files match BuildLeNet; LeNet and ResNet-18/50 run a
// forward pass, NCHW and NHWC agree for the same weights, parameter counts match the published
// ones, and Backward builds (and for the small nets runs) on them.
#include "models/zoo.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/proto_io.h"
#include "core/workspace.h"
#include "models/backward.h"
#include "tests/util/op_test_util.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

const std::string kLeNetDir = ::halfcaf::testing::SourceDir() + "/models/lenet/";

std::vector<int32_t> Labels(int n, int classes) {
  std::vector<int32_t> l;
  for (int i = 0; i < n; ++i) l.push_back((i * 7 + 3) % classes);
  return l;
}

float Scalar(const Workspace& ws, const std::string& name) {
  const Tensor& t = ws.GetTensor(name);
  EXPECT_EQ(t.numel(), 1) << name;
  return t.data<float>()[0];
}

// NCHW (N, C, H, W) -> NHWC (N, H, W, C); conv filters (M, C, kH, kW) -> (M, kH, kW, C) alike.
Tensor ToNHWC(const Tensor& x) {
  const auto& d = x.dims();
  Tensor y({d[0], d[2], d[3], d[1]}, DataType::FLOAT);
  const float* src = x.data<float>();
  float* dst = y.mutable_data<float>();
  for (int64_t n = 0; n < d[0]; ++n)
    for (int64_t c = 0; c < d[1]; ++c)
      for (int64_t h = 0; h < d[2]; ++h)
        for (int64_t w = 0; w < d[3]; ++w)
          dst[((n * d[2] + h) * d[3] + w) * d[1] + c] = src[((n * d[1] + c) * d[2] + h) * d[3] + w];
  return y;
}

// The init net with a fixed, distinct random seed per op, so that tests are repeatable.
NetDef Seeded(NetDef init, uint32_t seed = 17) {
  for (auto& op : *init.mutable_op()) op.mutable_device_option()->set_random_seed(seed++);
  return init;
}

void Feed(Workspace* ws, const std::string& name, const Tensor& t) {
  ws->CreateTensor(name)->CopyFrom(t);
}

// Runs `m` (built in NCHW) on random data after its init net, and the same model built in NHWC
// with the NCHW weights transposed; expects the same loss and softmax.
void ExpectOrdersAgree(int depth, int batch, int image, int classes) {
  ModelHelper nchw("resnet", "NCHW");
  BuildResNet(&nchw, depth, classes, image);
  ModelHelper nhwc("resnet", "NHWC");
  BuildResNet(&nhwc, depth, classes, image);
  ASSERT_EQ(nchw.ParamNames(), nhwc.ParamNames());

  Workspace ws1, ws2;
  ws1.RunNetOnce(Seeded(nchw.init_net()));
  const Tensor data = RandomTensor({batch, 3, image, image}, 11);
  const Tensor label = IntTensor({batch}, Labels(batch, classes));
  Feed(&ws1, "data", data);
  Feed(&ws1, "label", label);
  for (const auto& p : nhwc.params()) {
    const Tensor& t = ws1.GetTensor(p.name);
    ASSERT_EQ(t.dims(), nchw.FindParam(p.name)->shape) << p.name;
    Feed(&ws2, p.name, p.role == ParamRole::WEIGHT && t.ndim() == 4 ? ToNHWC(t) : t);
    ASSERT_EQ(ws2.GetTensor(p.name).dims(), p.shape) << p.name;
  }
  Feed(&ws2, "data", ToNHWC(data));
  Feed(&ws2, "label", label);
  ws1.RunNetOnce(nchw.net());
  ws2.RunNetOnce(nhwc.net());

  const float loss = Scalar(ws1, "loss");
  EXPECT_TRUE(std::isfinite(loss));
  // The two orders sum in different orders; training-mode BN over the few values of the last
  // stage (2x2 per image) amplifies rounding, so agreement is ~1e-4 relative, not 1e-6. A layout
  // mistake changes the result by O(1).
  EXPECT_NEAR(Scalar(ws2, "loss"), loss, 2e-3f * std::max(1.f, std::fabs(loss)));
  EXPECT_EQ(ws1.GetTensor("softmax").dims(), (std::vector<int64_t>{batch, classes}));
  ExpectNear(ToFloatVector(ws2.GetTensor("softmax")), ToFloatVector(ws1.GetTensor("softmax")),
             1e-4f, 1e-2f);
  EXPECT_EQ(Scalar(ws2, "accuracy"), Scalar(ws1, "accuracy"));
}

int CountOps(const NetDef& net, const std::string& type) {
  int n = 0;
  for (const auto& op : net.op()) n += op.type() == type;
  return n;
}

}  // namespace

TEST(ZooLeNet, PbtxtFilesMatchTheBuilder) {
  NetDef train, init;
  ReadProtoFromFile(kLeNetDir + "lenet_train_net.pbtxt", &train);
  ReadProtoFromFile(kLeNetDir + "lenet_init_net.pbtxt", &init);
  ModelHelper m("lenet_train");
  BuildLeNet(&m, 10);
  std::string diff;
  google::protobuf::util::MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(m.net(), train)) << diff;
  EXPECT_TRUE(d.Compare(m.init_net(), init)) << diff;
}

TEST(ZooLeNet, Structure) {
  ModelHelper m;
  BuildLeNet(&m, 10);
  std::vector<std::string> types;
  for (const auto& op : m.net().op()) types.push_back(op.type());
  EXPECT_EQ(types, (std::vector<std::string>{"Conv", "MaxPool", "Conv", "MaxPool", "FC", "Relu",
                                             "FC", "SoftmaxWithLoss", "Accuracy"}));
  EXPECT_EQ(m.ParamNames(), (std::vector<std::string>{"conv1_w", "conv1_b", "conv2_w", "conv2_b",
                                                      "fc3_w", "fc3_b", "pred_w", "pred_b"}));
  EXPECT_EQ(m.FindParam("fc3_w")->shape, (std::vector<int64_t>{500, 800}));
  EXPECT_EQ(m.losses(), (std::vector<std::string>{"loss"}));
  // 20*25+20 + 50*20*25+50 + 800*500+500 + 500*10+10
  EXPECT_EQ(m.NumLearnedParams(), 431080);
}

TEST(ZooLeNet, ForwardLossIsAboutLog10AndBackwardRuns) {
  NetDef train, init;
  ReadProtoFromFile(kLeNetDir + "lenet_train_net.pbtxt", &train);
  ReadProtoFromFile(kLeNetDir + "lenet_init_net.pbtxt", &init);
  Workspace ws;
  ws.RunNetOnce(Seeded(init));
  Feed(&ws, "data", RandomTensor({4, 1, 28, 28}, 5, 0.f, 1.f));
  Feed(&ws, "label", IntTensor({4}, {0, 3, 7, 9}));
  ws.RunNetOnce(train);
  EXPECT_NEAR(Scalar(ws, "loss"), std::log(10.f), 0.5f);
  EXPECT_EQ(ws.GetTensor("softmax").dims(), (std::vector<int64_t>{4, 10}));
  const float acc = Scalar(ws, "accuracy");
  EXPECT_TRUE(acc >= 0.f && acc <= 1.f) << acc;

  auto grads = AddGradientOperators(&train, {"loss"});
  ws.RunNetOnce(train);
  for (const auto& p : ParamsFromNets(init, train)) {
    ASSERT_TRUE(grads.count(p.name)) << p.name;
    EXPECT_EQ(ws.GetTensor(grads.at(p.name).dense).dims(), p.shape) << p.name;
  }
}

TEST(ZooLeNet, OtherSizesAndBadArguments) {
  ModelHelper m("lenet", "NHWC");
  BuildLeNet(&m, 3, 3, 32);  // 32 -> 28 -> 14 -> 10 -> 5
  EXPECT_EQ(m.FindParam("conv1_w")->shape, (std::vector<int64_t>{20, 5, 5, 3}));
  EXPECT_EQ(m.FindParam("fc3_w")->shape, (std::vector<int64_t>{500, 50 * 5 * 5}));
  Workspace ws;
  ws.RunNetOnce(Seeded(m.init_net()));
  Feed(&ws, "data", RandomTensor({2, 32, 32, 3}, 2, 0.f, 1.f));
  Feed(&ws, "label", IntTensor({2}, {0, 2}));
  ws.RunNetOnce(m.net());
  EXPECT_EQ(ws.GetTensor("softmax").dims(), (std::vector<int64_t>{2, 3}));

  ModelHelper bad;
  EXPECT_THROW(BuildLeNet(&bad, 10, 1, 15), EnforceNotMet);
  EXPECT_THROW(BuildLeNet(&bad, 0), EnforceNotMet);
}

TEST(ZooResNet, ParameterCounts) {
  // The published counts: conv and FC weights, FC bias, BN scale and bias (not running stats).
  ModelHelper r50;
  BuildResNet(&r50, 50, 1000, 224);
  EXPECT_EQ(r50.NumLearnedParams(), 25557032);
  EXPECT_EQ(CountOps(r50.net(), "Conv"), 53);
  EXPECT_EQ(CountOps(r50.net(), "SpatialBN"), 53);
  EXPECT_EQ(CountOps(r50.net(), "Add"), 16);
  EXPECT_EQ(r50.ParamNames(ParamRole::WEIGHT).size(), 54u);
  EXPECT_EQ(r50.ParamNames(ParamRole::BIAS), (std::vector<std::string>{"pred_b"}));
  EXPECT_EQ(r50.ParamNames(ParamRole::BN_RUNNING_VAR).size(), 53u);

  ModelHelper r18("r18", "NHWC");
  BuildResNet(&r18, 18, 1000, 224);
  EXPECT_EQ(r18.NumLearnedParams(), 11689512);
  EXPECT_EQ(CountOps(r18.net(), "Conv"), 20);
  EXPECT_EQ(CountOps(r18.net(), "Add"), 8);
}

TEST(ZooResNet, BlockStructure) {
  ModelHelper m;
  BuildResNet(&m, 50, 10, 64);
  // v1.5: the stride of a downsampling bottleneck is in its 3x3 conv, and in the projection.
  for (const auto& op : m.net().op()) {
    if (op.type() != "Conv") continue;
    const ArgumentHelper args(op);
    const int stride = args.GetSingleArgument<int>("stride", 1);
    const bool first_of_stage = op.name().rfind("res3_0", 0) == 0 ||
                                op.name().rfind("res4_0", 0) == 0 ||
                                op.name().rfind("res5_0", 0) == 0;
    const bool strided_slot = op.name().find("branch2b") != std::string::npos ||
                              op.name().find("branch1") != std::string::npos;
    EXPECT_EQ(stride, op.name() == "conv1" || (first_of_stage && strided_slot) ? 2 : 1)
        << op.name();
    EXPECT_EQ(op.input_size(), 2) << op.name();  // no bias
  }
  EXPECT_EQ(m.FindParam("res2_0_branch1_w")->shape, (std::vector<int64_t>{256, 64, 1, 1}));
  EXPECT_EQ(m.FindParam("res3_0_branch2b_w")->shape, (std::vector<int64_t>{128, 128, 3, 3}));
  EXPECT_EQ(m.FindParam("res2_1_branch1_w"), nullptr);  // identity shortcut
  EXPECT_EQ(m.FindParam("pred_w")->shape, (std::vector<int64_t>{10, 2048}));
  const OperatorDef& pool5 = m.net().op(m.net().op_size() - 4);
  EXPECT_EQ(pool5.type(), "AveragePool");
  EXPECT_EQ(ArgumentHelper(pool5).GetSingleArgument<int>("global_pooling", 0), 1);
  EXPECT_THROW(BuildResNet(&m, 34, 10, 64), EnforceNotMet);
}

TEST(ZooResNet, ResNet18OrdersAgree) { ExpectOrdersAgree(18, 2, 64, 10); }

TEST(ZooResNet, ResNet50OrdersAgree) { ExpectOrdersAgree(50, 1, 64, 10); }

TEST(ZooResNet, ResNet18BackwardRuns) {
  ModelHelper m;
  BuildResNet(&m, 18, 10, 32);
  NetDef train = m.net();
  auto grads = AddGradientOperators(&train, m.losses());
  Workspace ws;
  ws.RunNetOnce(Seeded(m.init_net()));
  Feed(&ws, "data", RandomTensor({2, 3, 32, 32}, 3));
  Feed(&ws, "label", IntTensor({2}, {1, 4}));
  ws.RunNetOnce(train);
  for (const auto& p : m.params()) {
    if (!IsLearnedRole(p.role)) {
      EXPECT_EQ(grads.count(p.name), 0u) << p.name;
      continue;
    }
    ASSERT_TRUE(grads.count(p.name)) << p.name;
    const Tensor& g = ws.GetTensor(grads.at(p.name).dense);
    EXPECT_EQ(g.dims(), p.shape) << p.name;
    for (float v : ToFloatVector(g)) ASSERT_TRUE(std::isfinite(v)) << p.name;
  }
}

TEST(ZooResNet, BackwardBuildsInBothOrders) {
  for (int depth : {18, 50}) {
    for (const char* order : {"NCHW", "NHWC"}) {
      ModelHelper m("resnet", order);
      BuildResNet(&m, depth, 10, 64);
      NetDef train = m.net();
      auto grads = AddGradientOperators(&train, {"loss"});
      for (const auto& name : m.ParamNames(ParamRole::WEIGHT)) {
        EXPECT_TRUE(grads.count(name)) << depth << " " << order << " " << name;
      }
      EXPECT_EQ(CountOps(train, "ConvGradient"), depth == 50 ? 53 : 20);
      EXPECT_EQ(CountOps(train, "SpatialBNGradient"), depth == 50 ? 53 : 20);
    }
  }
}

}  // namespace testing
}  // namespace halfcaf
