// Conv / ConvGradient with engine DNNL (oneDNN) against the default CPU implementation. Every
// test skips when the build has no oneDNN.
#include <gtest/gtest.h>

#include <typeinfo>

#include "tests/util/gradient_checker.h"
#include "tests/util/conv_case.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

bool HaveDnnl() { return OperatorRegistry::Find(DeviceType::CPU, "Conv", "DNNL") != nullptr; }

#define SKIP_WITHOUT_DNNL() \
  if (!HaveDnnl()) GTEST_SKIP() << "built without oneDNN"

struct Case : ConvShape {
  OperatorDef Forward() const { return ConvOpDef("Conv", bias, Args()); }
  // ConvGradient with every output, or without dX.
  OperatorDef Gradient(bool with_dx) const {
    return ConvGradientOpDef("Conv", bias, with_dx, Args());
  }
  std::map<std::string, Tensor> Inputs(uint32_t seed) const {
    return ConvOpInputs(XDims(), WDims(), M, bias, seed, YDims());
  }
};

// Odd shapes covering groups, strides, asymmetric pads, dilation, 1x1, bias / no bias.
std::vector<Case> Cases() {
  std::vector<Case> cases;
  Case base{2, 3, 7, 9, 4, 3, 3};
  base.pt = base.pl = base.pb = base.pr = 1;
  cases.push_back(base);
  Case grouped{2, 4, 7, 9, 6, 3, 2};
  grouped.group = 2;
  grouped.sh = grouped.sw = 2;
  grouped.pt = 1, grouped.pl = 0, grouped.pb = 2, grouped.pr = 1;
  cases.push_back(grouped);
  Case dilated{2, 3, 11, 9, 5, 3, 3};
  dilated.dh = 2, dilated.dw = 3;
  dilated.pt = dilated.pl = dilated.pb = dilated.pr = 1;
  dilated.bias = false;
  cases.push_back(dilated);
  Case strided{3, 5, 13, 11, 7, 2, 3};
  strided.sh = 2, strided.sw = 3;
  strided.pl = 2;
  cases.push_back(strided);
  Case stem{2, 3, 17, 15, 8, 7, 7};  // ResNet's first layer, small
  stem.sh = stem.sw = 2;
  stem.pt = stem.pl = stem.pb = stem.pr = 3;
  stem.bias = false;
  cases.push_back(stem);
  cases.push_back(Case{2, 19, 5, 7, 21, 1, 1});  // pointwise, channels not a multiple of 16
  Case pointwise_strided{2, 32, 9, 7, 48, 1, 1};
  pointwise_strided.sh = pointwise_strided.sw = 2;
  pointwise_strided.bias = false;
  cases.push_back(pointwise_strided);
  Case depthwise{2, 6, 7, 9, 6, 3, 3};
  depthwise.group = 6;
  depthwise.pt = depthwise.pl = depthwise.pb = depthwise.pr = 1;
  cases.push_back(depthwise);
  // ResNet-18's layer3 on 28x28 images: 3x3 over a 2x2 image, wide.
  Case tiny_image{4, 256, 2, 2, 256, 3, 3};
  tiny_image.pt = tiny_image.pl = tiny_image.pb = tiny_image.pr = 1;
  tiny_image.bias = false;
  cases.push_back(tiny_image);
  return cases;
}

void ExpectSameOutputs(const OperatorDef& def, const std::map<std::string, Tensor>& in) {
  ExpectEngineMatchesDefault(def, in, "DNNL", 1e-4f);
}

TEST(ConvDnnlTest, ForwardAndGradientsMatchDefault) {
  SKIP_WITHOUT_DNNL();
  for (bool nhwc : {false, true}) {
    uint32_t seed = 100;
    for (Case c : Cases()) {
      c.nhwc = nhwc;
      SCOPED_TRACE(::testing::Message() << (nhwc ? "NHWC" : "NCHW") << " seed " << seed);
      auto in = c.Inputs(seed);
      ExpectSameOutputs(c.Forward(), in);
      ExpectSameOutputs(c.Gradient(true), in);
      ExpectSameOutputs(c.Gradient(false), in);
      seed += 5;
    }
  }
}

