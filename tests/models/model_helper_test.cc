// ModelHelper (models/model_helper.h): each builder's ops, arguments, parameter initialisers and
// registry entries; the helper-wide order and test mode; a small built model runs; and
// ParamsFromNets on helper-built nets, the LeNet .pbtxt and a real Caffe2 training net.
#include "models/model_helper.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

#include "core/argument.h"
#include "core/proto_io.h"
#include "core/workspace.h"
#include "models/trainer.h"
#include "models/zoo.h"
#include "tests/util/op_test_util.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

std::vector<std::string> Strings(const google::protobuf::RepeatedPtrField<std::string>& r) {
  return std::vector<std::string>(r.begin(), r.end());
}

void ExpectOp(const OperatorDef& op, const std::string& type, const std::vector<std::string>& in,
              const std::vector<std::string>& out) {
  EXPECT_EQ(op.type(), type);
  EXPECT_EQ(Strings(op.input()), in) << type;
  EXPECT_EQ(Strings(op.output()), out) << type;
}

int IntArg(const OperatorDef& op, const std::string& name, int dflt = -12345) {
  return ArgumentHelper(op).GetSingleArgument<int>(name, dflt);
}
float FloatArg(const OperatorDef& op, const std::string& name) {
  return ArgumentHelper(op).GetSingleArgument<float>(name, -12345.f);
}
std::string StringArg(const OperatorDef& op, const std::string& name) {
  return ArgumentHelper(op).GetSingleArgument<std::string>(name, "<none>");
}
std::vector<int64_t> ShapeArg(const OperatorDef& op) {
  return ArgumentHelper(op).GetRepeatedArgument<int64_t>("shape");
}

void ExpectParam(const ModelHelper& m, const std::string& name, ParamRole role,
                 const std::vector<int64_t>& shape) {
  const ParamInfo* p = m.FindParam(name);
  ASSERT_NE(p, nullptr) << name;
  EXPECT_EQ(p->role, role) << name << " is " << ParamRoleName(p->role);
  EXPECT_EQ(p->shape, shape) << name;
}

std::string ThrownMessage(const std::function<void()>& f) {
  try {
    f();
  } catch (const EnforceNotMet& e) {
    return e.what();
  }
  return "<no throw>";
}

}  // namespace

TEST(ModelHelper, ConvNCHW) {
  ModelHelper m("net");
  ConvOptions o;
  o.stride = 2;
  o.pad = 1;
  o.group = 2;
  EXPECT_EQ(m.Conv("x", "c", 4, 6, 3, o), "c");
  ASSERT_EQ(m.net().op_size(), 1);
  const OperatorDef& op = m.net().op(0);
  ExpectOp(op, "Conv", {"x", "c_w", "c_b"}, {"c"});
  EXPECT_EQ(op.name(), "c");
  EXPECT_EQ(IntArg(op, "kernel"), 3);
  EXPECT_EQ(IntArg(op, "stride"), 2);
  EXPECT_EQ(IntArg(op, "pad"), 1);
  EXPECT_EQ(IntArg(op, "group"), 2);
  EXPECT_EQ(StringArg(op, "order"), "NCHW");
  EXPECT_FALSE(ArgumentHelper(op).HasArgument("dilation"));

  ASSERT_EQ(m.init_net().op_size(), 2);
  ExpectOp(m.init_net().op(0), "XavierFill", {}, {"c_w"});
  EXPECT_EQ(ShapeArg(m.init_net().op(0)), (std::vector<int64_t>{6, 2, 3, 3}));
  ExpectOp(m.init_net().op(1), "ConstantFill", {}, {"c_b"});
  EXPECT_EQ(ShapeArg(m.init_net().op(1)), (std::vector<int64_t>{6}));
  EXPECT_EQ(FloatArg(m.init_net().op(1), "value"), 0.f);

  ExpectParam(m, "c_w", ParamRole::WEIGHT, {6, 2, 3, 3});
  ExpectParam(m, "c_b", ParamRole::BIAS, {6});
  EXPECT_EQ(Strings(m.net().external_input()), (std::vector<std::string>{"c_w", "c_b"}));
  EXPECT_EQ(m.init_net().name(), "net_init");
  EXPECT_EQ(m.NumLearnedParams(), 6 * 2 * 9 + 6);
}

