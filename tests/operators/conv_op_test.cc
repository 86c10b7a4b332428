#include <gtest/gtest.h>

#include "operators/nn/conv_pool_op_base.h"
#include "operators/nn/im2col.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/conv_case.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

// One convolution setup; the test computes it directly with nested loops.
struct ConvCase : ConvShape {
  int64_t XIndex(int64_t n, int64_t c, int64_t h, int64_t w) const {
    return nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
  }
  int64_t WIndex(int64_t m, int64_t c, int64_t i, int64_t j) const {
    const int64_t cg = C / group;
    return nhwc ? ((m * kh + i) * kw + j) * cg + c : ((m * cg + c) * kh + i) * kw + j;
  }
  int64_t YIndex(int64_t n, int64_t m, int64_t h, int64_t w) const {
    return nhwc ? ((n * OutH() + h) * OutW() + w) * M + m : ((n * M + m) * OutH() + h) * OutW() + w;
  }

  // Arguments, spelled in the per-dimension forms (kernel_h, stride_w, pad_t, ...).
  OperatorDef Def(const std::string& type = "Conv") const {
    return ConvOpDef(type, bias,
                     {MakeArgument("kernel_h", static_cast<int>(kh)),
                      MakeArgument("kernel_w", static_cast<int>(kw)),
                      MakeArgument("stride_h", static_cast<int>(sh)),
                      MakeArgument("stride_w", static_cast<int>(sw)),
                      MakeArgument("dilations", std::vector<int64_t>{dh, dw}),
                      MakeArgument("pads", std::vector<int64_t>{pt, pl, pb, pr}),
                      MakeArgument("group", static_cast<int>(group)),
                      MakeArgument("order", std::string(nhwc ? "NHWC" : "NCHW"))});
  }

  std::map<std::string, Tensor> Inputs(uint32_t seed) const {
    return ConvOpInputs(XDims(), WDims(), M, bias, seed);
  }

  std::vector<float> Naive(const std::map<std::string, Tensor>& in) const {
    const float* x = in.at("X").data<float>();
    const float* w = in.at("W").data<float>();
    const float* b = bias ? in.at("b").data<float>() : nullptr;
    const int64_t cg = C / group, mg = M / group;
    std::vector<float> y(static_cast<size_t>(N * M * OutH() * OutW()));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t m = 0; m < M; ++m) {
        const int64_t g = m / mg;
        for (int64_t oh = 0; oh < OutH(); ++oh) {
          for (int64_t ow = 0; ow < OutW(); ++ow) {
            double acc = b ? b[m] : 0.0;
            for (int64_t c = 0; c < cg; ++c) {
              for (int64_t i = 0; i < kh; ++i) {
                for (int64_t j = 0; j < kw; ++j) {
                  const int64_t ih = oh * sh - pt + i * dh, iw = ow * sw - pl + j * dw;
                  if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                  acc +=
                      static_cast<double>(x[XIndex(n, g * cg + c, ih, iw)]) * w[WIndex(m, c, i, j)];
                }
              }
            }
            y[YIndex(n, m, oh, ow)] = static_cast<float>(acc);
          }
        }
      }
    }
    return y;
  }
};

std::vector<ConvCase> ForwardCases() {
  std::vector<ConvCase> cases;
  ConvCase base{2, 3, 7, 9, 4, 3, 3};
  base.pt = base.pl = base.pb = base.pr = 1;
  cases.push_back(base);  // 3x3, pad 1
  ConvCase grouped{2, 4, 7, 9, 6, 3, 2};
  grouped.group = 2;
  grouped.sh = grouped.sw = 2;
  grouped.pt = 1, grouped.pl = 0, grouped.pb = 2, grouped.pr = 1;  // asymmetric
  cases.push_back(grouped);
  ConvCase dilated{2, 3, 7, 9, 2, 3, 3};
  dilated.dh = dilated.dw = 2;
  dilated.pt = dilated.pl = dilated.pb = dilated.pr = 1;
  dilated.bias = false;
  cases.push_back(dilated);
  ConvCase strided{2, 3, 7, 9, 5, 2, 3};
  strided.sh = 2, strided.sw = 3;
  strided.pl = 2;
  cases.push_back(strided);
  cases.push_back(ConvCase{2, 3, 7, 9, 5, 1, 1});  // pointwise: no im2col
  ConvCase pointwise_grouped{2, 4, 7, 9, 2, 1, 1};
  pointwise_grouped.group = 2;
  cases.push_back(pointwise_grouped);
  return cases;
}

TEST(ConvOpTest, ForwardMatchesNaive) {
  for (bool nhwc : {false, true}) {
    uint32_t seed = 10;
    for (ConvCase c : ForwardCases()) {
      c.nhwc = nhwc;
      SCOPED_TRACE(::testing::Message() << (nhwc ? "NHWC" : "NCHW") << " case seed " << seed);
      auto in = c.Inputs(seed);
      Workspace ws;
      RunOp(c.Def(), in, &ws);
      const Tensor& y = ws.GetTensor("Y");
      EXPECT_EQ(y.dims(), c.YDims());
      ExpectNear(ToFloatVector(y), c.Naive(in), 1e-5f, 1e-5f);
      seed += 3;
    }
  }
}

