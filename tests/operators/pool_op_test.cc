#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "tests/util/conv_case.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"
#include "tests/util/pool_case.h"
#include "tests/util/vector_width.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(PoolOpTest, ForwardMatchesNaive) {
  for (bool nhwc : {false, true}) {
    uint32_t seed = 1;
    for (PoolCase c : PoolCases()) {
      c.nhwc = nhwc;
      for (bool max : {true, false}) {
        SCOPED_TRACE(::testing::Message()
                     << (nhwc ? "NHWC " : "NCHW ") << (max ? "max" : "avg") << " seed " << seed);
        Tensor X = RandomTensor(c.XDims(), seed++);
        Workspace ws;
        RunOp(c.Def(max ? "MaxPool" : "AveragePool"), {{"X", X}}, &ws);
        EXPECT_EQ(ws.GetTensor("Y").dims(), c.YDims());
        ExpectNear(ToFloatVector(ws.GetTensor("Y")), c.Naive(X, max), 1e-6f, 1e-5f);
      }
    }
  }
}

TEST(PoolOpTest, AverageExcludesPadding) {
  // 2x2 image of ones, 3x3 window, pad 1, stride 1: every output is 1 (not 4/9, 6/9, ...).
  auto def = MakeOperatorDef("AveragePool2D", "", {"X"}, {"Y"},
                             {MakeArgument("kernel", 3), MakeArgument("pad", 1)});
  auto y = RunAndGet(def, {{"X", FloatTensor({1, 1, 2, 2}, {1.f, 1.f, 1.f, 1.f})}});
  EXPECT_EQ(y, (std::vector<float>{1.f, 1.f, 1.f, 1.f}));
  auto max_def = MakeOperatorDef("MaxPool2D", "", {"X"}, {"Y"},
                                 {MakeArgument("kernel", 2), MakeArgument("stride", 2)});
  auto m = RunAndGet(max_def, {{"X", FloatTensor({1, 1, 2, 4}, {1, 5, -2, -3, 4, 0, -1, -4})}});
  EXPECT_EQ(m, (std::vector<float>{5.f, -1.f}));
}

TEST(PoolOpTest, CaffeLegacyPooling) {
  // 6x6 input, kernel 3, stride 2, pad 1: Caffe's rounding up gives 4x4 (tail pad 3).
  PoolCase c{1, 2, 6, 6, 3, 3};
  c.sh = c.sw = 2;
  c.pt = c.pl = 1;
  c.pb = c.pr = 3;
  Tensor X = RandomTensor(c.XDims(), 3);
  for (bool max : {true, false}) {
    auto def = MakeOperatorDef(max ? "MaxPool" : "AveragePool", "", {"X"}, {"Y"},
                               {MakeArgument("kernel", 3), MakeArgument("stride", 2),
                                MakeArgument("pad", 1), MakeArgument("legacy_pad", 3)});
    Workspace ws;
    RunOp(def, {{"X", X}}, &ws);
    EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{1, 2, 4, 4}));
    ExpectNear(ToFloatVector(ws.GetTensor("Y")), c.Naive(X, max), 1e-6f, 1e-5f);
  }
}

TEST(PoolOpTest, Gradients) {
  GradientCheckOptions opts;
  opts.stepsize = 5e-3f;
  opts.max_elements = 200;
  GradientChecker checker(opts);
  for (bool nhwc : {false, true}) {
    uint32_t seed = 20;
    for (PoolCase c : PoolCases()) {
      c.nhwc = nhwc;
      for (const char* type : {"MaxPool", "AveragePool"}) {
        SCOPED_TRACE(::testing::Message()
                     << (nhwc ? "NHWC " : "NCHW ") << type << " seed " << seed);
        checker.Check(c.Def(type), {{"X", DistinctTensor(c.XDims(), seed++)}}, 0, 0);
      }
    }
  }
}