// no_weight_gradient (a frozen layer's gradient, where only dX is wanted): the same dX, bit for
// bit, and the filter and bias gradients left as they were.
TEST(ConvDnnlTest, NoWeightGradientGivesTheSameDxAndLeavesDw) {
  SKIP_WITHOUT_DNNL();
  std::vector<Case> cases = Cases();
  cases.resize(5);  // plain, grouped and strided, dilated without bias, strided, the stem
  uint32_t seed = 300;
  for (bool nhwc : {false, true}) {
    for (Case c : cases) {
      c.nhwc = nhwc;
      SCOPED_TRACE(::testing::Message() << (nhwc ? "NHWC" : "NCHW") << " seed " << seed);
      const auto in = c.Inputs(seed++);
      Workspace full;
      RunWithEngine(c.Gradient(true), in, "DNNL", &full);
      OperatorDef skip = c.Gradient(true);
      *skip.add_arg() = MakeArgument("no_weight_gradient", 1);
      Workspace ws;
      const Tensor sentinel_w = RandomTensor(c.WDims(), seed, 5.f, 6.f);
      SetInput(&ws, "dW", sentinel_w);
      if (c.bias) SetInput(&ws, "db", RandomTensor({c.M}, seed, 5.f, 6.f));
      RunWithEngine(skip, in, "DNNL", &ws);
      EXPECT_EQ(ToFloatVector(ws.GetTensor("dX")), ToFloatVector(full.GetTensor("dX")));
      EXPECT_EQ(ToFloatVector(ws.GetTensor("dW")), ToFloatVector(sentinel_w));
      if (c.bias) {
        EXPECT_EQ(ToFloatVector(ws.GetTensor("db")),
                  ToFloatVector(RandomTensor({c.M}, seed, 5.f, 6.f)));
      }
      // Without dX the filter gradient is the op's whole work: it is computed.
      OperatorDef only_dw = c.Gradient(false);
      *only_dw.add_arg() = MakeArgument("no_weight_gradient", 1);
      Workspace dw_ws;
      RunWithEngine(only_dw, in, "DNNL", &dw_ws);
      EXPECT_EQ(ToFloatVector(dw_ws.GetTensor("dW")), ToFloatVector(full.GetTensor("dW")));
    }
  }
}

TEST(ConvDnnlTest, CreateOperatorPrefersDnnlOnCpu) {
  SKIP_WITHOUT_DNNL();
  Case c{2, 3, 7, 9, 4, 3, 3};
  auto in = c.Inputs(1);
  Workspace ws;
  for (const auto& kv : in) SetInput(&ws, kv.first, kv.second);
  for (const OperatorDef& def : {c.Forward(), c.Gradient(true)}) {
    auto chosen = CreateOperator(def, &ws);
    auto dnnl = (*OperatorRegistry::Find(DeviceType::CPU, def.type(), "DNNL"))(def, &ws);
    auto plain = (*OperatorRegistry::Find(DeviceType::CPU, def.type(), ""))(def, &ws);
    EXPECT_EQ(typeid(*chosen), typeid(*dnnl)) << def.type();
    EXPECT_NE(typeid(*chosen), typeid(*plain)) << def.type();
  }
}

TEST(ConvDnnlTest, GradientCheck) {
  SKIP_WITHOUT_DNNL();
  std::vector<Case> cases;
  Case a{2, 3, 7, 9, 2, 3, 3};
  a.pt = 1, a.pl = 2, a.pb = 0, a.pr = 1;
  a.sh = 2;
  cases.push_back(a);
  Case grouped{2, 4, 5, 6, 2, 2, 3};
  grouped.group = 2;
  grouped.sw = 2;
  grouped.pt = grouped.pl = grouped.pb = grouped.pr = 1;
  grouped.bias = false;
  cases.push_back(grouped);
  GradientCheckOptions opts;
  opts.max_elements = 100;
  GradientChecker checker(opts);
  for (bool nhwc : {false, true}) {
    uint32_t seed = 40;
    for (Case c : cases) {
      c.nhwc = nhwc;
      SCOPED_TRACE(::testing::Message() << (nhwc ? "NHWC" : "NCHW") << " seed " << seed);
      OperatorDef def = c.Forward();
      def.set_engine("DNNL");
      auto in = c.Inputs(seed);
      in.erase("dY");
      for (int i = 0; i < def.input_size(); ++i) checker.Check(def, in, i, 0);
      seed += 3;
    }
  }
}

TEST(ConvDnnlTest, PrimitivesFollowShapeChanges) {
  SKIP_WITHOUT_DNNL();
  Case c{2, 3, 7, 9, 4, 3, 3};
  c.pt = c.pl = c.pb = c.pr = 1;
  Case smaller = c;
  smaller.N = 1, smaller.H = 4, smaller.W = 5;
  for (bool forward : {true, false}) {
    const OperatorDef def = forward ? c.Forward() : c.Gradient(true);
    const OperatorCreator* creator = OperatorRegistry::Find(DeviceType::CPU, def.type(), "DNNL");
    // Created over fed inputs, then run on three shapes in turn (the last repeats the first).
    Workspace run;
    for (const auto& kv : c.Inputs(7)) SetInput(&run, kv.first, kv.second);
    auto dnnl = (*creator)(def, &run);
    for (const Case* s : {&c, &smaller, &c}) {
      auto in = s->Inputs(static_cast<uint32_t>(s->H * 10));
      for (const auto& kv : in) SetInput(&run, kv.first, kv.second);
      dnnl->Run(0);
      Workspace ref;
      RunWithEngine(def, in, "", &ref);
      for (const auto& out : def.output()) {
        EXPECT_EQ(run.GetTensor(out).dims(), ref.GetTensor(out).dims()) << out;
        ExpectNear(ToFloatVector(run.GetTensor(out)), ToFloatVector(ref.GetTensor(out)), 1e-4f,
                   1e-4f, out);
      }
    }
  }
}