TEST(ConvOpTest, Conv2DAliasAndArgumentForms) {
  ConvCase c{2, 3, 7, 9, 4, 3, 3};
  c.pt = c.pl = c.pb = c.pr = 1;
  c.sh = c.sw = 2;
  auto in = c.Inputs(3);
  // The same convolution with the singular argument forms, lower-case order, via Conv2D.
  auto def = MakeOperatorDef("Conv2D", "", {"X", "W", "b"}, {"Y"},
                             {MakeArgument("kernel", 3), MakeArgument("stride", 2),
                              MakeArgument("pad", 1), MakeArgument("order", "nchw")});
  Workspace ws;
  RunOp(def, in, &ws);
  ExpectNear(ToFloatVector(ws.GetTensor("Y")), c.Naive(in), 1e-5f, 1e-5f);
}

TEST(ConvOpTest, ScratchReusedAcrossRunsAndShapes) {
  ConvCase c{2, 3, 7, 9, 4, 3, 3};
  auto in = c.Inputs(5);
  Workspace ws;
  for (const auto& kv : in) SetInput(&ws, kv.first, kv.second);
  auto op = CreateOperator(c.Def(), &ws);
  op->Run(0);
  ExpectNear(ToFloatVector(ws.GetTensor("Y")), c.Naive(in), 1e-5f, 1e-5f);
  ConvCase smaller = c;
  smaller.N = 1, smaller.H = 4, smaller.W = 5;
  auto in2 = smaller.Inputs(6);
  for (const auto& kv : in2) SetInput(&ws, kv.first, kv.second);
  op->Run(0);
  EXPECT_EQ(ws.GetTensor("Y").dims(), smaller.YDims());
  ExpectNear(ToFloatVector(ws.GetTensor("Y")), smaller.Naive(in2), 1e-5f, 1e-5f);
}

TEST(ConvOpTest, GradientsBothOrders) {
  std::vector<ConvCase> cases;
  ConvCase a{2, 3, 7, 9, 2, 3, 3};
  a.pt = 1, a.pl = 2, a.pb = 0, a.pr = 1;
  a.sh = 2;
  cases.push_back(a);
  ConvCase grouped{2, 4, 5, 6, 2, 2, 3};
  grouped.group = 2;
  grouped.pt = grouped.pl = grouped.pb = grouped.pr = 1;
  cases.push_back(grouped);
  ConvCase dilated{1, 3, 7, 9, 2, 2, 2};
  dilated.dh = 2, dilated.dw = 3;
  dilated.bias = false;
  cases.push_back(dilated);
  cases.push_back(ConvCase{2, 3, 4, 5, 3, 1, 1});  // pointwise
  GradientCheckOptions opts;
  opts.max_elements = 120;
  GradientChecker checker(opts);
  for (bool nhwc : {false, true}) {
    uint32_t seed = 40;
    for (ConvCase c : cases) {
      c.nhwc = nhwc;
      SCOPED_TRACE(::testing::Message() << (nhwc ? "NHWC" : "NCHW") << " seed " << seed);
      auto def = c.Def();
      auto in = c.Inputs(seed);
      for (int i = 0; i < def.input_size(); ++i) checker.Check(def, in, i, 0);
      seed += 3;
    }
  }
}

// Output slots of ConvGradient as Caffe2 builds them (section 3.1 table).
TEST(ConvOpTest, GradientMakerFollowsOutputRules) {
  struct Row {
    bool bias, to_input;
    std::vector<std::string> outputs;
    bool no_bias_arg;
  };
  const std::vector<Row> rows{{true, true, {"W_grad", "b_grad", "X_grad"}, false},
                              {true, false, {"W_grad", "b_grad"}, false},
                              {false, true, {"W_grad", "X_grad"}, true},
                              {false, false, {"W_grad"}, true}};
  for (const Row& r : rows) {
    std::vector<std::string> inputs{"X", "W"};
    if (r.bias) inputs.push_back("b");
    std::vector<Argument> args{MakeArgument("kernel", 3)};
    if (!r.to_input) args.push_back(MakeArgument("no_gradient_to_input", 1));
    auto def = MakeOperatorDef("Conv2D", "", inputs, {"Y"}, args);
    GradientOpsMeta meta = GetGradientForOp(def, {GradientWrapper{"Y_grad", "", ""}});
    ASSERT_EQ(meta.ops.size(), 1u);
    const OperatorDef& g = meta.ops[0];
    EXPECT_EQ(g.type(), "Conv2DGradient");
    EXPECT_EQ(std::vector<std::string>(g.input().begin(), g.input().end()),
              (std::vector<std::string>{"X", "W", "Y_grad"}));
    EXPECT_EQ(std::vector<std::string>(g.output().begin(), g.output().end()), r.outputs);
    ArgumentHelper ga(g);
    EXPECT_EQ(ga.GetSingleArgument<int>("no_bias", 0), r.no_bias_arg ? 1 : 0);
    EXPECT_EQ(ga.GetSingleArgument<int>("kernel", 0), 3);  // forward args copied
    EXPECT_TRUE(g.is_gradient_op());
    EXPECT_EQ(meta.g_input[0].dense, r.to_input ? "X_grad" : "");
  }
}

