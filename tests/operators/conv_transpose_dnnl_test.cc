// ConvTranspose / ConvTransposeGradient with engine DNNL (oneDNN deconvolution) against the
// default CPU implementation (itself checked by direct loops and finite differences in
// conv_transpose_op_test.cc): FP32 on odd shapes and the AC-GAN generator's two layers, bfloat16
// on oneDNN's BF16 kernels, and what the engine leaves to the default op. Every test skips when
// the build has no oneDNN.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <typeinfo>

#include "tests/util/bf16_switch.h"
#include "tests/util/op_test_util.h"

#ifdef HALFCAF_WITH_DNNL
#include "operators/dnnl_util.h"
#endif

namespace halfcaf {
namespace testing {
namespace {

bool HaveDnnl() {
  return OperatorRegistry::Find(DeviceType::CPU, "ConvTranspose", "DNNL") != nullptr;
}

#define SKIP_WITHOUT_DNNL() \
  if (!HaveDnnl()) GTEST_SKIP() << "built without oneDNN"

std::vector<int64_t> Cat(std::vector<int64_t> head, const std::vector<int64_t>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

// One transposed convolution: X (N, M, in...) -> Y (N, C, out...), NCHW or (2-D) NHWC.
struct Case {
  int64_t N, M, C;
  std::vector<int64_t> in, kernel;
  std::vector<int64_t> stride = {}, dilation = {}, pads = {}, adj = {};
  int64_t group = 1;
  bool bias = true;
  bool nhwc = false;

  int nd() const { return static_cast<int>(in.size()); }
  std::vector<int64_t> OutSizes() const {
    std::vector<int64_t> o;
    for (int d = 0; d < nd(); ++d) {
      const int64_t s = stride.empty() ? 1 : stride[d];
      const int64_t dil = dilation.empty() ? 1 : dilation[d];
      const int64_t a = adj.empty() ? 0 : adj[d];
      const int64_t p = pads.empty() ? 0 : pads[d] + pads[nd() + d];
      o.push_back((in[d] - 1) * s + dil * (kernel[d] - 1) + 1 + a - p);
    }
    return o;
  }
  std::vector<int64_t> Layout(int64_t c, const std::vector<int64_t>& sp) const {
    return nhwc ? Cat(Cat({N}, sp), {c}) : Cat({N, c}, sp);
  }
  std::vector<int64_t> XDims() const { return Layout(M, in); }
  std::vector<int64_t> YDims() const { return Layout(C, OutSizes()); }
  std::vector<int64_t> WDims() const {
    return nhwc ? Cat(Cat({M}, kernel), {C / group}) : Cat({M, C / group}, kernel);
  }
  std::vector<Argument> Args() const {
    std::vector<Argument> a{MakeArgument("kernels", kernel),
                            MakeArgument("group", static_cast<int>(group)),
                            MakeArgument("order", std::string(nhwc ? "NHWC" : "NCHW"))};
    if (!stride.empty()) a.push_back(MakeArgument("strides", stride));
    if (!dilation.empty()) a.push_back(MakeArgument("dilations", dilation));
    if (!pads.empty()) a.push_back(MakeArgument("pads", pads));
    if (!adj.empty()) a.push_back(MakeArgument("adjs", adj));
    return a;
  }
  OperatorDef Forward() const {
    return MakeOperatorDef(
        "ConvTranspose", "deconv",
        bias ? std::vector<std::string>{"X", "W", "b"} : std::vector<std::string>{"X", "W"}, {"Y"},
        Args());
  }
  // The gradient op as Caffe2's maker writes it (dW, db, dX) / no_bias (dW, dX), or without dX.
  OperatorDef Gradient(bool with_dx) const {
    std::vector<std::string> out{"dW"};
    if (bias) out.push_back("db");
    if (with_dx) out.push_back("dX");
    std::vector<Argument> a = Args();
    if (!bias) a.push_back(MakeArgument("no_bias", 1));
    return MakeOperatorDef("ConvTransposeGradient", "deconv_grad", {"X", "W", "dY"}, out, a);
  }
  std::map<std::string, Tensor> Inputs(uint32_t seed) const {
    std::map<std::string, Tensor> t{{"X", RandomTensor(XDims(), seed)},
                                    {"W", RandomTensor(WDims(), seed + 1)},
                                    {"dY", RandomTensor(YDims(), seed + 3)}};
    if (bias) t["b"] = RandomTensor({C}, seed + 2);
    return t;
  }
  std::string Name() const {
    return MakeString(nhwc ? "NHWC" : "NCHW", " N ", N, " M ", M, " C ", C, " in ", DimsString(in),
                      " kernel ", DimsString(kernel), " group ", group, bias ? "" : " no bias");
  }
};

// The AC-GAN generator's layers (batch 4): 128 -> 64 channels 7x7 -> 14x14, 64 -> 1 channel
// 14x14 -> 28x28, both 4x4 stride 2 pad 1.
std::vector<Case> GanCases() {
  using V = std::vector<int64_t>;
  return {Case{4, 128, 64, V{7, 7}, V{4, 4}, V{2, 2}, {}, V{1, 1, 1, 1}},
          Case{4, 64, 1, V{14, 14}, V{4, 4}, V{2, 2}, {}, V{1, 1, 1, 1}}};
}

// Odd 2-D shapes: strides 1 and 2, pads 0 / 1 / asymmetric, adj (also adj == stride), groups,
// non-square kernels, dilation, pointwise, bias and none.
std::vector<Case> Cases2d() {
  using V = std::vector<int64_t>;
  std::vector<Case> cases = GanCases();
  Case s1{2, 5, 7, V{6, 5}, V{3, 3}};  // stride 1, pad 0
  s1.bias = false;
  cases.push_back(s1);
  cases.push_back(Case{2, 3, 4, V{5, 4}, V{3, 3}, V{2, 2}, {}, V{1, 1, 1, 1}, V{1, 1}});  // adj 1
  cases.push_back(Case{2, 4, 6, V{4, 3}, V{3, 2}, V{2, 3}, {}, V{1, 0, 2, 1}, {}, 2});    // group
  Case dilated{1, 3, 2, V{3, 4}, V{3, 3}, V{1, 2}, V{2, 2}, V{1, 2, 0, 1}};
  dilated.bias = false;
  cases.push_back(dilated);
  // adj == stride: oneDNN's pad_r goes down by a stride (-1 here, then 0 and 1).
  cases.push_back(Case{1, 2, 3, V{3, 3}, V{2, 3}, V{2, 2}, {}, V{1, 0, 1, 1}, V{2, 2}});
  cases.push_back(Case{1, 2, 3, V{3, 3}, V{2, 3}, V{2, 2}, {}, V{0, 0, 2, 0}, V{2, 1}});
  // adj up to the dilation, past the stride (pad_r -2: oneDNN may refuse, then the default runs).
  cases.push_back(Case{2, 3, 2, V{4, 3}, V{3, 2}, V{2, 1}, V{3, 3}, {}, V{3, 1}});
  cases.push_back(Case{2, 19, 21, V{5, 7}, V{1, 1}});  // pointwise, channels not a multiple of 16
  Case depthwise{2, 6, 6, V{5, 4}, V{3, 3}, V{2, 2}, {}, V{1, 1, 1, 1}, V{1, 0}, 6};
  cases.push_back(depthwise);
  return cases;
}

std::vector<Case> CasesNd() {
  using V = std::vector<int64_t>;
  std::vector<Case> cases;
  cases.push_back(Case{2, 3, 4, V{7}, V{3}, V{2}, {}, V{1, 2}, V{1}});  // 1-D
  Case grouped1d{2, 4, 6, V{9}, V{4}, V{2}, {}, V{1, 1}, {}, 2};
  grouped1d.bias = false;
  cases.push_back(grouped1d);
  Case grouped3d{1, 4, 2, V{3, 2, 4}, V{2, 3, 2}, V{2, 1, 2}, {}, V{0, 1, 1, 1, 0, 0}, V{1, 0, 0}};
  grouped3d.group = 2;
  cases.push_back(grouped3d);
  Case d3{2, 3, 5, V{3, 4, 3}, V{3, 3, 3}, V{1, 2, 2}, {}, V{1, 1, 1, 1, 1, 1}};
  d3.bias = false;
  cases.push_back(d3);
  return cases;
}

// Every output has the default's dims and dtype and values within 1e-5 relative (to the
// element, or to the output's largest magnitude where a sum cancels).
void ExpectMatchesDefault(const OperatorDef& def, const std::map<std::string, Tensor>& in,
                          float rel = 1e-5f) {
  Workspace got_ws, want_ws;
  RunWithEngine(def, in, "DNNL", &got_ws);
  RunWithEngine(def, in, "", &want_ws);
  for (const auto& out : def.output()) {
    const Tensor& got = got_ws.GetTensor(out);
    const Tensor& want = want_ws.GetTensor(out);
    EXPECT_EQ(got.dims(), want.dims()) << def.type() << " " << out;
    EXPECT_EQ(got.dtype(), want.dtype()) << def.type() << " " << out;
    const std::vector<float> w = ToFloatVector(want);
    float scale = 1.f;
    for (float v : w) scale = std::max(scale, std::fabs(v));
    ExpectNear(ToFloatVector(got), w, rel * scale, rel, def.type() + " " + out);
  }
}

TEST(ConvTransposeDnnlTest, ForwardAndGradientsMatchDefault) {
  SKIP_WITHOUT_DNNL();
  std::vector<Case> cases;
  for (bool nhwc : {false, true}) {
    for (Case c : Cases2d()) {
      c.nhwc = nhwc;
      cases.push_back(c);
    }
  }
  for (const Case& c : CasesNd()) cases.push_back(c);
  uint32_t seed = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.Name());
    const auto in = c.Inputs(seed += 5);
    // The DNNL op accepts the case (no decline at creation).
    Workspace ws;
    for (const auto& kv : in) SetInput(&ws, kv.first, kv.second);
    EXPECT_NO_THROW(
        (*OperatorRegistry::Find(DeviceType::CPU, "ConvTranspose", "DNNL"))(c.Forward(), &ws));
    ExpectMatchesDefault(c.Forward(), in);
    ExpectMatchesDefault(c.Gradient(true), in);
    ExpectMatchesDefault(c.Gradient(false), in);
  }
}

TEST(ConvTransposeDnnlTest, CreateOperatorPrefersDnnlOnCpu) {
  SKIP_WITHOUT_DNNL();
  const Case c = GanCases()[1];
  Workspace ws;
  for (const auto& kv : c.Inputs(1)) SetInput(&ws, kv.first, kv.second);
  for (const OperatorDef& def : {c.Forward(), c.Gradient(true)}) {
    auto chosen = CreateOperator(def, &ws);
    auto dnnl = (*OperatorRegistry::Find(DeviceType::CPU, def.type(), "DNNL"))(def, &ws);
    auto plain = (*OperatorRegistry::Find(DeviceType::CPU, def.type(), ""))(def, &ws);
    EXPECT_EQ(typeid(*chosen), typeid(*dnnl)) << def.type();
    EXPECT_NE(typeid(*chosen), typeid(*plain)) << def.type();
  }
}

TEST(ConvTransposeDnnlTest, PrimitivesFollowShapeChanges) {
  SKIP_WITHOUT_DNNL();
  using V = std::vector<int64_t>;
  Case c{2, 3, 4, V{5, 4}, V{3, 3}, V{2, 2}, {}, V{1, 1, 1, 1}, V{1, 1}};
  Case smaller = c;
  smaller.N = 1, smaller.in = {3, 2};
  Case empty = c;
  empty.N = 0;  // the default op runs it
  for (bool forward : {true, false}) {
    const OperatorDef def = forward ? c.Forward() : c.Gradient(true);
    Workspace run;
    for (const auto& kv : c.Inputs(7)) SetInput(&run, kv.first, kv.second);
    auto dnnl = (*OperatorRegistry::Find(DeviceType::CPU, def.type(), "DNNL"))(def, &run);
    uint32_t seed = 20;
    for (const Case* s : {&c, &smaller, &empty, &c}) {
      SCOPED_TRACE(s->Name());
      const auto in = s->Inputs(seed += 4);
      for (const auto& kv : in) SetInput(&run, kv.first, kv.second);
      dnnl->Run(0);
      Workspace ref;
      RunWithEngine(def, in, "", &ref);
      for (const auto& out : def.output()) {
        EXPECT_EQ(run.GetTensor(out).dims(), ref.GetTensor(out).dims()) << out;
        ExpectNear(ToFloatVector(run.GetTensor(out)), ToFloatVector(ref.GetTensor(out)), 1e-5f,
                   1e-5f, out);
      }
    }
  }
}

// float16 is left to the default op: declined at creation when the inputs already hold it, run
// through the default op created on demand when it arrives later.
TEST(ConvTransposeDnnlTest, Float16FallsBackToDefault) {
  SKIP_WITHOUT_DNNL();
  using V = std::vector<int64_t>;
  const Case c{2, 4, 6, V{4, 3}, V{3, 3}, V{2, 2}, {}, V{1, 1, 1, 1}, V{1, 0}, 2};
  const auto in = c.Inputs(11);
  std::map<std::string, Tensor> in16;
  for (const auto& kv : in) in16[kv.first] = ToHalf(kv.second);
  const OperatorDef def = c.Forward();
  Workspace ws16;
  for (const auto& kv : in16) SetInput(&ws16, kv.first, kv.second);
  const OperatorCreator* dnnl = OperatorRegistry::Find(DeviceType::CPU, "ConvTranspose", "DNNL");
  EXPECT_THROW((*dnnl)(def, &ws16), UnsupportedOperatorFeature);
  auto chosen = CreateOperator(def, &ws16);
  auto plain = (*OperatorRegistry::Find(DeviceType::CPU, "ConvTranspose", ""))(def, &ws16);
  EXPECT_EQ(typeid(*chosen), typeid(*plain));
  chosen->Run(0);
  EXPECT_EQ(ws16.GetTensor("Y").dtype(), DataType::FLOAT16);

  for (const OperatorDef& d : {def, c.Gradient(true)}) {
    SCOPED_TRACE(d.type());
    Workspace ws;
    for (const auto& kv : in) SetInput(&ws, kv.first, kv.second);
    auto op = (*OperatorRegistry::Find(DeviceType::CPU, d.type(), "DNNL"))(d, &ws);
    op->Run(0);
    for (const auto& kv : in16) SetInput(&ws, kv.first, kv.second);
    op->Run(0);
    Workspace ref;
    RunWithEngine(d, in16, "", &ref);
    for (const auto& out : d.output()) {
      EXPECT_EQ(ws.GetTensor(out).dtype(), DataType::FLOAT16) << out;
      ExpectNear(ToFloatVector(ws.GetTensor(out)), ToFloatVector(ref.GetTensor(out)), 0, 0, out);
    }
    // Mixed types (float X, float16 filter) too: the default op reads each as float.
    SetInput(&ws, "X", in.at("X"));
    op->Run(0);
    std::map<std::string, Tensor> mixed = in16;
    mixed["X"] = in.at("X");
    Workspace ref_mixed;
    RunWithEngine(d, mixed, "", &ref_mixed);
    for (const auto& out : d.output()) {
      ExpectNear(ToFloatVector(ws.GetTensor(out)), ToFloatVector(ref_mixed.GetTensor(out)), 0, 0,
                 out + " mixed");
    }
  }
}

// More than 3 spatial dims: declined (oneDNN has no layout), the default op runs it.
TEST(ConvTransposeDnnlTest, FourSpatialDimsDecline) {
  SKIP_WITHOUT_DNNL();
  using V = std::vector<int64_t>;
  const Case c{1, 2, 3, V{2, 3, 2, 2}, V{2, 1, 2, 2}, V{2, 1, 1, 2}};
  const auto in = c.Inputs(5);
  Workspace ws;
  for (const auto& kv : in) SetInput(&ws, kv.first, kv.second);
  EXPECT_THROW(
      (*OperatorRegistry::Find(DeviceType::CPU, "ConvTranspose", "DNNL"))(c.Forward(), &ws),
      UnsupportedOperatorFeature);
  Workspace got, want;
  RunOp(c.Forward(), in, &got);
  RunWithEngine(c.Forward(), in, "", &want);
  ExpectNear(ToFloatVector(got.GetTensor("Y")), ToFloatVector(want.GetTensor("Y")), 0, 0, "Y");
}

// Bad shapes give exactly the default op's errors.
TEST(ConvTransposeDnnlTest, BadShapesGiveTheDefaultMessages) {
  SKIP_WITHOUT_DNNL();
  using V = std::vector<int64_t>;
  const Case c{1, 2, 4, V{3, 3}, V{3, 3}, V{2, 2}};
  const auto in = c.Inputs(1);
  auto message = [](const OperatorDef& def, std::map<std::string, Tensor> feed,
                    const std::string& engine) {
    Workspace ws;
    try {
      RunWithEngine(def, feed, engine, &ws);
    } catch (const EnforceNotMet& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << "expected an error from " << def.type() << " engine '" << engine << "'";
    return std::string();
  };
  auto with = [&](const char* name, const Tensor& t) {
    std::map<std::string, Tensor> m = in;
    m[name] = t;
    return m;
  };
  const std::vector<std::pair<OperatorDef, std::map<std::string, Tensor>>> bad{
      {c.Forward(), with("W", RandomTensor({3, 4, 3, 3}, 2))},
      {c.Forward(), with("W", RandomTensor({2, 4, 2, 3}, 2))},
      {c.Forward(), with("b", RandomTensor({3}, 3))},
      {c.Forward(), with("X", RandomTensor({1, 2, 3}, 4))},
      {c.Gradient(true), with("dY", RandomTensor({1, 4, 7, 6}, 5))},
  };
  for (const auto& [def, feed] : bad) {
    const std::string want = message(def, feed, "");
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(message(def, feed, "DNNL"), want);
  }
  // Argument errors come from the shared parser, at creation.
  std::vector<Argument> a = c.Args();
  a.push_back(MakeArgument("adjs", std::vector<int64_t>{3, 0}));
  const OperatorDef bad_adj = MakeOperatorDef("ConvTranspose", "deconv", {"X", "W", "b"}, {"Y"}, a);
  const std::string want = message(bad_adj, in, "");
  EXPECT_NE(want.find("must each be in [0, max(stride, dilation)]"), std::string::npos) << want;
  EXPECT_EQ(message(bad_adj, in, "DNNL"), want);
  const OperatorDef no_db =
      MakeOperatorDef("ConvTransposeGradient", "g", {"X", "W", "dY"}, {"dW"}, c.Args());
  EXPECT_EQ(message(no_db, in, "DNNL"), message(no_db, in, ""));
}

#ifdef HALFCAF_WITH_DNNL

std::map<std::string, Tensor> AsBFloat16(const std::map<std::string, Tensor>& in) {
  std::map<std::string, Tensor> out;
  for (const auto& kv : in) out[kv.first] = ToBFloat16(kv.second);
  return out;
}

std::vector<Case> BFloat16Cases() {
  using V = std::vector<int64_t>;
  std::vector<Case> cases = GanCases();
  cases.push_back(Case{2, 5, 7, V{5, 4}, V{3, 3}, V{2, 2}, {}, V{1, 1, 1, 1}, V{1, 1}});
  Case grouped{2, 8, 8, V{4, 5}, V{3, 2}, V{1, 2}, {}, V{1, 0, 0, 1}, {}, 2};
  grouped.bias = false;
  cases.push_back(grouped);
  std::vector<Case> both;
  for (bool nhwc : {false, true}) {
    for (Case c : cases) {
      c.nhwc = nhwc;
      both.push_back(c);
    }
  }
  return both;
}

// bfloat16 on oneDNN's BF16 kernels: bfloat16 outputs, within bfloat16 rounding of the FP32
// result on the same (bfloat16-rounded) inputs, and of the emulated default op.
TEST(ConvTransposeDnnlTest, BFloat16MatchesFloat32) {
  SKIP_WITHOUT_DNNL();
  if (!DnnlBFloat16Enabled()) GTEST_SKIP() << "oneDNN's BF16 kernels are off on this CPU / ISA";
  uint32_t seed = 700;
  for (const Case& c : BFloat16Cases()) {
    SCOPED_TRACE(c.Name());
    const auto in = c.Inputs(seed += 5);
    std::vector<std::string> names{"X", "W", "dY"};
    if (c.bias) names.push_back("b");
    // The BF16 primitives ran (one run per op), outputs bfloat16, close to the emulated path.
    const auto in16 = AsBFloat16(in);
    ExpectBFloat16PathsAgree(c.Forward(), in16, 1);
    ExpectBFloat16PathsAgree(c.Gradient(true), in16, 1);
    ExpectBFloat16PathsAgree(c.Gradient(false), in16, 1);
    CheckLowPrecisionMatchesFp32(c.Forward(), in, names, DataType::BFLOAT16, {0}, 2e-2f, 8e-3f);
    std::vector<int> outs{0, 1};
    if (c.bias) outs.push_back(2);
    CheckLowPrecisionMatchesFp32(c.Gradient(true), in, names, DataType::BFLOAT16, outs, 3e-2f,
                                 8e-3f);
  }
}

// With the BF16 kernels switched off, bfloat16 runs on the default op (created on demand).
TEST(ConvTransposeDnnlTest, BFloat16OffRunsTheDefault) {
  SKIP_WITHOUT_DNNL();
  const Case c = GanCases()[1];
  const auto in16 = AsBFloat16(c.Inputs(900));
  for (const OperatorDef& def : {c.Forward(), c.Gradient(true)}) {
    Workspace ws;
    for (const auto& kv : c.Inputs(900)) SetInput(&ws, kv.first, kv.second);
    auto op = (*OperatorRegistry::Find(DeviceType::CPU, def.type(), "DNNL"))(def, &ws);
    for (const auto& kv : in16) SetInput(&ws, kv.first, kv.second);
    ScopedBf16Off off;
    const int64_t before = DnnlBFloat16Runs();
    op->Run(0);
    EXPECT_EQ(DnnlBFloat16Runs(), before) << def.type();
    Workspace ref;
    RunWithEngine(def, in16, "", &ref);
    for (const auto& out : def.output()) {
      EXPECT_EQ(ws.GetTensor(out).dtype(), DataType::BFLOAT16) << out;
      ExpectNear(ToFloatVector(ws.GetTensor(out)), ToFloatVector(ref.GetTensor(out)), 0, 0, out);
    }
  }
}

#endif

}  // namespace
}  // namespace testing
}  // namespace halfcaf