TEST(PoolOpTest, MaxGradientGoesToFirstMaximum) {
  // Window [2, 2; 1, 2]: the first 2 gets the whole gradient.
  auto def =
      MakeOperatorDef("MaxPoolGradient", "", {"X", "Y", "dY"}, {"dX"}, {MakeArgument("kernel", 2)});
  auto dx = RunAndGet(def, {{"X", FloatTensor({1, 1, 2, 2}, {2, 2, 1, 2})},
                            {"Y", FloatTensor({1, 1, 1, 1}, {2})},
                            {"dY", FloatTensor({1, 1, 1, 1}, {3})}});
  EXPECT_EQ(dx, (std::vector<float>{3, 0, 0, 0}));
}

TEST(PoolOpTest, GradientMakerCopiesArgs) {
  PoolCase c{2, 3, 7, 9, 3, 3};
  auto def = c.Def("MaxPool2D");
  GradientOpsMeta meta = GetGradientForOp(def, {GradientWrapper{"Y_grad", "", ""}});
  ASSERT_EQ(meta.ops.size(), 1u);
  const OperatorDef& g = meta.ops[0];
  EXPECT_EQ(g.type(), "MaxPool2DGradient");
  EXPECT_EQ(std::vector<std::string>(g.input().begin(), g.input().end()),
            (std::vector<std::string>{"X", "Y", "Y_grad"}));
  EXPECT_EQ(std::vector<std::string>(g.output().begin(), g.output().end()),
            (std::vector<std::string>{"X_grad"}));
  EXPECT_EQ(g.arg_size(), def.arg_size());
  EXPECT_EQ(ArgumentHelper(g).GetRepeatedArgument<int64_t>("kernels"),
            (std::vector<int64_t>{3, 3}));
}

// The pool op `def` and its gradient op in FP16 agree with FP32 (X of `x_dims`, Y of `y_dims`).
void CheckPoolFp16MatchesFp32(const OperatorDef& def, const std::vector<int64_t>& x_dims,
                              const std::vector<int64_t>& y_dims) {
  Tensor X = RandomTensor(x_dims, 7);
  CheckFp16MatchesFp32(def, {{"X", X}}, {"X"});
  Workspace ws;
  RunOp(def, {{"X", X}}, &ws);
  Tensor Y;
  Y.CopyFrom(ws.GetTensor("Y"));
  auto args = def.arg();
  auto gdef = MakeOperatorDef(def.type() + "Gradient", "", {"X", "Y", "dY"}, {"dX"},
                              std::vector<Argument>(args.begin(), args.end()));
  CheckFp16MatchesFp32(gdef, {{"X", X}, {"Y", Y}, {"dY", RandomTensor(y_dims, 8)}},
                       {"X", "Y", "dY"});
}

TEST(PoolOpTest, Fp16MatchesFp32) {
  PoolCase c{2, 3, 7, 9, 3, 2};
  c.sh = 2;
  c.pt = 1, c.pl = 0, c.pb = 1, c.pr = 1;
  for (int64_t dilation : {1, 2}) {
    c.dh = c.dw = dilation;
    for (bool nhwc : {false, true}) {
      c.nhwc = nhwc;
      for (const std::string type : {"MaxPool", "AveragePool"}) {
        SCOPED_TRACE(type + (nhwc ? " NHWC" : " NCHW") + " dilation " + std::to_string(dilation));
        CheckPoolFp16MatchesFp32(c.Def(type), c.XDims(), c.YDims());
      }
    }
  }
}