TEST(ConvOpTest, GradientWithoutDXMatchesFull) {
  ConvCase c{2, 4, 6, 7, 4, 3, 3};
  c.group = 2;
  c.pt = c.pl = c.pb = c.pr = 1;
  for (bool nhwc : {false, true}) {
    c.nhwc = nhwc;
    auto in = c.Inputs(70);
    Workspace fwd;
    RunOp(c.Def(), in, &fwd);
    std::map<std::string, Tensor> gin{
        {"X", in["X"]}, {"W", in["W"]}, {"dY", RandomTensor(c.YDims(), 71)}};
    auto args = c.Def().arg();
    std::vector<Argument> a(args.begin(), args.end());
    auto full = MakeOperatorDef("ConvGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"}, a);
    auto no_dx = MakeOperatorDef("ConvGradient", "", {"X", "W", "dY"}, {"dW", "db"}, a);
    std::vector<Argument> nb = a;
    nb.push_back(MakeArgument("no_bias", 1));
    auto no_bias = MakeOperatorDef("ConvGradient", "", {"X", "W", "dY"}, {"dW", "dX"}, nb);
    Workspace w1, w2, w3;
    RunOp(full, gin, &w1);
    RunOp(no_dx, gin, &w2);
    RunOp(no_bias, gin, &w3);
    EXPECT_FALSE(w2.HasBlob("dX"));
    ExpectNear(ToFloatVector(w2.GetTensor("dW")), ToFloatVector(w1.GetTensor("dW")), 0, 0);
    ExpectNear(ToFloatVector(w2.GetTensor("db")), ToFloatVector(w1.GetTensor("db")), 0, 0);
    ExpectNear(ToFloatVector(w3.GetTensor("dW")), ToFloatVector(w1.GetTensor("dW")), 0, 0);
    ExpectNear(ToFloatVector(w3.GetTensor("dX")), ToFloatVector(w1.GetTensor("dX")), 0, 0);
    EXPECT_EQ(w3.GetTensor("dX").dims(), c.XDims());
  }
}

TEST(ConvOpTest, Fp16MatchesFp32) {
  for (bool nhwc : {false, true}) {
    ConvCase c{2, 4, 7, 9, 4, 3, 3};
    c.group = 2;
    c.sh = c.sw = 2;
    c.pt = 1, c.pl = 1, c.pb = 0, c.pr = 2;
    c.nhwc = nhwc;
    auto in = c.Inputs(90);
    // Sums of 18 products of values in [-1, 1]: allow a few FP16 ulps at magnitude ~4.
    CheckFp16MatchesFp32(c.Def(), in, {"X", "W", "b"}, {0}, 4e-3f, 2e-3f);
    auto args = c.Def().arg();
    auto gdef = MakeOperatorDef("ConvGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"},
                                std::vector<Argument>(args.begin(), args.end()));
    CheckFp16MatchesFp32(gdef,
                         {{"X", in["X"]}, {"W", in["W"]}, {"dY", RandomTensor(c.YDims(), 91)}},
                         {"X", "W", "dY"}, {0, 1, 2}, 1e-2f, 4e-3f);
  }
}

// Runs `def` on the inputs and expects an EnforceNotMet whose message contains `needle`.
OperatorDef ConvDef(std::vector<Argument> args, std::vector<std::string> inputs = {"X", "W"}) {
  return MakeOperatorDef("Conv", "c1", inputs, {"Y"}, std::move(args));
}

