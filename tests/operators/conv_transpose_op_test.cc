#include <gtest/gtest.h>

#include "core/gradient.h"
#include "tests/util/conv_case.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

std::vector<int64_t> Cat(std::vector<int64_t> head, const std::vector<int64_t>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

// One transposed convolution: X (N, M, in...) -> Y (N, C, out...), NCHW or (2-D) NHWC.
struct CtCase {
  int64_t N, M, C;
  std::vector<int64_t> in, kernel;
  std::vector<int64_t> stride = {}, dilation = {}, pads = {}, adj = {};
  int64_t group = 1;
  bool nhwc = false;
  bool bias = true;

  int nd() const { return static_cast<int>(in.size()); }
  int64_t S(int d) const { return stride.empty() ? 1 : stride[d]; }
  int64_t D(int d) const { return dilation.empty() ? 1 : dilation[d]; }
  int64_t Head(int d) const { return pads.empty() ? 0 : pads[d]; }
  int64_t Tail(int d) const { return pads.empty() ? 0 : pads[nd() + d]; }
  int64_t Adj(int d) const { return adj.empty() ? 0 : adj[d]; }
  int64_t Out(int d) const {
    return (in[d] - 1) * S(d) + D(d) * (kernel[d] - 1) + 1 + Adj(d) - Head(d) - Tail(d);
  }
  std::vector<int64_t> OutSizes() const {
    std::vector<int64_t> o;
    for (int d = 0; d < nd(); ++d) o.push_back(Out(d));
    return o;
  }
  std::vector<int64_t> Layout(int64_t n, int64_t c, const std::vector<int64_t>& sp) const {
    return nhwc ? Cat(Cat({n}, sp), {c}) : Cat({n, c}, sp);
  }
  std::vector<int64_t> XDims() const { return Layout(N, M, in); }
  std::vector<int64_t> YDims() const { return Layout(N, C, OutSizes()); }
  std::vector<int64_t> WDims() const {
    return nhwc ? Cat(Cat({M}, kernel), {C / group}) : Cat({M, C / group}, kernel);
  }
  // Flat index of (n, channel c of `channels`, spatial p of `P`) in this layout.
  int64_t Index(int64_t n, int64_t c, int64_t channels, int64_t p, int64_t P) const {
    return nhwc ? (n * P + p) * channels + c : (n * channels + c) * P + p;
  }
  int64_t WIndex(int64_t m, int64_t cg, int64_t t) const {
    const int64_t T = Product(kernel), Cg = C / group;
    return nhwc ? (m * T + t) * Cg + cg : (m * Cg + cg) * T + t;
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
  OperatorDef Def(const std::string& type = "ConvTranspose") const {
    return MakeOperatorDef(
        type, "",
        bias ? std::vector<std::string>{"X", "W", "b"} : std::vector<std::string>{"X", "W"}, {"Y"},
        Args());
  }
  std::map<std::string, Tensor> Inputs(uint32_t seed) const {
    std::map<std::string, Tensor> in{{"X", RandomTensor(XDims(), seed)},
                                     {"W", RandomTensor(WDims(), seed + 1)}};
    if (bias) in["b"] = RandomTensor({C}, seed + 2);
    return in;
  }

  // Calls f(x index, w index, y index) for every tap that lands inside Y.
  template <typename F>
  void ForEachTap(F&& f) const {
    const std::vector<int64_t> out = OutSizes();
    const int64_t P = Product(in), Q = Product(out), T = Product(kernel);
    const int64_t Mg = M / group, Cg = C / group;
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t m = 0; m < M; ++m) {
        const int64_t gr = m / Mg;
        for (int64_t p = 0; p < P; ++p) {
          const std::vector<int64_t> xi = Unravel(p, in);
          for (int64_t t = 0; t < T; ++t) {
            const std::vector<int64_t> ki = Unravel(t, kernel);
            std::vector<int64_t> yi(nd());
            bool inside = true;
            for (int d = 0; d < nd(); ++d) {
              yi[d] = xi[d] * S(d) - Head(d) + ki[d] * D(d);
              inside = inside && yi[d] >= 0 && yi[d] < out[d];
            }
            if (!inside) continue;
            for (int64_t cg = 0; cg < Cg; ++cg) {
              f(Index(n, m, M, p, P), WIndex(m, cg, t),
                Index(n, gr * Cg + cg, C, Ravel(yi, out), Q));
            }
          }
        }
      }
    }
  }

  std::vector<float> Direct(const std::map<std::string, Tensor>& in) const {
    const float* x = in.at("X").data<float>();
    const float* w = in.at("W").data<float>();
    std::vector<double> y(static_cast<size_t>(Product(YDims())), 0.0);
    ForEachTap([&](int64_t xi, int64_t wi, int64_t yi) { y[yi] += double(x[xi]) * w[wi]; });
    if (bias) {
      const float* b = in.at("b").data<float>();
      const int64_t Q = Product(OutSizes());
      for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {
        y[i] += b[nhwc ? i % C : (i / Q) % C];
      }
    }
    return std::vector<float>(y.begin(), y.end());
  }

  // Gradients of sum(Y * dy), tap by tap.
  void DirectGradients(const std::map<std::string, Tensor>& in, const float* dy,
                       std::vector<float>* dw, std::vector<float>* db,
                       std::vector<float>* dx) const {
    const float* x = in.at("X").data<float>();
    const float* w = in.at("W").data<float>();
    std::vector<double> gw(static_cast<size_t>(Product(WDims())), 0.0),
        gx(static_cast<size_t>(Product(XDims())), 0.0), gb(static_cast<size_t>(C), 0.0);
    ForEachTap([&](int64_t xi, int64_t wi, int64_t yi) {
      gw[wi] += double(dy[yi]) * x[xi];
      gx[xi] += double(dy[yi]) * w[wi];
    });
    const int64_t Q = Product(OutSizes());
    for (int64_t i = 0; i < Product(YDims()); ++i) gb[nhwc ? i % C : (i / Q) % C] += dy[i];
    dw->assign(gw.begin(), gw.end());
    db->assign(gb.begin(), gb.end());
    dx->assign(gx.begin(), gx.end());
  }
};