TEST(ModelHelper, ConvNHWCNoBiasMSRA) {
  ModelHelper m("net", "NHWC");
  ConvOptions o;
  o.no_bias = true;
  o.weight_init = Filler::MSRA();
  m.Conv("x", "c", 3, 8, 5, o);
  const OperatorDef& op = m.net().op(0);
  ExpectOp(op, "Conv", {"x", "c_w"}, {"c"});
  EXPECT_EQ(StringArg(op, "order"), "NHWC");
  EXPECT_FALSE(ArgumentHelper(op).HasArgument("stride"));
  ASSERT_EQ(m.init_net().op_size(), 1);
  // MSRA's std for the NCHW layout, written as a GaussianFill (see model_helper.h).
  const OperatorDef& fill = m.init_net().op(0);
  ExpectOp(fill, "GaussianFill", {}, {"c_w"});
  EXPECT_EQ(ShapeArg(fill), (std::vector<int64_t>{8, 5, 5, 3}));
  EXPECT_FLOAT_EQ(FloatArg(fill, "std"), std::sqrt(2.f / (8 * 25)));
  EXPECT_EQ(FloatArg(fill, "mean"), 0.f);
  ExpectParam(m, "c_w", ParamRole::WEIGHT, {8, 5, 5, 3});
  EXPECT_EQ(m.FindParam("c_b"), nullptr);

  ModelHelper nchw;
  nchw.Conv("x", "c", 3, 8, 5, o);
  ExpectOp(nchw.init_net().op(0), "MSRAFill", {}, {"c_w"});
}

TEST(ModelHelper, FC) {
  ModelHelper m;
  FCOptions o;
  o.bias_init = Filler::Constant(0.5f);
  m.FC("x", "fc", 12, 5, o);
  ExpectOp(m.net().op(0), "FC", {"x", "fc_w", "fc_b"}, {"fc"});
  EXPECT_FALSE(ArgumentHelper(m.net().op(0)).HasArgument("axis"));
  ExpectOp(m.init_net().op(0), "XavierFill", {}, {"fc_w"});
  EXPECT_EQ(FloatArg(m.init_net().op(1), "value"), 0.5f);
  ExpectParam(m, "fc_w", ParamRole::WEIGHT, {5, 12});
  ExpectParam(m, "fc_b", ParamRole::BIAS, {5});
}

TEST(ModelHelper, SpatialBNTrainAndTest) {
  ModelHelper m("net", "NHWC");
  SpatialBNOptions o;
  o.epsilon = 1e-3f;
  o.momentum = 0.95f;
  m.SpatialBN("x", "bn", 7, o);
  const OperatorDef& op = m.net().op(0);
  ExpectOp(op, "SpatialBN", {"x", "bn_s", "bn_b", "bn_rm", "bn_riv"},
           {"bn", "bn_rm", "bn_riv", "bn_sm", "bn_siv"});
  EXPECT_EQ(IntArg(op, "is_test"), 0);
  EXPECT_FLOAT_EQ(FloatArg(op, "epsilon"), 1e-3f);
  EXPECT_FLOAT_EQ(FloatArg(op, "momentum"), 0.95f);
  EXPECT_EQ(StringArg(op, "order"), "NHWC");
  const std::vector<std::pair<std::string, float>> inits{
      {"bn_s", 1.f}, {"bn_b", 0.f}, {"bn_rm", 0.f}, {"bn_riv", 1.f}};
  ASSERT_EQ(m.init_net().op_size(), 4);
  for (int i = 0; i < 4; ++i) {
    ExpectOp(m.init_net().op(i), "ConstantFill", {}, {inits[i].first});
    EXPECT_EQ(FloatArg(m.init_net().op(i), "value"), inits[i].second);
    EXPECT_EQ(ShapeArg(m.init_net().op(i)), (std::vector<int64_t>{7}));
  }
  ExpectParam(m, "bn_s", ParamRole::BN_SCALE, {7});
  ExpectParam(m, "bn_b", ParamRole::BN_BIAS, {7});
  ExpectParam(m, "bn_rm", ParamRole::BN_RUNNING_MEAN, {7});
  ExpectParam(m, "bn_riv", ParamRole::BN_RUNNING_VAR, {7});
  EXPECT_EQ(m.NumLearnedParams(), 14);  // running statistics are not counted

  // Test mode: from the helper, or per call.
  ModelHelper t("net", "NCHW", /*is_test=*/true);
  t.SpatialBN("x", "bn", 3);
  ExpectOp(t.net().op(0), "SpatialBN", {"x", "bn_s", "bn_b", "bn_rm", "bn_riv"}, {"bn"});
  EXPECT_EQ(IntArg(t.net().op(0), "is_test"), 1);
  SpatialBNOptions train;
  train.is_test = false;
  train.scale_init = 0.f;
  t.SpatialBN("y", "bn2", 3, train);
  EXPECT_EQ(t.net().op(1).output_size(), 5);
  EXPECT_EQ(FloatArg(t.init_net().op(4), "value"), 0.f);
}