TEST(ConvDnnlTest, Float16FallsBackToDefault) {
  SKIP_WITHOUT_DNNL();
  Case c{2, 4, 7, 9, 4, 3, 3};
  c.group = 2;
  c.pt = c.pl = c.pb = c.pr = 1;
  auto in = c.Inputs(11);
  const OperatorDef def = c.Forward();
  // Declined at creation when the inputs are float16 already: CreateOperator gives the default.
  Workspace ws16;
  SetInput(&ws16, "X", ToHalf(in["X"]));
  SetInput(&ws16, "W", ToHalf(in["W"]));
  SetInput(&ws16, "b", ToHalf(in["b"]));
  const OperatorCreator* dnnl = OperatorRegistry::Find(DeviceType::CPU, "Conv", "DNNL");
  EXPECT_THROW((*dnnl)(def, &ws16), UnsupportedOperatorFeature);
  auto chosen = CreateOperator(def, &ws16);
  auto plain = (*OperatorRegistry::Find(DeviceType::CPU, "Conv", ""))(def, &ws16);
  EXPECT_EQ(typeid(*chosen), typeid(*plain));
  chosen->Run(0);
  EXPECT_EQ(ws16.GetTensor("Y").dtype(), DataType::FLOAT16);
  // Through the engine list, as nets create it: FP16 agrees with FP32 (forward and gradient).
  CheckFp16MatchesFp32(def, in, {"X", "W", "b"}, {0}, 4e-3f, 2e-3f);
  CheckFp16MatchesFp32(c.Gradient(true), in, {"X", "W", "dY"}, {0, 1, 2}, 1e-2f, 4e-3f);

  // Created over float inputs, then fed float16: the op runs the default implementation.
  for (const OperatorDef& d : {def, c.Gradient(true)}) {
    Workspace ws;
    for (const auto& kv : in) SetInput(&ws, kv.first, kv.second);
    auto op = (*OperatorRegistry::Find(DeviceType::CPU, d.type(), "DNNL"))(d, &ws);
    op->Run(0);
    for (const char* name : {"X", "W", "b", "dY"}) SetInput(&ws, name, ToHalf(in[name]));
    op->Run(0);
    std::map<std::string, Tensor> in16;
    for (const char* name : {"X", "W", "b", "dY"}) in16[name] = ToHalf(in[name]);
    Workspace ref;
    RunWithEngine(d, in16, "", &ref);
    for (const auto& out : d.output()) {
      EXPECT_EQ(ws.GetTensor(out).dtype(), DataType::FLOAT16) << out;
      ExpectNear(ToFloatVector(ws.GetTensor(out)), ToFloatVector(ref.GetTensor(out)), 0, 0, out);
    }
  }
}

TEST(ConvDnnlTest, BadShapesGiveTheDefaultMessages) {
  SKIP_WITHOUT_DNNL();
  Case c{2, 3, 7, 9, 4, 3, 3};
  auto in = c.Inputs(3);
  const OperatorCreator* dnnl = OperatorRegistry::Find(DeviceType::CPU, "Conv", "DNNL");
  {
    Workspace ws;
    for (const auto& kv : in) SetInput(&ws, kv.first, kv.second);
    SetInput(&ws, "W", RandomTensor({4, 2, 3, 3}, 4));
    auto op = (*dnnl)(c.Forward(), &ws);
    try {
      op->Run(0);
      ADD_FAILURE() << "expected an error";
    } catch (const EnforceNotMet& e) {
      EXPECT_NE(std::string(e.what()).find("input channels per group"), std::string::npos)
          << e.what();
    }
  }
  {
    Workspace ws;
    for (const auto& kv : in) SetInput(&ws, kv.first, kv.second);
    SetInput(&ws, "dY", RandomTensor({2, 4, 5, 6}, 5));
    auto op =
        (*OperatorRegistry::Find(DeviceType::CPU, "ConvGradient", "DNNL"))(c.Gradient(true), &ws);
    try {
      op->Run(0);
      ADD_FAILURE() << "expected an error";
    } catch (const EnforceNotMet& e) {
      EXPECT_NE(std::string(e.what()).find("dY has dims"), std::string::npos) << e.what();
    }
  }
}