// The bfloat16 NHWC max pooling gradient of the default op on AVX-512F vectors (16 channels a
// window; operators/math/bf16_vector_loops.h) is its scalar loops' bit for bit, and the float
// op's dX rounded once: overlapping and dilated windows, ties (the first maximum in scan order
// takes the gradient), NaN and -inf in X, C a multiple of 16.
TEST(PoolOpTest, BFloat16NhwcMaxGradientOnVectorsIsTheScalarLoops) {
  PoolCase overlap{2, 32, 9, 11, 3, 3};
  overlap.sh = overlap.sw = 2;
  overlap.pt = overlap.pl = overlap.pb = overlap.pr = 1;
  PoolCase dilated{1, 48, 8, 9, 3, 2};
  dilated.dh = 2, dilated.sh = 1, dilated.sw = 2, dilated.pt = 2, dilated.pr = 1;
  for (PoolCase c : {overlap, dilated}) {
    c.nhwc = true;
    SCOPED_TRACE(DimsString(c.XDims()));
    // Multiples of 0.25 in [-1, 1]: many ties.
    Tensor x = RandomTensor(c.XDims(), 5, -1.f, 1.f);
    float* xd = x.mutable_data<float>();
    for (int64_t i = 0; i < x.numel(); ++i) xd[i] = std::round(xd[i] * 4) / 4;
    xd[37] = std::numeric_limits<float>::quiet_NaN();
    xd[x.numel() / 2] = -std::numeric_limits<float>::infinity();
    const Tensor dy = RoundThroughBFloat16(RandomTensor(c.YDims(), 6));
    const OperatorDef fwd = c.Def("MaxPool");
    const auto args = fwd.arg();
    const OperatorDef grad = MakeOperatorDef("MaxPoolGradient", "", {"X", "Y", "dY"}, {"dX"},
                                             std::vector<Argument>(args.begin(), args.end()));
    std::map<std::string, Tensor> in32{{"X", x}, {"Y", RandomTensor(c.YDims(), 7)}, {"dY", dy}};
    std::map<std::string, Tensor> in16{
        {"X", ToBFloat16(x)}, {"Y", ToBFloat16(in32["Y"])}, {"dY", ToBFloat16(dy)}};
    Workspace ws32;
    RunWithEngine(grad, in32, "", &ws32);
    const std::vector<float> want = ToFloatVector(RoundThroughBFloat16(ws32.GetTensor("dX")));
    for (const bool vectors : {true, false}) {
      SCOPED_TRACE(vectors ? "vectors" : "scalar loops");
      Workspace ws;
      {
        const ScopedVectorWidth width(vectors ? VectorWidth::kAvx512 : VectorWidth::kBaseline);
        RunWithEngine(grad, in16, "", &ws);
      }
      EXPECT_EQ(ws.GetTensor("dX").dtype(), DataType::BFLOAT16);
      const std::vector<float> v = ToFloatVector(ws.GetTensor("dX"));
      ASSERT_EQ(v.size(), want.size());
      int64_t differ = 0;
      for (size_t i = 0; i < v.size(); ++i) {
        differ += !(v[i] == want[i] || (std::isnan(v[i]) && std::isnan(want[i])));
      }
      EXPECT_EQ(differ, 0) << " of " << v.size();
    }
  }
}