TEST(ModelHelper, PoolsReluDropoutAdd) {
  ModelHelper m;
  m.Relu("a", "a");
  m.MaxPool("a", "p", 3, 2, 1);
  m.AveragePool("p", "q", 2);
  m.GlobalAveragePool("q", "g");
  m.GlobalMaxPool("q", "h");
  m.Dropout("g", "d", 0.3f);
  m.Dropout("d", "e", 0.3f, /*is_test=*/true);
  m.Add("d", "e", "d");
  const auto& ops = m.net().op();
  ExpectOp(ops[0], "Relu", {"a"}, {"a"});
  ExpectOp(ops[1], "MaxPool", {"a"}, {"p"});
  EXPECT_EQ(IntArg(ops[1], "kernel"), 3);
  EXPECT_EQ(IntArg(ops[1], "stride"), 2);
  EXPECT_EQ(IntArg(ops[1], "pad"), 1);
  EXPECT_EQ(StringArg(ops[1], "order"), "NCHW");
  ExpectOp(ops[2], "AveragePool", {"p"}, {"q"});
  EXPECT_EQ(IntArg(ops[2], "stride", 1), 1);
  ExpectOp(ops[3], "AveragePool", {"q"}, {"g"});
  EXPECT_EQ(IntArg(ops[3], "global_pooling"), 1);
  EXPECT_FALSE(ArgumentHelper(ops[3]).HasArgument("kernel"));
  ExpectOp(ops[4], "MaxPool", {"q"}, {"h"});
  EXPECT_EQ(IntArg(ops[4], "global_pooling"), 1);
  ExpectOp(ops[5], "Dropout", {"g"}, {"d", "_d_mask"});
  EXPECT_FLOAT_EQ(FloatArg(ops[5], "ratio"), 0.3f);
  EXPECT_EQ(IntArg(ops[5], "is_test"), 0);
  ExpectOp(ops[6], "Dropout", {"d"}, {"e"});
  EXPECT_EQ(IntArg(ops[6], "is_test"), 0 + 1);
  ExpectOp(ops[7], "Add", {"d", "e"}, {"d"});
  EXPECT_TRUE(m.params().empty());
  EXPECT_EQ(m.init_net().op_size(), 0);
}

TEST(ModelHelper, LossesAndMetrics) {
  ModelHelper m;
  m.Flatten("x", "f");
  m.Flatten("x", "f2", 2);
  m.Softmax("f", "s");
  auto sl = m.SoftmaxWithLoss("f", "label", "prob", "loss");
  m.LabelCrossEntropy("s", "label", "xent");
  m.AveragedLoss("xent", "loss2");
  m.Accuracy("prob", "label", "acc");
  m.Accuracy("prob", "label", "acc5", 5);
  EXPECT_EQ(sl, std::make_pair(std::string("prob"), std::string("loss")));
  const auto& ops = m.net().op();
  ExpectOp(ops[0], "Flatten", {"x"}, {"f"});
  EXPECT_EQ(IntArg(ops[1], "axis"), 2);
  ExpectOp(ops[2], "Softmax", {"f"}, {"s"});
  ExpectOp(ops[3], "SoftmaxWithLoss", {"f", "label"}, {"prob", "loss"});
  ExpectOp(ops[4], "LabelCrossEntropy", {"s", "label"}, {"xent"});
  ExpectOp(ops[5], "AveragedLoss", {"xent"}, {"loss2"});
  ExpectOp(ops[6], "Accuracy", {"prob", "label"}, {"acc"});
  EXPECT_FALSE(ArgumentHelper(ops[6]).HasArgument("top_k"));
  EXPECT_EQ(IntArg(ops[7], "top_k"), 5);
  EXPECT_EQ(m.losses(), (std::vector<std::string>{"loss", "loss2"}));
}