std::vector<CtCase> Cases() {
  using V = std::vector<int64_t>;
  std::vector<CtCase> cases;
  for (bool nhwc : {false, true}) {
    CtCase a{2, 3, 4, V{3, 5}, V{3, 3}, V{2, 2}, {}, V{1, 1, 1, 1}, V{1, 1}};
    CtCase b{2, 4, 6, V{4, 3}, V{3, 2}, V{2, 3}, {}, V{1, 0, 2, 1}, {}, 2};    // group, asymmetric
    CtCase c{1, 3, 2, V{3, 4}, V{3, 3}, V{1, 2}, V{2, 2}, V{1, 2, 0, 1}, {}};  // dilated
    c.bias = false;
    CtCase d{2, 3, 5, V{5, 3}, V{1, 1}};                                       // pointwise
    CtCase e{1, 2, 3, V{3, 3}, V{2, 3}, V{2, 2}, {}, V{0, 0, 2, 0}, V{2, 1}};  // adj == stride
    for (CtCase* k : {&a, &b, &c, &d, &e}) {
      k->nhwc = nhwc;
      cases.push_back(*k);
    }
  }
  cases.push_back(CtCase{2, 3, 4, V{7}, V{3}, V{2}, {}, V{1, 2}, V{1}});  // 1-D
  cases.push_back(CtCase{1,
                         4,
                         2,
                         V{3, 2, 4},
                         V{2, 3, 2},
                         V{2, 1, 2},
                         {},
                         V{0, 1, 1, 1, 0, 0},
                         V{1, 0, 0},
                         2});  // 3-D, group
  return cases;
}

std::string Name(const CtCase& c) {
  return MakeString(c.nhwc ? "NHWC" : "NCHW", " in ", DimsString(c.in), " kernel ",
                    DimsString(c.kernel), " group ", c.group);
}

TEST(ConvTransposeOpTest, ForwardMatchesDirectLoop) {
  uint32_t seed = 1;
  for (const CtCase& c : Cases()) {
    SCOPED_TRACE(Name(c));
    const auto in = c.Inputs(seed += 3);
    Workspace ws;
    RunOp(c.Def(), in, &ws);
    EXPECT_EQ(ws.GetTensor("Y").dims(), c.YDims());
    ExpectNear(ToFloatVector(ws.GetTensor("Y")), c.Direct(in), 1e-5f, 1e-5f);
    // Shape inference agrees with the run.
    const OperatorDef def = c.Def();
    std::vector<TensorShape> shapes;
    for (const auto& name : def.input()) shapes.push_back(TensorShape{in.at(name).dims()});
    EXPECT_EQ(OpSchemaRegistry::Schema("ConvTranspose")->InferShapes(def, shapes).at(0).dims,
              c.YDims());
  }
}