TEST(ConvOpTest, BadArguments) {
  std::map<std::string, Tensor> in{{"X", RandomTensor({2, 4, 7, 9}, 1)},
                                   {"W", RandomTensor({6, 4, 3, 3}, 2)},
                                   {"b", RandomTensor({6}, 3)}};
  // Filter spatial dims vs kernel argument.
  ExpectError(ConvDef({MakeArgument("kernel", 5)}), in, "does not match the kernel [5, 5]");
  ExpectError(ConvDef({MakeArgument("kernel", 3)}),
              {{"X", in["X"]}, {"W", RandomTensor({6, 4, 3}, 2)}}, "filter must have 4 dims");
  ExpectError(ConvDef({MakeArgument("kernel", 3), MakeArgument("order", "NCWH")}), in,
              "Conv 'c1': unknown order 'NCWH'");
  ExpectError(ConvDef({MakeArgument("kernel", 3), MakeArgument("group", 3)}), in,
              "C = 4 channels, which is not divisible by group 3");
  ExpectError(ConvDef({MakeArgument("kernel", 3), MakeArgument("group", 4)}),
              {{"X", in["X"]}, {"W", RandomTensor({6, 1, 3, 3}, 2)}},
              "M = 6 output channels, which is not divisible by group 4");
  ExpectError(ConvDef({MakeArgument("kernel", 3), MakeArgument("group", 2)}), in,
              "has 4 input channels per group, but X has C = 4 and group 2 (expected 2)");
  ExpectError(ConvDef({MakeArgument("kernel", 3)}, {"X", "W", "b"}),
              {{"X", in["X"]}, {"W", in["W"]}, {"b", RandomTensor({5}, 3)}},
              "bias must have dims [6]");
  ExpectError(ConvDef({}), in, "kernel size is required");
  ExpectError(ConvDef({MakeArgument("kernel", 0)}), in, "kernel sizes must be > 0");
  // Negative pads are rejected naming the argument and the value (older argument readers
  // reject the negative integer itself, newer ones leave it to the "pads must be >= 0" check).
  ExpectError(ConvDef({MakeArgument("kernel", 3), MakeArgument("pad", -1)}), in, "pad");
  ExpectError(ConvDef({MakeArgument("kernel", 3), MakeArgument("pad", -1)}), in, "-1");
  ExpectError(ConvDef({MakeArgument("kernel", 3), MakeArgument("stride", 0)}), in,
              "strides must be > 0");
  ExpectError(ConvDef({MakeArgument("kernel", 3), MakeArgument("dilation", 4)}), in,
              "smaller than the dilated kernel 9");
  ExpectError(
      ConvDef({MakeArgument("kernel", 3), MakeArgument("dilation", 2), MakeArgument("group", 2)}),
      in, "dilation must be 1 when group != 1");
  ExpectError(
      ConvDef({MakeArgument("kernel", 3), MakeArgument("kernels", std::vector<int64_t>{3, 3})}), in,
      "give only one of 'kernels', 'kernel' or kernel_h/kernel_w");
  ExpectError(ConvDef({MakeArgument("kernel_h", 3)}), in, "must be given together");
  ExpectError(
      ConvDef({MakeArgument("kernel", 3), MakeArgument("pad_t", 1), MakeArgument("pad_b", 1)}), in,
      "pad_t/pad_l/pad_b/pad_r must be given together");
  ExpectError(
      ConvDef({MakeArgument("kernel", 3), MakeArgument("legacy_pad", 2), MakeArgument("pad", 1)}),
      in, "do not also give pad");
  ExpectError(ConvDef({MakeArgument("kernel", 3), MakeArgument("legacy_pad", 7)}), in,
              "legacy_pad must be 0");
  ExpectError(ConvDef({MakeArgument("kernels", std::vector<int64_t>{3, 3, 3})}), in,
              "X must have 5 dims (N, C, spatial...) for a 3-D window");
  ExpectError(ConvDef({MakeArgument("kernel", 3)}),
              {{"X", RandomTensor({2, 4, 7}, 1)}, {"W", in["W"]}}, "X must have 4 dims");
  ExpectError(ConvDef({MakeArgument("kernel", 3)}),
              {{"X", IntTensor({1, 1, 3, 3}, std::vector<int32_t>(9, 1))},
               {"W", RandomTensor({1, 1, 3, 3}, 2)}},
              "float, float16 or bfloat16");
  // dY shape checked by the gradient op.
  auto gdef = MakeOperatorDef("ConvGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"},
                              {MakeArgument("kernel", 3)});
  ExpectError(gdef, {{"X", in["X"]}, {"W", in["W"]}, {"dY", RandomTensor({2, 6, 5, 6}, 4)}},
              "dY has dims [2, 6, 5, 6]");
  auto gbad =
      MakeOperatorDef("ConvGradient", "", {"X", "W", "dY"}, {"dW"}, {MakeArgument("kernel", 3)});
  ExpectError(gbad, {{"X", in["X"]}, {"W", in["W"]}, {"dY", RandomTensor({2, 6, 5, 7}, 4)}},
              "set no_bias=1");
}

TEST(ConvOpTest, LegacyPaddingSame) {
  // SAME with stride 2 on 7x9: out = ceil(in / 2) = 4x5; pads (1, 1) and (1, 1).
  ConvCase c{2, 3, 7, 9, 2, 3, 3};
  c.sh = c.sw = 2;
  c.pt = c.pl = c.pb = c.pr = 1;
  auto in = c.Inputs(12);
  auto def = MakeOperatorDef(
      "Conv", "", {"X", "W", "b"}, {"Y"},
      {MakeArgument("kernel", 3), MakeArgument("stride", 2), MakeArgument("legacy_pad", 2)});
  Workspace ws;
  RunOp(def, in, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{2, 2, 4, 5}));
  ExpectNear(ToFloatVector(ws.GetTensor("Y")), c.Naive(in), 1e-5f, 1e-5f);
}

TEST(ConvPoolArgsTest, ComputeSizeAndPad) {
  int64_t h, t;
  // NOTSET.
  h = 1, t = 2;
  EXPECT_EQ(ComputeSizeAndPad(7, 3, 2, 1, LegacyPadding::NOTSET, &h, &t), 4);
  EXPECT_EQ(h, 1);
  EXPECT_EQ(t, 2);
  // VALID ignores pads; dilation 2 makes the kernel span 5.
  h = 3, t = 3;
  EXPECT_EQ(ComputeSizeAndPad(7, 3, 2, 2, LegacyPadding::VALID, &h, &t), 2);
  EXPECT_EQ(h + t, 0);
  // SAME: odd padding puts the extra pixel at the tail; no negative padding.
  EXPECT_EQ(ComputeSizeAndPad(7, 3, 2, 1, LegacyPadding::SAME, &h, &t), 4);
  EXPECT_EQ(h, 1);
  EXPECT_EQ(t, 1);
  EXPECT_EQ(ComputeSizeAndPad(8, 3, 2, 1, LegacyPadding::SAME, &h, &t), 4);
  EXPECT_EQ(h, 0);
  EXPECT_EQ(t, 1);
  EXPECT_EQ(ComputeSizeAndPad(8, 1, 3, 1, LegacyPadding::SAME, &h, &t), 3);
  EXPECT_EQ(h + t, 0);
  // CAFFE_LEGACY_POOLING rounds up, the tail grows to fit.
  h = 0;
  EXPECT_EQ(ComputeSizeAndPad(6, 3, 2, 1, LegacyPadding::CAFFE_LEGACY_POOLING, &h, &t), 3);
  EXPECT_EQ(t, 2);
  h = 1;
  EXPECT_EQ(ComputeSizeAndPad(6, 3, 2, 1, LegacyPadding::CAFFE_LEGACY_POOLING, &h, &t), 4);
  EXPECT_EQ(t, 3);
  // ... but a last window starting in the padding is dropped.
  h = 1;
  EXPECT_EQ(ComputeSizeAndPad(5, 2, 2, 1, LegacyPadding::CAFFE_LEGACY_POOLING, &h, &t), 3);
  EXPECT_EQ(t, 1);
  h = 0, t = 0;
  EXPECT_THROW(ComputeSizeAndPad(4, 3, 1, 2, LegacyPadding::NOTSET, &h, &t), EnforceNotMet);
}

