// MaxPool / AveragePool and their gradients with engine DNNL (oneDNN's pooling) against the
// default CPU implementation: the same maxima and the same first-maximum gradient on inputs full
// of ties, averages to rounding, bfloat16 on oneDNN's BF16 kernels (with proof they ran), and the
// cases left to the default op (inf / nan inputs, a window wholly in the padding, float16).
// Every test skips when the build has no oneDNN.
#include <gtest/gtest.h>

#include <limits>
#include <typeinfo>

#include "tests/util/bf16_switch.h"
#include "tests/util/op_test_util.h"
#include "tests/util/pool_case.h"

namespace halfcaf {
namespace testing {
namespace {

bool HaveDnnl() { return OperatorRegistry::Find(DeviceType::CPU, "MaxPool", "DNNL") != nullptr; }

#define SKIP_WITHOUT_DNNL() \
  if (!HaveDnnl()) GTEST_SKIP() << "built without oneDNN"

// PoolCases plus ResNet's stem pooling (3x3, stride 2, pad 1) on an even and an odd image.
std::vector<PoolCase> Cases() {
  std::vector<PoolCase> cases = PoolCases();
  for (int64_t size : {16, 15}) {
    PoolCase stem{2, 5, size, size, 3, 3};
    stem.sh = stem.sw = 2;
    stem.pt = stem.pl = stem.pb = stem.pr = 1;
    cases.push_back(stem);
  }
  return cases;
}

// Values from {0, 1, 2, 3}: most windows hold their maximum more than once.
Tensor TiedTensor(const std::vector<int64_t>& dims, uint32_t seed) {
  Tensor t = RandomTensor(dims, seed, 0.f, 4.f);
  float* d = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = std::floor(d[i]);
  return t;
}

// X, the default op's Y for it, and a random dY.
std::map<std::string, Tensor> Inputs(const PoolCase& c, const std::string& type, const Tensor& X,
                                     uint32_t seed) {
  Workspace ws;
  RunWithEngine(c.Def(type), {{"X", X}}, "", &ws);
  Tensor Y;
  Y.CopyFrom(ws.GetTensor("Y"));
  return {{"X", X}, {"Y", Y}, {"dY", RandomTensor(c.YDims(), seed)}};
}

OperatorDef GradientDef(const PoolCase& c, const std::string& type) {
  OperatorDef def = c.Def(type);
  def.set_type(type + "Gradient");
  def.clear_input();
  def.clear_output();
  for (const char* in : {"X", "Y", "dY"}) def.add_input(in);
  def.add_output("dX");
  return def;
}

// Runs `def` with engine DNNL and with the default op; returns both outputs as floats.
std::pair<std::vector<float>, std::vector<float>> BothEngines(
    const OperatorDef& def, const std::map<std::string, Tensor>& in) {
  Workspace dnnl, ref;
  RunWithEngine(def, in, "DNNL", &dnnl);
  RunWithEngine(def, in, "", &ref);
  const Tensor& got = dnnl.GetTensor(def.output(0));
  const Tensor& want = ref.GetTensor(def.output(0));
  EXPECT_EQ(got.dims(), want.dims());
  EXPECT_EQ(got.dtype(), want.dtype());
  return {ToFloatVector(got), ToFloatVector(want)};
}

TEST(PoolDnnlTest, MatchesDefaultOnTies) {
  SKIP_WITHOUT_DNNL();
  for (bool nhwc : {false, true}) {
    uint32_t seed = 300;
    for (PoolCase c : Cases()) {
      c.nhwc = nhwc;
      for (const std::string type : {"MaxPool", "AveragePool"}) {
        SCOPED_TRACE(::testing::Message() << type << (nhwc ? " NHWC" : " NCHW") << " seed " << seed);
        const auto in = Inputs(c, type, TiedTensor(c.XDims(), seed), seed + 1);
        seed += 2;
        const auto fwd = BothEngines(c.Def(type), {{"X", in.at("X")}});
        const auto bwd = BothEngines(GradientDef(c, type), in);
        if (type == "MaxPool") {
          // Maxima are exact; each window's gradient goes to the same (first) maximum. Overlapping
          // windows add into an element in another order: rounding only.
          EXPECT_EQ(fwd.first, fwd.second);
          ExpectNear(bwd.first, bwd.second, 1e-6f, 1e-6f, "dX");
        } else {
          ExpectNear(fwd.first, fwd.second, 1e-6f, 1e-6f, "Y");
          ExpectNear(bwd.first, bwd.second, 1e-6f, 1e-6f, "dX");
        }
      }
    }
  }
}

TEST(PoolDnnlTest, CreateOperatorPrefersDnnlOnCpu) {
  SKIP_WITHOUT_DNNL();
  PoolCase c = PoolCases()[0];
  Workspace ws;
  for (const auto& kv : Inputs(c, "MaxPool", RandomTensor(c.XDims(), 3), 4)) {
    SetInput(&ws, kv.first, kv.second);
  }
  for (const std::string type : {"MaxPool", "AveragePool2D", "MaxPoolGradient"}) {
    const OperatorDef def =
        type == "MaxPoolGradient" ? GradientDef(c, "MaxPool") : c.Def(type);
    auto chosen = CreateOperator(def, &ws);
    auto dnnl = (*OperatorRegistry::Find(DeviceType::CPU, type, "DNNL"))(def, &ws);
    EXPECT_EQ(typeid(*chosen), typeid(*dnnl)) << type;
  }
  // 3-D windows: the engine declines and the default op is made.
  const OperatorDef nd = MakeOperatorDef("MaxPool", "", {"X"}, {"Y"},
                                         {MakeArgument("kernels", std::vector<int64_t>{2, 2, 2})});
  auto chosen = CreateOperator(nd, &ws);
  auto plain = (*OperatorRegistry::Find(DeviceType::CPU, "MaxPool", ""))(nd, &ws);
  EXPECT_EQ(typeid(*chosen), typeid(*plain));
}

// Whether neighbouring windows share taps.
bool Overlap(const PoolCase& c) {
  return !c.global && ((c.sh < c.dh * (c.kh - 1) + 1 && c.OutH() > 1) ||
                       (c.sw < c.dw * (c.kw - 1) + 1 && c.OutW() > 1));
}

// bfloat16: oneDNN's BF16 kernels (one run per op, counted) agree with the emulated path.
// Dilated windows stay on the default op (oneDNN has only reference code for them), and so do
// NHWC gradients of overlapping windows (BFloat16NhwcGradientAddsInFloat).
TEST(PoolDnnlTest, BFloat16FastPathMatchesEmulatedPath) {
  SKIP_WITHOUT_DNNL();
  for (bool nhwc : {false, true}) {
    uint32_t seed = 400;
    for (PoolCase c : Cases()) {
      c.nhwc = nhwc;
      for (const std::string type : {"MaxPool", "AveragePool"}) {
        SCOPED_TRACE(::testing::Message() << type << (nhwc ? " NHWC" : " NCHW") << " seed " << seed);
        std::map<std::string, Tensor> in;
        for (const auto& kv : Inputs(c, type, RandomTensor(c.XDims(), seed), seed + 1)) {
          in[kv.first] = ToBFloat16(kv.second);
        }
        seed += 2;
        const int runs = c.dh == 1 && c.dw == 1 ? 1 : 0;
        ExpectBFloat16PathsAgree(c.Def(type), {{"X", in.at("X")}}, runs);
        ExpectBFloat16PathsAgree(GradientDef(c, type), in, nhwc && Overlap(c) ? 0 : runs);
      }
    }
  }
}

// oneDNN's NHWC bfloat16 pooling gradient adds each window's share into the bfloat16 dX,
// rounding at every addition; the engine leaves overlapping windows to the default op, which
// adds in float and rounds once: the same bits.
TEST(PoolDnnlTest, BFloat16NhwcGradientAddsInFloat) {
  SKIP_WITHOUT_DNNL();
  uint32_t seed = 700;
  for (PoolCase c : Cases()) {
    c.nhwc = true;
    c.C = 16;
    for (const std::string type : {"MaxPool", "AveragePool"}) {
      SCOPED_TRACE(::testing::Message() << type << " seed " << seed);
      std::map<std::string, Tensor> in;
      for (const auto& kv : Inputs(c, type, RandomTensor(c.XDims(), seed, -2.f, 2.f), seed + 1)) {
        in[kv.first] = ToBFloat16(kv.second);
      }
      seed += 2;
      const auto [dnnl, plain] = BothEngines(GradientDef(c, type), in);
      ASSERT_EQ(dnnl.size(), plain.size());
      int64_t differ = 0;
      for (size_t i = 0; i < dnnl.size(); ++i) differ += dnnl[i] != plain[i];
      EXPECT_EQ(differ, 0) << "of " << dnnl.size();
    }
  }
}

// inf and nan follow the default op's rules (nan wins, an all -inf window gives -inf, the
// gradient goes to the nan): the engine leaves such inputs to it.
TEST(PoolDnnlTest, NonFiniteInputsGiveTheDefaultResults) {
  SKIP_WITHOUT_DNNL();
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  PoolCase c{1, 1, 2, 6, 2, 2};
  c.sw = 2;  // three 2x2 windows
  const Tensor X = FloatTensor(c.XDims(), {-inf, -inf, 1, nan, 3, inf,  //
                                           -inf, -inf, 2, 0, 4, 5});
  for (DataType type : {DataType::FLOAT, DataType::BFLOAT16}) {
    SCOPED_TRACE(DataTypeName(type));
    std::map<std::string, Tensor> in;
    for (const auto& kv : Inputs(c, "MaxPool", X, 9)) {
      in[kv.first] = type == DataType::FLOAT ? kv.second : ToBFloat16(kv.second);
    }
    const int64_t before = DnnlBFloat16Runs();
    for (const OperatorDef& def : {c.Def("MaxPool"), GradientDef(c, "MaxPool")}) {
      const auto out = BothEngines(def, def.type() == "MaxPool" ? std::map<std::string, Tensor>{
                                                                     {"X", in.at("X")}}
                                                               : in);
      ASSERT_EQ(out.first.size(), out.second.size());
      for (size_t i = 0; i < out.first.size(); ++i) {
        EXPECT_TRUE(out.first[i] == out.second[i] ||
                    (std::isnan(out.first[i]) && std::isnan(out.second[i])))
            << def.type() << " element " << i << ": " << out.first[i] << " vs " << out.second[i];
      }
    }
    EXPECT_EQ(DnnlBFloat16Runs(), before);
  }
}

// A window wholly in the padding (Caffe's legacy pooling rounds the output up without a head pad:
// 6 rows, kernel 2, stride 3 give windows at rows 0, 3 and 6, the last past the image): the default
// op writes 0 there, so it keeps the case. float16 goes to the default op too.
TEST(PoolDnnlTest, CasesLeftToTheDefaultOp) {
  SKIP_WITHOUT_DNNL();
  const Tensor X = RandomTensor({1, 2, 6, 6}, 12);
  for (const std::string type : {"MaxPool", "AveragePool"}) {
    SCOPED_TRACE(type);
    const OperatorDef def =
        MakeOperatorDef(type, "", {"X"}, {"Y"},
                        {MakeArgument("kernel", 2), MakeArgument("stride", 3),
                         MakeArgument("legacy_pad", 3)});
    const int64_t before = DnnlBFloat16Runs();
    const auto out = BothEngines(def, {{"X", ToBFloat16(X)}});
    ASSERT_EQ(out.first.size(), 18u);  // 1 x 2 x 3 x 3
    EXPECT_EQ(out.first[8], 0.f);      // the corner window
    EXPECT_EQ(out.first, out.second);
    EXPECT_EQ(DnnlBFloat16Runs(), before);
    const auto half = BothEngines(def, {{"X", ToHalf(X)}});
    EXPECT_EQ(half.first, half.second);
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