TEST(ConvTransposeOpTest, HandComputedValues) {
  // 1-D, one channel: x = [1, 2], w = [1, 10, 100], stride 2: windows at 0 and 2 overlap in one
  // element; pads (1, 0) crop the first output element, adj 1 appends a bias-only one.
  CtCase c{1, 1, 1, {2}, {3}, {2}, {}, {1, 0}, {1}};
  const std::map<std::string, Tensor> in{{"X", FloatTensor({1, 1, 2}, {1.f, 2.f})},
                                         {"W", FloatTensor({1, 1, 3}, {1.f, 10.f, 100.f})},
                                         {"b", FloatTensor({1}, {0.5f})}};
  // Full output [1, 10, 100 + 2, 20, 200] -> crop 1 at the start, append 1 -> 5 elements.
  ExpectNear(RunAndGet(c.Def(), in), {10.5f, 102.5f, 20.5f, 200.5f, 0.5f}, 0.f, 0.f);
}

TEST(ConvTransposeOpTest, IsTheAdjointOfConv) {
  // <Conv(z), x> == <z, ConvTranspose(x)> with the same filter and arguments, no bias.
  uint32_t seed = 50;
  for (CtCase c : Cases()) {
    bool adj_below_stride = true;  // else Conv's output is larger than X
    for (int d = 0; d < c.nd(); ++d) adj_below_stride = adj_below_stride && c.Adj(d) < c.S(d);
    if (!adj_below_stride) continue;
    c.bias = false;
    SCOPED_TRACE(Name(c));
    const auto in = c.Inputs(seed += 3);
    const Tensor z = RandomTensor(c.YDims(), seed + 7);
    Workspace ws;
    RunOp(c.Def(), in, &ws);
    RunOp(MakeOperatorDef("Conv", "", {"Z", "W"}, {"CZ"}, c.Args()), {{"Z", z}}, &ws);
    ASSERT_EQ(ws.GetTensor("CZ").dims(), c.XDims());
    auto dot = [](const std::vector<float>& a, const std::vector<float>& b) {
      double s = 0;
      for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
      return s;
    };
    const double lhs = dot(ToFloatVector(ws.GetTensor("CZ")), ToFloatVector(in.at("X")));
    const double rhs = dot(ToFloatVector(z), ToFloatVector(ws.GetTensor("Y")));
    EXPECT_NEAR(lhs, rhs, 1e-4 * std::max(1.0, std::fabs(lhs)));
  }
}

TEST(ConvTransposeOpTest, GradientMatchesDirectLoop) {
  uint32_t seed = 100;
  for (const CtCase& c : Cases()) {
    SCOPED_TRACE(Name(c));
    const auto in = c.Inputs(seed += 3);
    const Tensor dy = RandomTensor(c.YDims(), seed + 9);
    std::vector<float> dw, db, dx;
    c.DirectGradients(in, dy.data<float>(), &dw, &db, &dx);
    Workspace ws;
    SetInput(&ws, "dY", dy);
    RunOp(MakeOperatorDef("ConvTransposeGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"},
                          c.Args()),
          in, &ws);
    ExpectNear(ToFloatVector(ws.GetTensor("dW")), dw, 1e-4f, 1e-5f, "dW");
    ExpectNear(ToFloatVector(ws.GetTensor("db")), db, 1e-4f, 1e-5f, "db");
    ExpectNear(ToFloatVector(ws.GetTensor("dX")), dx, 1e-4f, 1e-5f, "dX");
    // no_bias=1: (dW, dX); and without the dX slot only dW.
    std::vector<Argument> nb = c.Args();
    nb.push_back(MakeArgument("no_bias", 1));
    RunOp(MakeOperatorDef("ConvTransposeGradient", "", {"X", "W", "dY"}, {"dW2", "dX2"}, nb), {},
          &ws);
    ExpectNear(ToFloatVector(ws.GetTensor("dX2")), dx, 1e-4f, 1e-5f, "dX no_bias");
    RunOp(MakeOperatorDef("ConvTransposeGradient", "", {"X", "W", "dY"}, {"dW3"}, nb), {}, &ws);
    ExpectNear(ToFloatVector(ws.GetTensor("dW3")), dw, 1e-4f, 1e-5f, "dW alone");
  }
}