TEST(ConvPoolArgsTest, WithLeadingUnitDims) {
  ConvPoolGeometry g;
  g.N = 2, g.C = 3;
  g.in = {11}, g.kernel = {3}, g.stride = {2}, g.dilation = {2}, g.pads = {1, 2}, g.out = {5};
  const ConvPoolGeometry one = WithLeadingUnitDims(g, 1);
  EXPECT_EQ(one.in, (std::vector<int64_t>{1, 11}));
  EXPECT_EQ(one.kernel, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(one.stride, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(one.dilation, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(one.out, (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(one.pads, (std::vector<int64_t>{0, 1, 0, 2}));
  EXPECT_EQ(one.N, 2);
  EXPECT_EQ(one.C, 3);
  EXPECT_EQ(WithLeadingUnitDims(g, 2).pads, (std::vector<int64_t>{0, 0, 1, 0, 0, 2}));
  EXPECT_EQ(WithLeadingUnitDims(g, 2).out_size(), 5);
}

TEST(ConvOpTest, SchemaInfersShapeAndCost) {
  ConvCase c{2, 4, 7, 9, 6, 3, 2};
  c.group = 2;
  c.sh = c.sw = 2;
  c.pt = 1, c.pl = 0, c.pb = 2, c.pr = 1;
  for (bool nhwc : {false, true}) {
    c.nhwc = nhwc;
    auto def = c.Def();
    const OpSchema* s = OpSchemaRegistry::Schema("Conv");
    ASSERT_NE(s, nullptr);
    std::vector<TensorShape> in{
        {c.XDims(), DataType::FLOAT16}, {c.WDims(), DataType::FLOAT16}, {{c.M}, DataType::FLOAT16}};
    auto out = s->InferShapes(def, in);
    EXPECT_EQ(out[0].dims, c.YDims());
    EXPECT_EQ(out[0].dtype, DataType::FLOAT16);
    EXPECT_DOUBLE_EQ(s->InferCost(def, in).flops,
                     2.0 * c.N * c.M * c.OutH() * c.OutW() * (c.C / c.group) * c.kh * c.kw);
    const OpSchema* gs = OpSchemaRegistry::Schema("ConvGradient");
    ASSERT_NE(gs, nullptr);
    auto gdef = MakeOperatorDef("ConvGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"},
                                std::vector<Argument>(def.arg().begin(), def.arg().end()));
    auto gout = gs->InferShapes(gdef, {in[0], in[1], {c.YDims(), DataType::FLOAT16}});
    EXPECT_EQ(gout[0].dims, c.WDims());
    EXPECT_EQ(gout[1].dims, (std::vector<int64_t>{c.M}));
    EXPECT_EQ(gout[2].dims, c.XDims());
  }
  EXPECT_NE(OpSchemaRegistry::Schema("Conv2D"), nullptr);
  EXPECT_NE(OpSchemaRegistry::Schema("Conv2DGradient"), nullptr);
}

// ---- 1-D and 3-D (N-d NCHW) convolution ------------------------------------------------------

struct NdCase : ConvNdShape {
  std::string type = "Conv";

  OperatorDef Def() const { return ConvOpDef(type, bias, Args()); }
  OperatorDef GradientDef() const { return ConvGradientOpDef(type, bias, true, Args()); }
  std::map<std::string, Tensor> Inputs(uint32_t seed) const {
    return ConvOpInputs(XDims(), WDims(), M, bias, seed);
  }
  std::vector<float> Naive(const std::map<std::string, Tensor>& in) const {
    return Direct(in.at("X").data<float>(), in.at("W").data<float>(),
                  bias ? in.at("b").data<float>() : nullptr);
  }
};

// Odd 1-D and 3-D shapes: asymmetric pads, strides, groups, dilation, pointwise, no bias.
std::vector<NdCase> NdForwardCases() {
  std::vector<NdCase> cases;
  NdCase c1{{2, 3, 4, {11}, {3}, {2}, {}, {1, 2}}};
  c1.type = "Conv1D";
  cases.push_back(c1);
  NdCase g1{{2, 4, 6, {9}, {3}, {}, {}, {1, 0}, 2}};
  cases.push_back(g1);
  NdCase d1{{2, 3, 2, {13}, {3}, {1}, {3}, {2, 1}}};
  d1.bias = false;
  cases.push_back(d1);
  cases.push_back(NdCase{{2, 3, 5, {7}, {1}}});  // pointwise: no im2col
  NdCase c3{{2, 3, 2, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {}, {1, 1, 0, 0, 1, 1}}};
  c3.type = "Conv3D";
  cases.push_back(c3);
  NdCase g3{{2, 4, 4, {5, 4, 3}, {3, 1, 2}, {2, 1, 1}, {}, {1, 0, 1, 1, 0, 0}, 2}};
  cases.push_back(g3);
  NdCase d3{{1, 3, 2, {6, 5, 7}, {2, 2, 2}, {}, {2, 1, 3}, {1, 0, 1, 0, 1, 1}}};
  d3.bias = false;
  cases.push_back(d3);
  cases.push_back(NdCase{{2, 3, 4, {4, 5, 3}, {1, 1, 1}}});  // pointwise
  NdCase s3{{2, 3, 4, {4, 5, 3}, {1, 1, 1}, {2, 2, 1}}};  // 1x1x1, strided: im2col
  cases.push_back(s3);
  // 4 spatial dims: the generic path has no rank limit.
  cases.push_back(NdCase{{1, 2, 3, {3, 4, 3, 5}, {2, 1, 2, 3}, {1, 2, 1, 1}, {}, {0, 1, 0, 1, 1, 0, 1, 0}}});
  return cases;
}

// Runs `def` through the default CPU implementation (engine ""), whatever CreateOperator prefers
// (the DNNL engine in builds with oneDNN).
void RunDefaultEngine(const OperatorDef& def, const std::map<std::string, Tensor>& in,
                      Workspace* ws) {
  for (const auto& kv : in) SetInput(ws, kv.first, kv.second);
  const OperatorCreator* creator = OperatorRegistry::Find(DeviceType::CPU, def.type(), "");
  ASSERT_NE(creator, nullptr) << def.type();
  (*creator)(def, ws)->Run(0);
}

TEST(ConvNdOpTest, ForwardMatchesDirect) {
  uint32_t seed = 200;
  for (const NdCase& c : NdForwardCases()) {
    SCOPED_TRACE(::testing::Message() << c.type << " " << DimsString(c.XDims()) << " filter "
                                      << DimsString(c.WDims()) << " seed " << seed);
    auto in = c.Inputs(seed);
    Workspace ws, def_ws;
    RunOp(c.Def(), in, &ws);  // the preferred engine
    RunDefaultEngine(c.Def(), in, &def_ws);
    for (Workspace* w : {&ws, &def_ws}) {
      const Tensor& y = w->GetTensor("Y");
      EXPECT_EQ(y.dims(), c.YDims());
      ExpectNear(ToFloatVector(y), c.Naive(in), 1e-5f, 1e-5f);
    }
    seed += 3;
  }
}

// ConvGradient (default engine and the preferred one) against gradients computed tap by tap.
TEST(ConvNdOpTest, GradientOpMatchesDirect) {
  uint32_t seed = 250;
  for (const NdCase& c : NdForwardCases()) {
    SCOPED_TRACE(::testing::Message() << c.type << " " << DimsString(c.XDims()) << " filter "
                                      << DimsString(c.WDims()) << " seed " << seed);
    auto in = c.Inputs(seed);
    in["dY"] = RandomTensor(c.YDims(), seed + 5);
    std::vector<float> dw, db, dx;
    c.DirectGradients(in["X"].data<float>(), in["W"].data<float>(), in["dY"].data<float>(), &dw,
                      &db, &dx);
    const OperatorDef g = c.GradientDef();
    Workspace ws, def_ws;
    RunOp(g, in, &ws);
    RunDefaultEngine(g, in, &def_ws);
    for (Workspace* w : {&ws, &def_ws}) {
      ExpectNear(ToFloatVector(w->GetTensor("dW")), dw, 1e-4f, 1e-4f, "dW");
      ExpectNear(ToFloatVector(w->GetTensor("dX")), dx, 1e-4f, 1e-4f, "dX");
      if (c.bias) ExpectNear(ToFloatVector(w->GetTensor("db")), db, 1e-4f, 1e-4f, "db");
    }
    seed += 7;
  }
}

// The generic N-d im2col / col2im agree with the 2-D ones on a 2-D geometry.
TEST(ConvNdOpTest, NdIm2ColMatches2D) {
  const Im2ColShape s2{5, 7, 3, 2, 2, 1, 1, 0, 2, 1, 3, 7};  // pads: t 1, l 0; b 1, r 1
  const Im2ColNdShape sn{{5, 7}, {3, 2}, {2, 1}, {1, 0}, {2, 1}, {3, 7}};
  const int64_t C = 3, rows = C * 3 * 2, cols = 3 * 7;
  Tensor image = RandomTensor({C, 5, 7}, 5);
  std::vector<float> col2(rows * cols, -1.f), coln(rows * cols, -2.f);
  Im2ColNCHW(s2, C, image.data<float>(), col2.data());
  Im2ColNdNCHW(sn, C, image.data<float>(), coln.data());
  ExpectNear(coln, col2, 0, 0, "im2col");
  Tensor dcol = RandomTensor({rows, cols}, 6);
  std::vector<float> img2(C * 35, 0.5f), imgn(C * 35, 0.5f);
  Col2ImNCHW(s2, C, dcol.data<float>(), img2.data());
  Col2ImNdNCHW(sn, C, dcol.data<float>(), imgn.data());
  ExpectNear(imgn, img2, 1e-6f, 1e-6f, "col2im");
}

TEST(ConvNdOpTest, Gradients) {
  std::vector<NdCase> cases;
  cases.push_back(NdCase{{2, 3, 2, {9}, {3}, {2}, {}, {1, 2}}});
  NdCase g1{{2, 4, 2, {7}, {2}, {}, {}, {0, 1}, 2}};
  cases.push_back(g1);
  NdCase d1{{2, 3, 2, {9}, {3}, {}, {2}, {1, 1}}};
  d1.bias = false;
  cases.push_back(d1);
  cases.push_back(NdCase{{2, 3, 2, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {}, {1, 1, 0, 0, 1, 1}}});
  cases.push_back(NdCase{{2, 4, 2, {4, 5, 3}, {2, 1, 2}, {}, {}, {0, 1, 1, 1, 0, 0}, 2}});
  NdCase d3{{1, 3, 2, {5, 5, 3}, {2, 2, 2}, {}, {2, 1, 1}, {0, 1, 0, 1, 0, 1}}};
  d3.bias = false;
  cases.push_back(d3);
  GradientCheckOptions opts;
  opts.max_elements = 120;
  GradientChecker checker(opts);
  uint32_t seed = 300;
  for (const NdCase& c : cases) {
    SCOPED_TRACE(::testing::Message() << DimsString(c.XDims()) << " filter "
                                      << DimsString(c.WDims()) << " seed " << seed);
    auto def = c.Def();
    auto in = c.Inputs(seed);
    for (int i = 0; i < def.input_size(); ++i) checker.Check(def, in, i, 0);
    seed += 3;
  }
}

TEST(ConvNdOpTest, GradientMakerUsesAliasNames) {
  for (const char* type : {"Conv1D", "Conv3D"}) {
    auto def = MakeOperatorDef(type, "", {"X", "W", "b"}, {"Y"},
                               {MakeArgument("kernels", std::vector<int64_t>{3})});
    GradientOpsMeta meta = GetGradientForOp(def, {GradientWrapper{"Y_grad", "", ""}});
    ASSERT_EQ(meta.ops.size(), 1u);
    EXPECT_EQ(meta.ops[0].type(), std::string(type) + "Gradient");
    EXPECT_EQ(std::vector<std::string>(meta.ops[0].output().begin(), meta.ops[0].output().end()),
              (std::vector<std::string>{"W_grad", "b_grad", "X_grad"}));
  }
}

TEST(ConvNdOpTest, Fp16MatchesFp32) {
  NdCase c1{{2, 4, 4, {11}, {3}, {2}, {}, {1, 0}, 2}};
  NdCase c3{{2, 3, 4, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {}, {1, 1, 0, 0, 1, 1}}};
  for (const NdCase& c : {c1, c3}) {
    SCOPED_TRACE(DimsString(c.XDims()));
    auto in = c.Inputs(90);
    CheckFp16MatchesFp32(c.Def(), in, {"X", "W", "b"}, {0}, 4e-3f, 2e-3f);
    CheckFp16MatchesFp32(c.GradientDef(),
                         {{"X", in["X"]}, {"W", in["W"]}, {"dY", RandomTensor(c.YDims(), 91)}},
                         {"X", "W", "dY"}, {0, 1, 2}, 1e-2f, 4e-3f);
  }
}

TEST(ConvNdOpTest, GradientWithoutBiasOrDX) {
  NdCase c{{2, 3, 4, {4, 5, 3}, {2, 2, 2}, {}, {}, {1, 0, 1, 0, 1, 0}}};
  auto in = c.Inputs(70);
  in["dY"] = RandomTensor(c.YDims(), 71);
  const std::vector<Argument> a = c.Args();
  Workspace full, no_dx;
  RunOp(MakeOperatorDef("Conv3DGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"}, a), in, &full);
  RunOp(MakeOperatorDef("Conv3DGradient", "", {"X", "W", "dY"}, {"dW", "db"}, a), in, &no_dx);
  EXPECT_FALSE(no_dx.HasBlob("dX"));
  EXPECT_EQ(full.GetTensor("dX").dims(), c.XDims());
  EXPECT_EQ(full.GetTensor("db").dims(), (std::vector<int64_t>{c.M}));
  ExpectNear(ToFloatVector(no_dx.GetTensor("dW")), ToFloatVector(full.GetTensor("dW")), 0, 0);
  // db is the per-channel sum of dY.
  const float* dy = in["dY"].data<float>();
  const int64_t P = Product(c.OutSizes());
  std::vector<float> db(c.M, 0.f);
  for (int64_t n = 0; n < c.N; ++n) {
    for (int64_t m = 0; m < c.M; ++m) {
      double acc = 0;
      for (int64_t p = 0; p < P; ++p) acc += dy[(n * c.M + m) * P + p];
      db[m] += static_cast<float>(acc);
    }
  }
  ExpectNear(ToFloatVector(full.GetTensor("db")), db, 1e-5f, 1e-5f);
}

TEST(ConvNdOpTest, SchemaInfersShapeAndCostForAliases) {
  NdCase c1{{2, 4, 6, {11}, {3}, {2}, {}, {1, 2}, 2}};
  NdCase c3{{2, 3, 2, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {}, {1, 1, 0, 0, 1, 1}}};
  const std::vector<std::pair<std::string, NdCase>> cases{
      {"Conv1D", c1}, {"Conv3D", c3}, {"Conv", c3}};
  for (const auto& [type, c] : cases) {
    SCOPED_TRACE(type);
    const OpSchema* s = OpSchemaRegistry::Schema(type);
    ASSERT_NE(s, nullptr);
    NdCase t = c;
    t.type = type;
    std::vector<TensorShape> in{
        {c.XDims(), DataType::FLOAT16}, {c.WDims(), DataType::FLOAT16}, {{c.M}, DataType::FLOAT16}};
    auto out = s->InferShapes(t.Def(), in);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dims, c.YDims());
    EXPECT_EQ(out[0].dtype, DataType::FLOAT16);
    EXPECT_DOUBLE_EQ(s->InferCost(t.Def(), in).flops, 2.0 * c.N * c.M * Product(c.OutSizes()) *
                                                          (c.C / c.group) * Product(c.kernel));
    const OpSchema* gs = OpSchemaRegistry::Schema(type + "Gradient");
    ASSERT_NE(gs, nullptr);
    auto gout = gs->InferShapes(t.GradientDef(), {in[0], in[1], {c.YDims(), DataType::FLOAT16}});
    ASSERT_EQ(gout.size(), 3u);
    EXPECT_EQ(gout[0].dims, c.WDims());
    EXPECT_EQ(gout[1].dims, (std::vector<int64_t>{c.M}));
    EXPECT_EQ(gout[2].dims, c.XDims());
    // Shape inference rejects an X of the wrong rank for the kernel.
    EXPECT_THROW(s->InferShapes(t.Def(), {{{2, 3, 4, 5}, DataType::FLOAT}, in[1], in[2]}),
                 EnforceNotMet);
  }
}

// Like Caffe2, the aliases do not check the kernel's rank: Conv3D with a 1-D kernel is Conv.
TEST(ConvNdOpTest, AliasesDoNotCheckRank) {
  NdCase c{{2, 3, 4, {11}, {3}, {2}, {}, {1, 2}}};
  auto in = c.Inputs(17);
  for (const char* type : {"Conv1D", "Conv2D", "Conv3D"}) {
    NdCase t = c;
    t.type = type;
    Workspace ws;
    RunOp(t.Def(), in, &ws);
    ExpectNear(ToFloatVector(ws.GetTensor("Y")), c.Naive(in), 1e-5f, 1e-5f, type);
  }
}

TEST(ConvNdOpTest, Errors) {
  NdCase c{{2, 3, 4, {4, 5, 3}, {2, 3, 2}}};
  auto in = c.Inputs(3);
  // NHWC is 2-D only, for the forward and the gradient op.
  const std::vector<Argument> nhwc{MakeArgument("kernels", c.kernel),
                                   MakeArgument("order", std::string("NHWC"))};
  ExpectError(MakeOperatorDef("Conv3D", "c3", {"X", "W", "b"}, {"Y"}, nhwc), in,
              "Conv3D 'c3': NHWC order supports only 2-D convolution, got a 3-D kernel [2, 3, 2]");
  ExpectError(MakeOperatorDef("ConvGradient", "g", {"X", "W", "dY"}, {"dW", "db"}, nhwc),
              {{"X", in["X"]}, {"W", in["W"]}, {"dY", RandomTensor(c.YDims(), 4)}},
              "NHWC order supports only 2-D convolution");
  // Kernel (dilated) larger than the input.
  NdCase big = c;
  big.kernel = {2, 6, 2};
  ExpectError(big.Def(), big.Inputs(5),
              "spatial dim 1: input size 5 plus pads 0 + 0 is smaller than the dilated kernel 6");
  NdCase dil{{2, 3, 4, {9}, {3}, {}, {5}}};
  ExpectError(dil.Def(), dil.Inputs(6), "smaller than the dilated kernel 11");
  // Filter rank and spatial dims against the kernel.
  ExpectError(c.Def(), {{"X", in["X"]}, {"W", RandomTensor({4, 3, 2, 3}, 7)}, {"b", in["b"]}},
              "filter must have 5 dims (M, C/group, kernel...)");
  ExpectError(c.Def(), {{"X", in["X"]}, {"W", RandomTensor({4, 3, 2, 2, 2}, 7)}, {"b", in["b"]}},
              "does not match the kernel [2, 3, 2]");
  // X rank against the kernel.
  ExpectError(c.Def(), {{"X", RandomTensor({2, 3, 4, 5}, 8)}, {"W", in["W"]}, {"b", in["b"]}},
              "X must have 5 dims (N, C, spatial...) for a 3-D window");
  // Strides / pads with the wrong number of entries.
  NdCase bad_stride = c;
  bad_stride.stride = {1, 1};
  ExpectError(bad_stride.Def(), in, "must have one entry per kernel dim (3)");
  NdCase bad_pads = c;
  bad_pads.pads = {1, 1, 1, 1};
  ExpectError(bad_pads.Def(), in, "must have 2 entries per kernel dim (6");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