// 1-D and 3-D NCHW convolutions (oneDNN's ncw / ncdhw) against the default implementation.
struct NdCase : ConvNdShape {
  OperatorDef Forward(const std::string& type) const { return ConvOpDef(type, bias, Args()); }
  OperatorDef Gradient(const std::string& type, bool with_dx) const {
    return ConvGradientOpDef(type, bias, with_dx, Args());
  }
  std::map<std::string, Tensor> Inputs(uint32_t seed) const {
    return ConvOpInputs(XDims(), WDims(), M, bias, seed, YDims());
  }
};

TEST(ConvDnnlTest, OneAndThreeDMatchDefault) {
  SKIP_WITHOUT_DNNL();
  std::vector<std::pair<std::string, NdCase>> cases;
  cases.push_back({"Conv1D", NdCase{{2, 3, 4, {11}, {3}, {2}, {}, {1, 2}}}});
  cases.push_back({"Conv", NdCase{{2, 4, 6, {9}, {3}, {}, {}, {1, 0}, 2}}});
  NdCase d1{{2, 3, 5, {13}, {3}, {}, {3}, {2, 1}}};
  d1.bias = false;
  cases.push_back({"Conv1D", d1});
  cases.push_back({"Conv3D", NdCase{{2, 3, 2, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {},
                                     {1, 1, 0, 0, 1, 1}}}});
  cases.push_back({"Conv3D", NdCase{{2, 4, 4, {5, 4, 3}, {3, 1, 2}, {2, 1, 1}, {},
                                     {1, 0, 1, 1, 0, 0}, 2}}});
  NdCase d3{{1, 3, 2, {6, 5, 7}, {2, 2, 2}, {}, {2, 1, 3}, {1, 0, 1, 0, 1, 1}}};
  d3.bias = false;
  cases.push_back({"Conv", d3});
  uint32_t seed = 500;
  for (const auto& [type, c] : cases) {
    SCOPED_TRACE(::testing::Message() << type << " X " << DimsString(c.XDims()) << " seed "
                                      << seed);
    auto in = c.Inputs(seed);
    // The DNNL op accepts the case (no decline) and agrees with the default.
    Workspace ws;
    for (const auto& kv : in) SetInput(&ws, kv.first, kv.second);
    EXPECT_NO_THROW((*OperatorRegistry::Find(DeviceType::CPU, type, "DNNL"))(c.Forward(type), &ws));
    ExpectSameOutputs(c.Forward(type), in);
    ExpectSameOutputs(c.Gradient(type, true), in);
    ExpectSameOutputs(c.Gradient(type, false), in);
    seed += 5;
  }
  GradientCheckOptions opts;
  opts.max_elements = 80;
  GradientChecker checker(opts);
  for (const auto& [type, c] : cases) {
    OperatorDef def = c.Forward(type);
    def.set_engine("DNNL");
    auto in = c.Inputs(seed++);
    in.erase("dY");
    for (int i = 0; i < def.input_size(); ++i) checker.Check(def, in, i, 0);
  }
}

// NHWC other than 2-D and more than 3 spatial dims are left to the default op (which reports
// NHWC and runs 4-D).
TEST(ConvDnnlTest, DeclinesWhatOneDnnCannotTake) {
  SKIP_WITHOUT_DNNL();
  const OperatorCreator* dnnl = OperatorRegistry::Find(DeviceType::CPU, "Conv", "DNNL");
  Workspace ws;
  SetInput(&ws, "X", RandomTensor({1, 3, 3, 3, 2}, 1));
  SetInput(&ws, "W", RandomTensor({2, 2, 2, 2, 2}, 2));
  auto nhwc = MakeOperatorDef("Conv", "c", {"X", "W"}, {"Y"},
                              {MakeArgument("kernels", std::vector<int64_t>{2, 2, 2}),
                               MakeArgument("order", "NHWC")});
  EXPECT_THROW((*dnnl)(nhwc, &ws), UnsupportedOperatorFeature);
  ExpectError(nhwc,
              {{"X", RandomTensor({1, 3, 3, 3, 2}, 1)}, {"W", RandomTensor({2, 2, 2, 2, 2}, 2)}},
              "NHWC order supports only 2-D convolution");
  NdCase c4{{1, 2, 3, {3, 4, 3, 5}, {2, 1, 2, 3}}};
  auto in = c4.Inputs(9);
  Workspace run;
  for (const auto& kv : in) SetInput(&run, kv.first, kv.second);
  EXPECT_THROW((*dnnl)(c4.Forward("Conv"), &run), UnsupportedOperatorFeature);
  auto op = CreateOperator(c4.Forward("Conv"), &run);
  op->Run(0);
  ExpectNear(ToFloatVector(run.GetTensor("Y")),
             c4.Direct(in["X"].data<float>(), in["W"].data<float>(), in["b"].data<float>()), 1e-5f,
             1e-5f);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