TEST(ModelHelper, OrderIsHelperWide) {
  ModelHelper m;
  m.Conv("x", "c1", 3, 4, 3);
  m.set_order("NHWC");
  m.Conv("c1", "c2", 4, 4, 3);
  m.SpatialBN("c2", "bn", 4);
  m.MaxPool("bn", "p", 2, 2);
  m.GlobalAveragePool("p", "g");
  EXPECT_EQ(StringArg(m.net().op(0), "order"), "NCHW");
  for (int i = 1; i < m.net().op_size(); ++i) {
    EXPECT_EQ(StringArg(m.net().op(i), "order"), "NHWC") << m.net().op(i).type();
  }
  EXPECT_EQ(m.FindParam("c2_w")->shape, (std::vector<int64_t>{4, 3, 3, 4}));
  EXPECT_NE(ThrownMessage([&] { m.set_order("CHWN"); }).find("CHWN"), std::string::npos);
  EXPECT_NE(ThrownMessage([] { ModelHelper bad("x", "nchw"); }).find("order"), std::string::npos);
}

TEST(ModelHelper, BadArguments) {
  ModelHelper m;
  m.FC("x", "fc", 4, 2);
  EXPECT_NE(ThrownMessage([&] { m.FC("y", "fc", 4, 2); }).find("fc_w"), std::string::npos);
  EXPECT_NE(ThrownMessage([&] { m.Conv("x", "c", 3, 4, 0); }).find("kernel"), std::string::npos);
  ConvOptions o;
  o.group = 2;
  EXPECT_NE(ThrownMessage([&] { m.Conv("x", "c", 3, 4, 3, o); }).find("group"), std::string::npos);
  EXPECT_NE(ThrownMessage([&] { m.Dropout("x", "d", 1.f); }).find("ratio"), std::string::npos);
  EXPECT_NE(ThrownMessage([&] { m.MaxPool("x", "p", 2, 2, 2); }).find("pad"), std::string::npos);
  EXPECT_NE(ThrownMessage([&] { m.SpatialBN("x", "bn", 0); }).find("dim"), std::string::npos);
}

// A small model built with the helper runs, and SoftmaxWithLoss agrees with
// Softmax + LabelCrossEntropy + AveragedLoss on the same logits.
TEST(ModelHelper, BuiltModelRuns) {
  for (const char* order : {"NCHW", "NHWC"}) {
    ModelHelper m("small", order);
    ConvOptions o;
    o.pad = 1;
    o.no_bias = true;
    o.weight_init = Filler::MSRA();
    m.Conv("data", "c1", 3, 8, 3, o);
    m.SpatialBN("c1", "c1_bn", 8);
    m.Relu("c1_bn", "c1_bn");
    m.Conv("c1_bn", "c2", 8, 8, 3, o);
    m.Add("c2", "c1_bn", "c2");
    m.MaxPool("c2", "p", 2, 2);
    m.Dropout("p", "p_d", 0.5f, true);
    m.GlobalAveragePool("p_d", "g");
    m.Flatten("g", "g_flat");
    m.FC("g_flat", "pred", 8, 5);
    m.SoftmaxWithLoss("pred", "label", "softmax", "loss");
    m.Softmax("pred", "prob");
    m.LabelCrossEntropy("prob", "label", "xent");
    m.AveragedLoss("xent", "loss2");
    m.Accuracy("softmax", "label", "accuracy");
    Workspace ws;
    NetDef init = m.init_net();
    init.mutable_device_option()->set_random_seed(3);
    ws.RunNetOnce(init);
    const bool nhwc = std::string(order) == "NHWC";
    ws.CreateTensor("data")->CopyFrom(RandomTensor(
        nhwc ? std::vector<int64_t>{3, 6, 6, 3} : std::vector<int64_t>{3, 3, 6, 6}, 1));
    ws.CreateTensor("label")->CopyFrom(IntTensor({3}, {0, 4, 2}));
    ws.RunNetOnce(m.net());
    const float loss = ws.GetTensor("loss").data<float>()[0];
    EXPECT_TRUE(std::isfinite(loss)) << order;
    EXPECT_NEAR(ws.GetTensor("loss2").data<float>()[0], loss, 1e-5f) << order;
    EXPECT_EQ(ws.GetTensor("softmax").dims(), (std::vector<int64_t>{3, 5}));
    EXPECT_EQ(ws.GetTensor("c1_bn_siv").dims(), (std::vector<int64_t>{8}));
  }
}