TEST(ConvTransposeOpTest, GradientMatchesFiniteDifferences) {
  uint32_t seed = 200;
  for (const CtCase& c : Cases()) {
    SCOPED_TRACE(Name(c));
    const auto in = c.Inputs(seed += 3);
    GradientCheckOptions opts;
    opts.threshold = 5e-3f;
    for (int input = 0; input < (c.bias ? 3 : 2); ++input) {
      GradientChecker(opts).Check(c.Def(), in, input, 0);
    }
  }
}

TEST(ConvTransposeOpTest, GradientMakerFollowsCaffe2) {
  CtCase c{1, 2, 2, {3, 3}, {3, 3}};
  auto names = [](const google::protobuf::RepeatedPtrField<std::string>& r) {
    return std::vector<std::string>(r.begin(), r.end());
  };
  std::vector<GradientWrapper> g(1);
  g[0].dense = "Y_grad";
  OperatorDef op = GetGradientForOp(c.Def(), g).ops.at(0);
  EXPECT_EQ(op.type(), "ConvTransposeGradient");
  EXPECT_EQ(names(op.input()), (std::vector<std::string>{"X", "W", "Y_grad"}));
  EXPECT_EQ(names(op.output()), (std::vector<std::string>{"W_grad", "b_grad", "X_grad"}));
  c.bias = false;
  op = GetGradientForOp(c.Def(), g).ops.at(0);
  EXPECT_EQ(names(op.output()), (std::vector<std::string>{"W_grad", "X_grad"}));
  ArgumentHelper args(op);
  EXPECT_EQ(args.GetSingleArgument<int>("no_bias", 0), 1);
  OperatorDef no_dx = c.Def();
  *no_dx.add_arg() = MakeArgument("no_gradient_to_input", 1);
  op = GetGradientForOp(no_dx, g).ops.at(0);
  EXPECT_EQ(names(op.output()), (std::vector<std::string>{"W_grad"}));
}

TEST(ConvTransposeOpTest, Fp16MatchesFp32) {
  uint32_t seed = 300;
  for (const CtCase& c : Cases()) {
    SCOPED_TRACE(Name(c));
    auto in = c.Inputs(seed += 3);
    std::vector<std::string> half{"X", "W"};
    if (c.bias) half.push_back("b");
    CheckFp16MatchesFp32(c.Def(), in, half, {0}, 2e-3f, 3e-3f);
    in["dY"] = RandomTensor(c.YDims(), seed + 1);
    half.push_back("dY");
    CheckFp16MatchesFp32(MakeOperatorDef("ConvTransposeGradient", "", {"X", "W", "dY"},
                                         {"dW", "db", "dX"}, c.Args()),
                         in, half, {0, 1, 2}, 3e-3f, 3e-3f);
  }
}

TEST(ConvTransposeOpTest, ArgumentForms) {
  // kernel / stride / pad_t... / adj_h, adj_w spell the same 2-D transposed convolution.
  CtCase c{2, 3, 4, {3, 5}, {3, 3}, {2, 2}, {}, {1, 0, 1, 0}, {1, 0}};
  const auto in = c.Inputs(7);
  const auto def = MakeOperatorDef(
      "ConvTranspose", "", {"X", "W", "b"}, {"Y"},
      {MakeArgument("kernel", 3), MakeArgument("stride", 2), MakeArgument("pad_t", 1),
       MakeArgument("pad_l", 0), MakeArgument("pad_b", 1), MakeArgument("pad_r", 0),
       MakeArgument("adj_h", 1), MakeArgument("adj_w", 0)});
  ExpectNear(RunAndGet(def, in), c.Direct(in), 1e-5f, 1e-5f);
  // legacy_pad VALID and SAME: no pads (Caffe2's rule).
  CtCase nopad{2, 3, 4, {3, 5}, {3, 3}, {2, 2}};
  for (int legacy : {1, 2}) {
    const auto d = MakeOperatorDef(
        "ConvTranspose", "", {"X", "W", "b"}, {"Y"},
        {MakeArgument("kernel", 3), MakeArgument("stride", 2), MakeArgument("legacy_pad", legacy)});
    ExpectNear(RunAndGet(d, in), nopad.Direct(in), 1e-5f, 1e-5f);
  }
}

