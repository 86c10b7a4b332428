// SpatialBN with fuse_relu (a Relu fused into the batch normalization,
// operators/nn/spatial_bn_op.h) against SpatialBN then Relu, and its gradient against ReluGradient
// then SpatialBNGradient: bit for bit in NCHW, NHWC and the channel-blocked layouts, training and
// test mode, at every vector width the blocked loops take, NaN and inf included; the errors for
// what it does not take.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/gradient.h"
#include "core/workspace.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"
#include "tests/util/vector_width.h"

namespace halfcaf {
namespace testing {
namespace {

struct Layout {
  std::string order;
  int64_t block;  // 0: none
};

std::vector<Argument> Args(const Layout& l, bool is_test, bool fused) {
  std::vector<Argument> a{MakeArgument("order", l.order), MakeArgument("is_test", is_test ? 1 : 0),
                          MakeArgument("epsilon", 1e-4f)};
  if (l.block > 0) a.push_back(MakeArgument("channel_block", l.block));
  if (fused) a.push_back(MakeArgument("fuse_relu", 1));
  return a;
}

// The default CPU op (not the DNNL engine, which the unfused NHWC training op would take: it sums
// in float).
void RunDefault(Workspace* ws, const std::string& type, const std::vector<std::string>& in,
                const std::vector<std::string>& out, std::vector<Argument> args) {
  RunWithEngine(MakeOperatorDef(type, "", in, out, std::move(args)), {}, "", ws);
}

void ExpectSame(const Workspace& ws, const std::string& got, const std::string& want) {
  const std::vector<float> g = ToFloatVector(ws.GetTensor(got));
  const std::vector<float> w = ToFloatVector(ws.GetTensor(want));
  ASSERT_EQ(g.size(), w.size()) << got;
  int64_t differ = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    differ += !(g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i])));
  }
  EXPECT_EQ(differ, 0) << got << " differs from " << want << " in " << differ << " of " << g.size()
                       << " values";
}

// X's dims for the layout: NCHW (N, C, H, W), NHWC (N, H, W, C), blocked (N, C / B, H, W, B).
std::vector<int64_t> DimsOf(const Layout& l, int64_t N, int64_t C, int64_t H, int64_t W) {
  if (l.block > 0) return {N, C / l.block, H, W, l.block};
  if (l.order == "NHWC") return {N, H, W, C};
  return {N, C, H, W};
}