TEST(ParamsFromNets, MatchesTheHelperRegistry) {
  ModelHelper m;
  m.Conv("data", "c", 3, 4, 3);
  m.SpatialBN("c", "bn", 4);
  m.FC("bn", "fc", 4 * 5 * 5, 2);
  const auto params = ParamsFromNets(m.init_net(), m.net());
  ASSERT_EQ(params.size(), m.params().size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].name, m.params()[i].name);
    EXPECT_EQ(params[i].role, m.params()[i].role) << params[i].name;
    EXPECT_EQ(params[i].shape, m.params()[i].shape) << params[i].name;
  }
}

// Every rank alias of Conv and FCTransposed give their inputs 1 and 2 the weight and bias roles.
TEST(ParamsFromNets, ConvRankAliasesAndFCTransposed) {
  for (const char* type : {"Conv1D", "Conv2D", "Conv3D", "Conv", "FCTransposed"}) {
    NetDef init, net;
    for (const char* b : {"w", "b"}) {
      *init.add_op() = MakeOperatorDef("ConstantFill", "", {}, {b},
                                       {MakeArgument("shape", std::vector<int64_t>{2})});
    }
    *net.add_op() = MakeOperatorDef(type, "", {"data", "w", "b"}, {"out"});
    const auto params = ParamsFromNets(init, net);
    ASSERT_EQ(params.size(), 2u) << type;
    EXPECT_EQ(params[0].role, ParamRole::WEIGHT) << type;
    EXPECT_EQ(params[1].role, ParamRole::BIAS) << type;
  }
}

TEST(ParamsFromNets, LeNetPbtxt) {
  const std::string dir = ::halfcaf::testing::SourceDir() + "/models/lenet/";
  NetDef init, net;
  ReadProtoFromFile(dir + "lenet_init_net.pbtxt", &init);
  ReadProtoFromFile(dir + "lenet_train_net.pbtxt", &net);
  const auto params = ParamsFromNets(init, net);
  std::vector<std::string> names;
  for (const auto& p : params) {
    names.push_back(p.name);
    EXPECT_EQ(p.role, p.name.back() == 'w' ? ParamRole::WEIGHT : ParamRole::BIAS) << p.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"conv1_w", "conv1_b", "conv2_w", "conv2_b", "fc3_w",
                                             "fc3_b", "pred_w", "pred_b"}));
  EXPECT_EQ(params[0].shape, (std::vector<int64_t>{20, 1, 5, 5}));
  EXPECT_EQ(params[5].shape, (std::vector<int64_t>{500}));
  EXPECT_EQ(CountLearnedParams(params), 431080);
}

// A real Caffe2 training net: forward, gradient and update ops, with counters in the init net.
TEST(ParamsFromNets, Caffe2MnistTrainingNet) {
  const std::string dir = SourceDir() + "/tests/fixtures/caffe2/";
  NetDef init, net;
  ReadProtoFromFile(dir + "mnist_train_init_net.pbtxt", &init);
  ReadProtoFromFile(dir + "mnist_train_net.pbtxt", &net);
  const auto params = ParamsFromNets(init, net);
  std::map<std::string, ParamInfo> by_name;
  for (const auto& p : params) by_name[p.name] = p;
  EXPECT_EQ(by_name.at("conv1_w").role, ParamRole::WEIGHT);
  EXPECT_EQ(by_name.at("conv1_w").shape, (std::vector<int64_t>{20, 1, 5, 5}));
  EXPECT_EQ(by_name.at("conv2_b").role, ParamRole::BIAS);
  EXPECT_EQ(by_name.at("pred_w").role, ParamRole::WEIGHT);
  EXPECT_EQ(by_name.at("iter").role, ParamRole::OTHER);
  EXPECT_EQ(by_name.at("ONE").role, ParamRole::OTHER);
  EXPECT_EQ(params.front().role, ParamRole::OTHER);  // the DB reader, read first
  EXPECT_EQ(params.size(), 11u);
  EXPECT_EQ(CountLearnedParams(params), 431080);
  EXPECT_EQ(by_name.count("data"), 0u);  // written by the net, not the init net
}

