#include <gtest/gtest.h>

#include "operators/conv_pool_op_base.h"
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
    std::vector<std::string> inputs{"X", "W"};
    if (bias) inputs.push_back("b");
    return MakeOperatorDef(type, "conv", inputs, {"Y"},
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
    std::map<std::string, Tensor> in{{"X", RandomTensor(XDims(), seed)},
                                     {"W", RandomTensor(WDims(), seed + 1)}};
    if (bias) in["b"] = RandomTensor({M}, seed + 2);
    return in;
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
              "only 2-D convolution is implemented");
  ExpectError(ConvDef({MakeArgument("kernel", 3)}),
              {{"X", RandomTensor({2, 4, 7}, 1)}, {"W", in["W"]}}, "X must have 4 dims");
  ExpectError(ConvDef({MakeArgument("kernel", 3)}),
              {{"X", IntTensor({1, 1, 3, 3}, std::vector<int32_t>(9, 1))},
               {"W", RandomTensor({1, 1, 3, 3}, 2)}},
              "float or float16");
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

}  // namespace
}  // namespace testing
}  // namespace halfcaf
