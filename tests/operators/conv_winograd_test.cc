// Conv, ConvGradient and ConvFusion with conv_algorithm = 1 (Winograd, oneDNN engine): where
// oneDNN has Winograd kernels (F(4x4, 3x3) on AVX-512) the results agree with the direct kernels'
// to float rounding and are not theirs bit for bit (the transforms ran); elsewhere, and for the
// geometries Winograd does not take (stride 2, 1 x 1, an output under 14 x 14), they are the
// direct kernels' bit for bit.
// The finite-difference check covers the Winograd gradients; a bad value is one clear error.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/workspace.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

#ifdef HALFCAF_WITH_DNNL
#include "operators/dnnl_util.h"
#endif

namespace halfcaf {
namespace testing {
namespace {

bool HaveDnnl() { return OperatorRegistry::Find(DeviceType::CPU, "Conv", "DNNL") != nullptr; }

// Whether oneDNN on this CPU (under its ISA cap) has a Winograd kernel for a 3 x 3 convolution.
bool OneDnnHasWinograd() {
#ifdef HALFCAF_WITH_DNNL
  using dnnl::memory;
  try {
    auto any = [](memory::dims d) {
      return memory::desc(d, memory::data_type::f32, memory::format_tag::any);
    };
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_winograd,
        any({2, 16, 8, 8}), any({16, 16, 3, 3}), any({2, 16, 8, 8}), {1, 1}, {1, 1}, {1, 1});
    dnnl::convolution_forward::primitive_desc(desc, DnnlEngine());
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
#else
  return false;
#endif
}

struct Geometry {
  int64_t N, C, H, W, M, k, stride;
};

std::vector<Argument> Args(const Geometry& g, int algorithm, std::vector<Argument> more = {}) {
  more.push_back(MakeArgument("kernel", static_cast<int>(g.k)));
  more.push_back(MakeArgument("stride", static_cast<int>(g.stride)));
  more.push_back(MakeArgument("pad", static_cast<int>(g.k / 2)));
  if (algorithm != 0) more.push_back(MakeArgument("conv_algorithm", algorithm));
  return more;
}

void RunOp(Workspace* ws, const std::string& type, const std::vector<std::string>& in,
         const std::vector<std::string>& out, const std::vector<Argument>& args) {
  CreateOperator(MakeOperatorDef(type, "", in, out, args), ws)->Run(0);
}

// `got` against `want`: within 1e-4 relative L2 always; bit for bit unless `transformed`, and not
// bit for bit when it is.
void ExpectLike(const Workspace& ws, const std::string& got, const std::string& want,
                bool transformed) {
  const std::vector<float> g = ToFloatVector(ws.GetTensor(got));
  const std::vector<float> w = ToFloatVector(ws.GetTensor(want));
  ASSERT_EQ(g.size(), w.size()) << got;
  double diff = 0, norm = 0;
  int64_t differ = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    diff += (g[i] - w[i]) * static_cast<double>(g[i] - w[i]);
    norm += w[i] * static_cast<double>(w[i]);
    differ += g[i] != w[i];
  }
  EXPECT_LT(std::sqrt(diff / norm), 1e-4) << got;
  if (transformed) {
    EXPECT_GT(differ, 0) << got << " is the direct result bit for bit: Winograd did not run";
  } else {
    EXPECT_EQ(differ, 0) << got << " differs from the direct result in " << differ << " values";
  }
}

TEST(ConvWinogradTest, ForwardAndGradientsAgreeWithDirect) {
  if (!HaveDnnl()) GTEST_SKIP() << "built without oneDNN";
  const bool wino = OneDnnHasWinograd();
  for (const Geometry& g : {Geometry{2, 32, 14, 14, 32, 3, 1}, Geometry{2, 32, 28, 28, 32, 3, 2},
                            Geometry{2, 32, 14, 14, 64, 1, 1}, Geometry{2, 32, 10, 10, 32, 3, 1}}) {
    const bool transformed = wino && g.k == 3 && g.stride == 1 && g.H >= 14;
    SCOPED_TRACE(::testing::Message() << "kernel " << g.k << " stride " << g.stride);
    Workspace ws;
    SetInput(&ws, "X", RandomTensor({g.N, g.C, g.H, g.W}, 1));
    SetInput(&ws, "W", RandomTensor({g.M, g.C, g.k, g.k}, 2, -0.2f, 0.2f));
    SetInput(&ws, "b", RandomTensor({g.M}, 3));
    RunOp(&ws, "Conv", {"X", "W", "b"}, {"Y"}, Args(g, 0));
    RunOp(&ws, "Conv", {"X", "W", "b"}, {"Yw"}, Args(g, 1));
    ExpectLike(ws, "Yw", "Y", transformed);
    SetInput(&ws, "dY", RandomTensor(ws.GetTensor("Y").dims(), 4));
    RunOp(&ws, "ConvGradient", {"X", "W", "dY"}, {"dW", "db", "dX"}, Args(g, 0));
    RunOp(&ws, "ConvGradient", {"X", "W", "dY"}, {"dWw", "dbw", "dXw"}, Args(g, 1));
    ExpectLike(ws, "dWw", "dW", transformed);
    ExpectLike(ws, "dXw", "dX", transformed);
  }
}

// The blocked layout (the training default) and the inference plan's fused NHWC convolution.
TEST(ConvWinogradTest, BlockedAndFusedConvolutions) {
  if (!HaveDnnl()) GTEST_SKIP() << "built without oneDNN";
  const bool wino = OneDnnHasWinograd();
  const Geometry g{2, 16, 16, 16, 16, 3, 1};
  Workspace ws;
  SetInput(&ws, "X", RandomTensor({g.N, g.C, g.H, g.W}, 5));
  SetInput(&ws, "W", RandomTensor({g.M, g.C, 3, 3}, 6, -0.2f, 0.2f));
  RunOp(&ws, "NCHW2NCHWc", {"X"}, {"Xb"}, {MakeArgument("block", int64_t{16})});
  const Argument block = MakeArgument("channel_block", int64_t{16});
  RunOp(&ws, "Conv", {"Xb", "W"}, {"Yb"}, Args(g, 0, {block}));
  RunOp(&ws, "Conv", {"Xb", "W"}, {"Ybw"}, Args(g, 1, {block}));
  ExpectLike(ws, "Ybw", "Yb", wino);
  // ConvFusion, NHWC, with the residual sum and the relu fused.
  RunOp(&ws, "NCHW2NHWC", {"X"}, {"Xn"}, {});
  RunOp(&ws, "Transpose", {"W"}, {"Wn"}, {MakeArgument("axes", std::vector<int>{0, 2, 3, 1})});
  SetInput(&ws, "S", RandomTensor({g.N, g.H, g.W, g.M}, 7));
  const std::vector<Argument> nhwc = {MakeArgument("order", std::string("NHWC")),
                                      MakeArgument("fusion_type", 3)};
  RunOp(&ws, "ConvFusion", {"Xn", "Wn", "S"}, {"F"}, Args(g, 0, nhwc));
  RunOp(&ws, "ConvFusion", {"Xn", "Wn", "S"}, {"Fw"}, Args(g, 1, nhwc));
  ExpectLike(ws, "Fw", "F", wino);
}

// Winograd is float32 only: float16 and bfloat16 convolutions asking for it run the direct
// algorithm (bit for bit the results without the argument), within 16-bit rounding of float32.
TEST(ConvWinogradTest, SixteenBitTypesRunTheDirectAlgorithm) {
  if (!HaveDnnl()) GTEST_SKIP() << "built without oneDNN";
  const Geometry g{2, 16, 14, 14, 16, 3, 1};
  for (const DataType t : {DataType::FLOAT16, DataType::BFLOAT16}) {
    SCOPED_TRACE(DataTypeName(t));
    Workspace ws;
    const Tensor x = RandomTensor({g.N, g.C, g.H, g.W}, 11);
    const Tensor w = RandomTensor({g.M, g.C, 3, 3}, 12, -0.2f, 0.2f);
    SetInput(&ws, "X", x);
    SetInput(&ws, "W", w);
    SetInput(&ws, "Xh", ToFloat16Type(x, t));
    SetInput(&ws, "Wh", ToFloat16Type(w, t));
    RunOp(&ws, "Conv", {"X", "W"}, {"Y"}, Args(g, 1));
    RunOp(&ws, "Conv", {"Xh", "Wh"}, {"Yh"}, Args(g, 0));
    RunOp(&ws, "Conv", {"Xh", "Wh"}, {"Yhw"}, Args(g, 1));
    EXPECT_EQ(ws.GetTensor("Yhw").dtype(), t);
    ExpectLike(ws, "Yhw", "Yh", false);
    const float tol = t == DataType::FLOAT16 ? 1e-2f : 5e-2f;
    ExpectNear(ToFloatVector(ws.GetTensor("Yhw")), ToFloatVector(ws.GetTensor("Y")), tol, tol,
               "16-bit against float32");
  }
}

TEST(ConvWinogradTest, FiniteDifferenceGradients) {
  if (!HaveDnnl()) GTEST_SKIP() << "built without oneDNN";
  GradientCheckOptions opts;
  opts.max_elements = 80;
  const Geometry g{1, 16, 14, 14, 16, 3, 1};
  const OperatorDef conv = MakeOperatorDef("Conv", "", {"X", "W", "b"}, {"Y"}, Args(g, 1));
  const std::map<std::string, Tensor> in = {{"X", RandomTensor({1, 16, 14, 14}, 8)},
                                            {"W", RandomTensor({16, 16, 3, 3}, 9, -0.3f, 0.3f)},
                                            {"b", RandomTensor({16}, 10)}};
  for (int i = 0; i < 3; ++i) GradientChecker(opts).Check(conv, in, i, 0);
}

TEST(ConvWinogradTest, BadAlgorithmIsOneClearError) {
  if (!HaveDnnl()) GTEST_SKIP() << "built without oneDNN";
  Workspace ws;
  SetInput(&ws, "X", RandomTensor({1, 16, 6, 6}, 1));
  SetInput(&ws, "W", RandomTensor({16, 16, 3, 3}, 2));
  try {
    RunOp(&ws, "Conv", {"X", "W"}, {"Y"}, Args(Geometry{1, 16, 6, 6, 16, 3, 1}, 2));
    ADD_FAILURE() << "conv_algorithm 2 accepted";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(
        std::string(e.what()).find("conv_algorithm must be 0 (direct) or 1 (Winograd), got 2"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