TEST(ParamsFromNets, RolesFromUseAndWrittenFirst) {
  NetDef init, net;
  for (const char* b : {"w16", "bn_s", "bn_b", "bn_m", "bn_v", "k", "x"}) {
    *init.add_op() = MakeOperatorDef("ConstantFill", "", {}, {b},
                                     {MakeArgument("shape", std::vector<int64_t>{2})});
  }
  // `x` is filled by the init net but overwritten by the forward net before any read.
  *net.add_op() = MakeOperatorDef("Copy", "", {"data"}, {"x"});
  // `w16` is first read by a Scale (OTHER), then as an FC weight: the telling use wins.
  *net.add_op() = MakeOperatorDef("Scale", "", {"w16"}, {"w16s"});
  *net.add_op() = MakeOperatorDef("FC", "", {"x", "w16", "k"}, {"y"});
  *net.add_op() = MakeOperatorDef("SpatialBN", "", {"y", "bn_s", "bn_b", "bn_m", "bn_v"}, {"z"});
  *net.add_op() = MakeOperatorDef("Mul", "", {"z", "k"}, {"z2"});
  const auto params = ParamsFromNets(init, net);
  std::vector<std::pair<std::string, ParamRole>> got;
  for (const auto& p : params) got.emplace_back(p.name, p.role);
  EXPECT_EQ(got,
            (std::vector<std::pair<std::string, ParamRole>>{{"w16", ParamRole::WEIGHT},
                                                            {"k", ParamRole::BIAS},
                                                            {"bn_s", ParamRole::BN_SCALE},
                                                            {"bn_b", ParamRole::BN_BIAS},
                                                            {"bn_m", ParamRole::BN_RUNNING_MEAN},
                                                            {"bn_v", ParamRole::BN_RUNNING_VAR}}));
  EXPECT_EQ(params[0].shape, (std::vector<int64_t>{2}));
}

// SetConvAlgoSearch reaches every convolution of a training net: the forward convolutions, their
// gradients (which copy the forward op's arguments) and, in mixed precision, the FP16 ones.
TEST(SetConvAlgoSearchTest, EveryConvolutionOfTheTrainingNet) {
  ModelHelper helper("lenet", "NCHW", false);
  BuildLeNet(&helper, 10, 1, 28);
  NetDef fwd = helper.net();
  SetConvAlgoSearch(&fwd, true, 12345);
  for (bool fp16 : {false, true}) {
    TrainerOptions o;
    o.data_format = "synthetic";
    o.batch_size = 2;
    o.precision = fp16 ? DataType::FLOAT16 : DataType::FLOAT;
    o.prefetch = false;
    Trainer t(helper.init_net(), fwd, o);
    int convs = 0, grads = 0;
    for (const auto& op : t.train_net().op()) {
      const bool conv = op.type() == "Conv", grad = op.type() == "ConvGradient";
      if (!conv && !grad) continue;
      convs += conv;
      grads += grad;
      ArgumentHelper args(op);
      EXPECT_EQ(args.GetSingleArgument<int>("exhaustive_search", 0), 1) << op.ShortDebugString();
      EXPECT_EQ(args.GetSingleArgument<int64_t>("ws_nbytes_limit", 0), 12345)
          << op.ShortDebugString();
    }
    EXPECT_EQ(convs, 2) << "fp16 " << fp16;
    EXPECT_EQ(grads, 2) << "fp16 " << fp16;
  }
  SetConvAlgoSearch(&fwd, false, 0);
  for (const auto& op : fwd.op()) {
    if (op.type() != "Conv") continue;
    EXPECT_EQ(ArgumentHelper(op).GetSingleArgument<int>("exhaustive_search", 1), 0);
  }
  EXPECT_THROW(SetConvAlgoSearch(&fwd, true, -1), EnforceNotMet);
}

}  // namespace testing
}  // namespace halfcaf