TEST(SpatialBNReluTest, FusedEqualsSpatialBNThenReluBitForBit) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (const VectorWidth width : AvailableVectorWidths()) {
    const ScopedVectorWidth cap(width);
    for (const Layout& l : {Layout{"NCHW", 0}, Layout{"NHWC", 0}, Layout{"NCHW", 16},
                            Layout{"NCHW", 8}, Layout{"NCHW", 4}}) {
      for (const bool is_test : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "width " << static_cast<int>(width) << ", " << l.order << " block "
                     << l.block << (is_test ? ", test" : ", training"));
        const int64_t N = 3, C = 32, H = 5, W = 7;
        const std::vector<int64_t> dims = DimsOf(l, N, C, H, W);
        Workspace ws;
        Tensor x = RandomTensor(dims, 31, -2.f, 2.f);
        Tensor dy = RandomTensor(dims, 32);
        // A NaN and an inf in X (their channels' statistics go non-finite in training) and in
        // dY (the gate keeps a NaN gradient where the ReLU is closed, as ReluGradient does).
        x.mutable_data<float>()[11] = nan;
        x.mutable_data<float>()[x.numel() - 5] = -inf;
        dy.mutable_data<float>()[40] = nan;
        dy.mutable_data<float>()[41] = inf;
        dy.mutable_data<float>()[x.numel() / 2] = nan;
        SetInput(&ws, "X", x);
        SetInput(&ws, "dY", dy);
        SetInput(&ws, "scale", RandomTensor({C}, 33, -1.f, 1.5f));
        SetInput(&ws, "bias", RandomTensor({C}, 34));
        for (const char* s : {"rm", "rm2"}) SetInput(&ws, s, RandomTensor({C}, 35));
        for (const char* s : {"rv", "rv2"}) SetInput(&ws, s, RandomTensor({C}, 36, 0.5f, 1.5f));
        const std::vector<std::string> in{"X", "scale", "bias", "rm", "rv"};
        const std::vector<std::string> in2{"X", "scale", "bias", "rm2", "rv2"};
        std::vector<std::string> out{"Z"}, out2{"Y"};
        if (!is_test) {
          out = {"Z", "rm", "rv", "sm", "si"};
          out2 = {"Y", "rm2", "rv2", "sm2", "si2"};
        }
        RunDefault(&ws, "SpatialBN", in, out, Args(l, is_test, false));
        RunDefault(&ws, "Relu", {"Z"}, {"R"}, {});
        RunDefault(&ws, "SpatialBN", in2, out2, Args(l, is_test, true));
        ExpectSame(ws, "Y", "R");
        if (!is_test) {
          for (const char* s : {"rm", "rv", "sm", "si"}) ExpectSame(ws, std::string(s) + "2", s);
        }
        // The gradient: ReluGradient, then SpatialBNGradient.
        const std::string m = is_test ? "rm" : "sm", v = is_test ? "rv" : "si";
        RunDefault(&ws, "ReluGradient", {"Y", "dY"}, {"dZ"}, {});
        RunDefault(&ws, "SpatialBNGradient", {"X", "scale", "dZ", m, v}, {"dX", "ds", "db"},
                   Args(l, is_test, false));
        RunDefault(&ws, "SpatialBNGradient", {"X", "scale", "dY", m, v, "bias"},
                   {"dX2", "ds2", "db2"}, Args(l, is_test, true));
        ExpectSame(ws, "dX2", "dX");
        ExpectSame(ws, "ds2", "ds");
        ExpectSame(ws, "db2", "db");
        // In place on dY, as a memory plan may make it.
        RunDefault(&ws, "Copy", {"dY"}, {"dI"}, {});
        RunDefault(&ws, "SpatialBNGradient", {"X", "scale", "dI", m, v, "bias"},
                   {"dI", "ds3", "db3"}, Args(l, is_test, true));
        ExpectSame(ws, "dI", "dX");
      }
    }
  }
}

// Finite differences through the fused op and its gradient (training mode: the statistics depend
// on X), NCHW and channel-blocked, for X, scale and bias. No value lies within a step of the
// ReLU's kink with these seeds (the check would then compare across it).
TEST(SpatialBNReluTest, GradientCheck) {
  GradientCheckOptions opts;
  opts.stepsize = 1e-3f;
  opts.max_elements = 100;
  for (const Layout& l : {Layout{"NCHW", 0}, Layout{"NCHW", 8}}) {
    SCOPED_TRACE(::testing::Message() << "block " << l.block);
    const OperatorDef bn = MakeOperatorDef("SpatialBN", "", {"X", "scale", "bias", "rm", "rv"},
                                           {"Y", "rm", "rv", "sm", "si"}, Args(l, false, true));
    const std::map<std::string, Tensor> in = {
        {"X", RandomTensor(DimsOf(l, 3, 16, 3, 4), 71, -2.f, 2.f)},
        {"scale", RandomTensor({16}, 52, 0.5f, 1.5f)},
        {"bias", RandomTensor({16}, 73, -0.5f, 0.5f)},
        {"rm", RandomTensor({16}, 54)},
        {"rv", RandomTensor({16}, 55, 0.5f, 1.5f)}};
    for (int i = 0; i < 3; ++i) GradientChecker(opts).Check(bn, in, i, 0);
  }
}

// The gradient maker passes the bias to the fused gradient; the unfused op's gradient is as
// before.
TEST(SpatialBNReluTest, GradientTakesTheBias) {
  for (const bool is_test : {false, true}) {
    for (const bool fused : {false, true}) {
      std::vector<std::string> out{"Y"};
      if (!is_test) out = {"Y", "rm", "rv", "sm", "si"};
      const OperatorDef bn = MakeOperatorDef("SpatialBN", "", {"X", "s", "b", "rm", "rv"}, out,
                                             Args(Layout{"NCHW", 0}, is_test, fused));
      std::vector<GradientWrapper> g_out(out.size());
      g_out[0] = GradientWrapper{"Y_grad", "", ""};
      const auto meta = GetGradientForOp(bn, g_out);
      ASSERT_EQ(meta.ops.size(), 1u);
      std::vector<std::string> want{"X", "s", "Y_grad", is_test ? "rm" : "sm",
                                    is_test ? "rv" : "si"};
      if (fused) want.push_back("b");
      EXPECT_EQ(std::vector<std::string>(meta.ops[0].input().begin(), meta.ops[0].input().end()),
                want);
      EXPECT_EQ(ArgumentHelper(meta.ops[0]).GetSingleArgument<int>("fuse_relu", 0), fused ? 1 : 0);
    }
  }
}