TEST(ConvTransposeOpTest, BadInputIsOneClearError) {
  CtCase c{1, 2, 4, {3, 3}, {3, 3}, {2, 2}};
  const auto in = c.Inputs(1);
  auto with = [&](std::vector<Argument> extra) {
    std::vector<Argument> a = c.Args();
    a.insert(a.end(), extra.begin(), extra.end());
    return MakeOperatorDef("ConvTranspose", "", {"X", "W", "b"}, {"Y"}, a);
  };
  ExpectError(c.Def(), {{"X", in.at("X")}, {"W", RandomTensor({3, 4, 3, 3}, 2)}, {"b", in.at("b")}},
              "has 3 input channels, but X [1, 2, 3, 3] has M = 2");
  ExpectError(c.Def(), {{"X", in.at("X")}, {"W", RandomTensor({2, 4, 2, 3}, 2)}, {"b", in.at("b")}},
              "does not match the kernel [3, 3]");
  ExpectError(c.Def(), {{"X", in.at("X")}, {"W", in.at("W")}, {"b", RandomTensor({3}, 3)}},
              "bias must have dims [4]");
  ExpectError(with({MakeArgument("adjs", std::vector<int64_t>{3, 0})}), in,
              "must each be in [0, max(stride, dilation)]");
  ExpectError(with({MakeArgument("pads", std::vector<int64_t>{4, 0, 4, 0})}), in, "must be >= 1");
  ExpectError(with({MakeArgument("legacy_pad", 3)}), in, "CAFFE_LEGACY_POOLING");
  ExpectError(MakeOperatorDef("ConvTranspose", "", {"X", "W"}, {"Y"},
                              {MakeArgument("kernels", std::vector<int64_t>{3, 3, 3}),
                               MakeArgument("order", std::string("NHWC"))}),
              {{"X", RandomTensor({1, 3, 3, 3, 2}, 4)}, {"W", RandomTensor({2, 3, 3, 3, 1}, 4)}},
              "NHWC order supports only 2-D");
  ExpectError(c.Def(), {{"X", RandomTensor({1, 2, 3}, 4)}, {"W", in.at("W")}, {"b", in.at("b")}},
              "X must have 4 dims");
  ExpectError(
      MakeOperatorDef("ConvTransposeGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"}, c.Args()),
      {{"X", in.at("X")}, {"W", in.at("W")}, {"dY", RandomTensor({1, 4, 7, 6}, 5)}},
      "dY has dims [1, 4, 7, 6] but the transposed convolution gives Y [1, 4, 7, 7]");
  ExpectError(MakeOperatorDef("ConvTransposeGradient", "", {"X", "W", "dY"}, {"dW"}, c.Args()),
              {{"X", in.at("X")}, {"W", in.at("W")}, {"dY", RandomTensor({1, 4, 7, 7}, 5)}},
              "without no_bias the outputs are (dfilter, dbias[, dX])");
}

// Kernel 2, stride 2: each input element owns one 2x2 block of Y, which a NaN in it fills.
TEST(ConvTransposeOpTest, NaNPropagates) {
  const OperatorDef def =
      MakeOperatorDef("ConvTranspose", "", {"X", "W", "b"}, {"Y"},
                      {MakeArgument("kernel", 2), MakeArgument("stride", 2)});
  const std::map<std::string, Tensor> in{{"X", RandomTensor({1, 1, 2, 2}, 31)},
                                         {"W", RandomTensor({1, 1, 2, 2}, 32)},
                                         {"b", RandomTensor({1}, 33)}};
  ExpectNaNPropagates(def, in, "X", 0, "Y", {0, 1, 4, 5});
  ExpectNaNPropagates(def, in, "X", 3, "Y", {10, 11, 14, 15});
  ExpectNaNPropagates(def, in, "W", 1, "Y", {1, 3, 9, 11});
  ExpectNaNPropagates(def, in, "b", 0, "Y", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