// ONNX's test_maxpool_2d_dilations: 4x4, kernel 2, dilation 2 reads rows and columns {0, 2} and
// {1, 3}; and average pooling over dilated taps partly in the padding.
TEST(PoolOpTest, DilatedWindowsHandComputed) {
  const Tensor X =
      FloatTensor({1, 1, 4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  auto max_def = MakeOperatorDef("MaxPool", "", {"X"}, {"Y"},
                                 {MakeArgument("kernel", 2), MakeArgument("dilation", 2)});
  EXPECT_EQ(RunAndGet(max_def, {{"X", X}}), (std::vector<float>{11, 12, 15, 16}));
  // One row [1, 2, 4, 8, 16], kernel 3, dilation 2, pad 1 each side: taps {-1, 1, 3},
  // {0, 2, 4} and {1, 3, 5}, the means of (2, 8), (1, 4, 16) and (2, 8).
  auto avg_def = MakeOperatorDef("AveragePool1D", "", {"X"}, {"Y"},
                                 {MakeArgument("kernels", std::vector<int64_t>{3}),
                                  MakeArgument("dilations", std::vector<int64_t>{2}),
                                  MakeArgument("pads", std::vector<int64_t>{1, 1})});
  EXPECT_EQ(RunAndGet(avg_def, {{"X", FloatTensor({1, 1, 5}, {1, 2, 4, 8, 16})}}),
            (std::vector<float>{5, 7, 5}));
}

// ---- 1-D and 3-D (N-d NCHW) pooling ----------------------------------------------------------

// An NCHW pooling over in.size() spatial dims; pads: all heads, then all tails (empty: zeros).
struct NdPoolCase {
  int64_t N, C;
  std::vector<int64_t> in, kernel, stride, pads;
  bool global = false;
  std::vector<int64_t> dilation;  // empty: ones

  int nd() const { return static_cast<int>(in.size()); }
  int64_t K(int d) const { return global ? in[d] : kernel[d]; }
  int64_t S(int d) const { return global || stride.empty() ? 1 : stride[d]; }
  int64_t D(int d) const { return global || dilation.empty() ? 1 : dilation[d]; }
  int64_t Head(int d) const { return global || pads.empty() ? 0 : pads[d]; }
  int64_t Tail(int d) const { return global || pads.empty() ? 0 : pads[nd() + d]; }
  std::vector<int64_t> Out() const {
    std::vector<int64_t> o;
    for (int d = 0; d < nd(); ++d) {
      o.push_back((in[d] + Head(d) + Tail(d) - D(d) * (K(d) - 1) - 1) / S(d) + 1);
    }
    return o;
  }
  std::vector<int64_t> XDims() const {
    std::vector<int64_t> d{N, C};
    d.insert(d.end(), in.begin(), in.end());
    return d;
  }
  std::vector<int64_t> YDims() const {
    std::vector<int64_t> d{N, C};
    const std::vector<int64_t> o = Out();
    d.insert(d.end(), o.begin(), o.end());
    return d;
  }
  OperatorDef Def(const std::string& type) const {
    std::vector<Argument> args;
    if (global) {
      args.push_back(MakeArgument("global_pooling", 1));
    } else {
      args.push_back(MakeArgument("kernels", kernel));
      if (!stride.empty()) args.push_back(MakeArgument("strides", stride));
      if (!pads.empty()) args.push_back(MakeArgument("pads", pads));
      if (!dilation.empty()) args.push_back(MakeArgument("dilations", dilation));
    }
    return MakeOperatorDef(type, "pool", {"X"}, {"Y"}, args);
  }

  // Max or mean (over in-image elements only) of each window, computed directly.
  std::vector<float> Naive(const Tensor& X, bool max) const {
    const float* x = X.data<float>();
    const std::vector<int64_t> out = Out();
    std::vector<int64_t> win;
    for (int d = 0; d < nd(); ++d) win.push_back(K(d));
    const int64_t P = Product(out), I = Product(in), W = Product(win);
    std::vector<float> y(static_cast<size_t>(N * C * P));
    std::vector<int64_t> pos(in.size());
    for (int64_t nc = 0; nc < N * C; ++nc) {
      for (int64_t p = 0; p < P; ++p) {
        const std::vector<int64_t> o = Unravel(p, out);
        double acc = max ? -1e30 : 0.0;
        int count = 0;
        for (int64_t k = 0; k < W; ++k) {
          const std::vector<int64_t> t = Unravel(k, win);
          bool inside = true;
          for (int d = 0; d < nd(); ++d) {
            pos[d] = o[d] * S(d) - Head(d) + t[d] * D(d);
            inside = inside && pos[d] >= 0 && pos[d] < in[d];
          }
          if (!inside) continue;
          const double v = x[nc * I + Ravel(pos, in)];
          acc = max ? std::max(acc, v) : acc + v;
          ++count;
        }
        y[nc * P + p] = static_cast<float>(max ? acc : acc / count);
      }
    }
    return y;
  }
};

std::vector<NdPoolCase> NdCases() {
  std::vector<NdPoolCase> cases;
  cases.push_back(NdPoolCase{2, 3, {11}, {3}, {2}, {1, 1}});
  cases.push_back(NdPoolCase{2, 3, {10}, {4}, {3}, {2, 0}});  // asymmetric
  cases.push_back(NdPoolCase{2, 3, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {1, 1, 0, 0, 1, 1}});
  cases.push_back(NdPoolCase{2, 3, {5, 4, 7}, {3, 2, 3}, {2, 1, 2}, {1, 0, 1, 1, 1, 0}});
  cases.push_back(NdPoolCase{2, 3, {4, 5, 3}, {2, 2, 2}, {}, {}});  // stride 1, no pad
  NdPoolCase dil1{2, 3, {12}, {3}, {2}, {2, 1}};  // dilated, taps in the padding
  dil1.dilation = {3};
  cases.push_back(dil1);
  NdPoolCase dil3{2, 3, {5, 7, 6}, {2, 3, 2}, {1, 2, 1}, {1, 0, 1, 0, 1, 1}};
  dil3.dilation = {2, 2, 3};
  cases.push_back(dil3);
  NdPoolCase g1{2, 3, {9}, {}, {}, {}};
  g1.global = true;
  cases.push_back(g1);
  NdPoolCase g3{2, 3, {4, 5, 3}, {}, {}, {}};
  g3.global = true;
  cases.push_back(g3);
  return cases;
}

std::string AliasFor(const NdPoolCase& c, bool max) {
  const std::string base = max ? "MaxPool" : "AveragePool";
  return c.global ? base : base + std::to_string(c.nd()) + "D";
}

TEST(PoolNdOpTest, ForwardMatchesNaive) {
  uint32_t seed = 100;
  for (const NdPoolCase& c : NdCases()) {
    for (bool max : {true, false}) {
      const std::string type = AliasFor(c, max);
      SCOPED_TRACE(::testing::Message() << type << " X " << DimsString(c.XDims()) << " seed "
                                        << seed);
      Tensor X = RandomTensor(c.XDims(), seed++);
      Workspace ws;
      RunOp(c.Def(type), {{"X", X}}, &ws);
      EXPECT_EQ(ws.GetTensor("Y").dims(), c.YDims());
      ExpectNear(ToFloatVector(ws.GetTensor("Y")), c.Naive(X, max), 1e-6f, 1e-5f);
    }
  }
}

TEST(PoolNdOpTest, AverageExcludesPaddingAndMaxGoesToFirstMaximum) {
  // 1-D: [1, 2, 3], window 3, pad 1: means of [1, 2], [1, 2, 3], [2, 3].
  auto avg = MakeOperatorDef("AveragePool1D", "", {"X"}, {"Y"},
                             {MakeArgument("kernels", std::vector<int64_t>{3}),
                              MakeArgument("pads", std::vector<int64_t>{1, 1})});
  EXPECT_EQ(RunAndGet(avg, {{"X", FloatTensor({1, 1, 3}, {1, 2, 3})}}),
            (std::vector<float>{1.5f, 2.f, 2.5f}));
  // 3-D window 2x2x1 holding 5 twice (elements 1 and 3 in scan order): the first one gets dY.
  auto grad = MakeOperatorDef("MaxPool3DGradient", "", {"X", "Y", "dY"}, {"dX"},
                              {MakeArgument("kernels", std::vector<int64_t>{2, 2, 1})});
  auto dx = RunAndGet(grad, {{"X", FloatTensor({1, 1, 2, 2, 1}, {1, 5, 2, 5})},
                             {"Y", FloatTensor({1, 1, 1, 1, 1}, {5})},
                             {"dY", FloatTensor({1, 1, 1, 1, 1}, {3})}});
  EXPECT_EQ(dx, (std::vector<float>{0, 3, 0, 0}));
}

TEST(PoolNdOpTest, Gradients) {
  GradientCheckOptions opts;
  opts.stepsize = 5e-3f;
  opts.max_elements = 200;
  GradientChecker checker(opts);
  uint32_t seed = 120;
  for (const NdPoolCase& c : NdCases()) {
    for (bool max : {true, false}) {
      const std::string type = AliasFor(c, max);
      SCOPED_TRACE(::testing::Message() << type << " X " << DimsString(c.XDims()) << " seed "
                                        << seed);
      checker.Check(c.Def(type), {{"X", DistinctTensor(c.XDims(), seed++)}}, 0, 0);
    }
  }
}

TEST(PoolNdOpTest, Fp16MatchesFp32) {
  NdPoolCase dilated{2, 3, {6, 5, 7}, {2, 2, 3}, {1, 2, 2}, {1, 0, 1, 1, 1, 0}};
  dilated.dilation = {2, 3, 2};
  for (const NdPoolCase& c : {dilated, NdPoolCase{2, 3, {11}, {3}, {2}, {1, 1}},
                              NdPoolCase{2, 3, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {1, 1, 0, 0, 1, 1}}}) {
    for (bool max : {true, false}) {
      const std::string type = AliasFor(c, max);
      SCOPED_TRACE(type);
      CheckPoolFp16MatchesFp32(c.Def(type), c.XDims(), c.YDims());
    }
  }
}

TEST(PoolNdOpTest, SchemaAndGradientMakerForAliases) {
  const NdPoolCase c1{2, 3, {11}, {3}, {2}, {1, 1}};
  const NdPoolCase c3{2, 3, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {1, 1, 0, 0, 1, 1}};
  NdPoolCase g3{2, 3, {4, 5, 3}, {}, {}, {}};
  g3.global = true;
  for (const NdPoolCase& c : {c1, c3, g3}) {
    for (bool max : {true, false}) {
      const std::string type = (max ? "MaxPool" : "AveragePool") + std::to_string(c.nd()) + "D";
      SCOPED_TRACE(type);
      const OpSchema* s = OpSchemaRegistry::Schema(type);
      ASSERT_NE(s, nullptr);
      std::vector<TensorShape> in{{c.XDims(), DataType::FLOAT}};
      auto out = s->InferShapes(c.Def(type), in);
      EXPECT_EQ(out[0].dims, c.YDims());
      int64_t window = 1;
      for (int d = 0; d < c.nd(); ++d) window *= c.K(d);
      EXPECT_DOUBLE_EQ(s->InferCost(c.Def(type), in).flops,
                       1.0 * c.N * c.C * Product(c.Out()) * window);
      const OpSchema* gs = OpSchemaRegistry::Schema(type + "Gradient");
      ASSERT_NE(gs, nullptr);
      auto gout = gs->InferShapes(MakeOperatorDef(type + "Gradient", "", {"X", "Y", "dY"}, {"dX"}),
                                  {in[0], {c.YDims(), DataType::FLOAT}, {c.YDims(), DataType::FLOAT}});
      EXPECT_EQ(gout[0].dims, c.XDims());
      GradientOpsMeta meta = GetGradientForOp(c.Def(type), {GradientWrapper{"Y_grad", "", ""}});
      ASSERT_EQ(meta.ops.size(), 1u);
      EXPECT_EQ(meta.ops[0].type(), type + "Gradient");
    }
  }
}

TEST(PoolNdOpTest, Errors) {
  const NdPoolCase c{2, 3, {4, 5, 3}, {2, 3, 2}, {}, {}};
  Tensor X = RandomTensor(c.XDims(), 1);
  std::vector<Argument> nhwc{MakeArgument("kernels", c.kernel), MakeArgument("order", "NHWC")};
  ExpectError(MakeOperatorDef("MaxPool3D", "p3", {"X"}, {"Y"}, nhwc), {{"X", X}},
              "MaxPool3D 'p3': NHWC order supports only 2-D pooling, got a 3-D window [2, 3, 2]");
  ExpectError(MakeOperatorDef("AveragePool3DGradient", "g", {"X", "Y", "dY"}, {"dX"}, nhwc),
              {{"X", X}, {"Y", X}, {"dY", X}}, "NHWC order supports only 2-D pooling");
  ExpectError(MakeOperatorDef("MaxPool", "pg", {"X"}, {"Y"},
                              {MakeArgument("global_pooling", 1), MakeArgument("order", "NHWC")}),
              {{"X", X}}, "NHWC order supports only 2-D pooling, got X [2, 3, 4, 5, 3]");
  NdPoolCase big = c;
  big.kernel = {2, 3, 4};
  ExpectError(big.Def("AveragePool3D"), {{"X", X}},
              "spatial dim 2: input size 3 plus pads 0 + 0 is smaller than the dilated kernel 4");
  NdPoolCase pad = c;
  pad.pads = {0, 3, 0, 0, 0, 0};
  ExpectError(pad.Def("MaxPool3D"), {{"X", X}}, "each pad must be smaller than the kernel");
  ExpectError(c.Def("MaxPool"), {{"X", RandomTensor({2, 3, 4, 5}, 2)}},
              "X must have 5 dims (N, C, spatial...) for a 3-D window");
  ExpectError(MakeOperatorDef("MaxPool", "", {"X"}, {"Y"}, {MakeArgument("global_pooling", 1)}),
              {{"X", RandomTensor({2, 3}, 2)}}, "global pooling needs X with at least 3 dims");
}

// A window containing NaN pools to NaN (max and average), in every layout and rank; the max
// gradient goes to the NaN, which is what the forward pass selected.
TEST(PoolOpTest, NaNPropagates) {
  const std::vector<Argument> args{MakeArgument("kernel", 2), MakeArgument("stride", 2)};
  // 1x1x2x4 image, two 2x2 windows; NaN at (1, 0) lies in the first.
  const Tensor x = FloatTensor({1, 1, 2, 4}, {1, 5, -2, -3, 4, 0, -1, -4});
  for (const char* type : {"MaxPool", "AveragePool"}) {
    ExpectNaNPropagates(MakeOperatorDef(type, "", {"X"}, {"Y"}, args), {{"X", x}}, "X", 4, "Y",
                        {0});
  }
  std::vector<Argument> nhwc = args;
  nhwc.push_back(MakeArgument("order", std::string("NHWC")));
  // NHWC 1x2x2x2: channel 1 of pixel (0, 1) is NaN: only channel 1's output is.
  ExpectNaNPropagates(MakeOperatorDef("MaxPool", "", {"X"}, {"Y"}, nhwc),
                      {{"X", FloatTensor({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}}, "X", 3, "Y",
                      {1});
  // 3-D window (the N-d path): 1x1x2x2x2, one window.
  ExpectNaNPropagates(MakeOperatorDef("MaxPool", "", {"X"}, {"Y"},
                                      {MakeArgument("kernels", std::vector<int64_t>{2, 2, 2})}),
                      {{"X", RandomTensor({1, 1, 2, 2, 2}, 5)}}, "X", 6, "Y", {0});
  // Gradient: dY of the window flows to the NaN element only.
  Tensor xn;
  xn.CopyFrom(x);
  xn.mutable_data<float>()[4] = std::numeric_limits<float>::quiet_NaN();
  Workspace ws;
  RunOp(MakeOperatorDef("MaxPool", "", {"X"}, {"Y"}, args), {{"X", xn}}, &ws);
  RunOp(MakeOperatorDef("MaxPoolGradient", "", {"X", "Y", "dY"}, {"dX"}, args),
        {{"dY", FloatTensor({1, 1, 1, 2}, {10.f, 20.f})}}, &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("dX")), (std::vector<float>{0, 0, 0, 0, 10, 0, 20, 0}));
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