TEST(SpatialBNReluTest, ErrorsNameTheProblem) {
  const int64_t C = 4;
  const Tensor x = RandomTensor({2, C, 3, 3}, 41);
  const std::map<std::string, Tensor> in{{"X", x},
                                         {"X16", ToFloat16Type(x, DataType::FLOAT16)},
                                         {"dY", RandomTensor({2, C, 3, 3}, 42)},
                                         {"scale", RandomTensor({C}, 43)},
                                         {"bias", RandomTensor({C}, 44)},
                                         {"rm", RandomTensor({C}, 45)},
                                         {"rv", RandomTensor({C}, 46, 0.5f, 1.f)}};
  const std::vector<Argument> fused = Args(Layout{"NCHW", 0}, true, true);
  ExpectError(MakeOperatorDef("SpatialBN", "", {"X16", "scale", "bias", "rm", "rv"}, {"Y"}, fused),
              in, "fuse_relu takes float X");
  ExpectError(MakeOperatorDef("SpatialBN", "", {"X", "scale", "bias", "rm", "rv"}, {"Y"},
                              {MakeArgument("is_test", 1), MakeArgument("fuse_relu", 2)}),
              in, "fuse_relu must be 0 or 1");
  ExpectError(MakeOperatorDef("SpatialBNGradient", "", {"X", "scale", "dY", "rm", "rv"},
                              {"a", "b", "c"}, fused),
              in, "takes 6 inputs with fuse_relu");
  ExpectError(MakeOperatorDef("SpatialBNGradient", "", {"X", "scale", "dY", "rm", "rv", "X"},
                              {"a", "b", "c"}, fused),
              in, "bias must have dims [4]");
}

// bfloat16 X fuses only in NHWC (the gate as the stored output), and X and dY share one type.
TEST(SpatialBNReluTest, BFloat16FusesOnlyInNhwcWithOneType) {
  const int64_t C = 4;
  const Tensor nchw = RandomTensor({2, C, 3, 3}, 51), nhwc = RandomTensor({2, 3, 3, C}, 52);
  const std::map<std::string, Tensor> in{{"Xc", ToBFloat16(nchw)},
                                         {"Xh", ToBFloat16(nhwc)},
                                         {"dYh", RandomTensor({2, 3, 3, C}, 53)},
                                         {"scale", RandomTensor({C}, 43)},
                                         {"bias", RandomTensor({C}, 44)},
                                         {"rm", RandomTensor({C}, 45)},
                                         {"rv", RandomTensor({C}, 46, 0.5f, 1.f)}};
  for (const bool is_test : {false, true}) {
    SCOPED_TRACE(is_test ? "test" : "training");
    const std::vector<std::string> outs =
        is_test ? std::vector<std::string>{"Y"}
                : std::vector<std::string>{"Y", "rm", "rv", "sm", "sv"};
    const OperatorDef def = MakeOperatorDef("SpatialBN", "", {"Xc", "scale", "bias", "rm", "rv"},
                                            outs, Args(Layout{"NCHW", 0}, is_test, true));
    ExpectError(def, in, "or bfloat16 X (and dY) in NHWC, got X bfloat16[");
    ExpectError(def, in, "] in NCHW");
  }
  ExpectError(MakeOperatorDef("SpatialBNGradient", "", {"Xh", "scale", "dYh", "rm", "rv", "bias"},
                              {"a", "b", "c"}, Args(Layout{"NHWC", 0}, false, true)),
              in, "and dY float[");
  // The same op in NHWC with one type runs.
  RunOpOutputs(MakeOperatorDef("SpatialBN", "", {"Xh", "scale", "bias", "rm", "rv"}, {"Y"},
                               Args(Layout{"NHWC", 0}, true, true)),
               in);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
