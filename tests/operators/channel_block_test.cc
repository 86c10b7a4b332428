// Channel-blocked activations (operators/nn/channel_block.h): NCHW2NCHWc /
// NCHWc2NCHW move every element where oneDNN's nChw<B>c puts it and back; Conv,
// ConvGradient (DNNL engine), SpatialBN and SpatialBNGradient with channel_block give what the
// same ops give on NCHW (the batch normalization bit for bit), and so do ConvTranspose and its
// gradient; the operators without a blocked path refuse the argument.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/op_schema.h"
#include "core/workspace.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"
#include "tests/util/vector_width.h"

namespace halfcaf {
namespace testing {
namespace {

bool HaveDnnl() { return OperatorRegistry::Find(DeviceType::CPU, "Conv", "DNNL") != nullptr; }

void RunOnce(Workspace* ws, const std::string& type, const std::vector<std::string>& in,
             const std::vector<std::string>& out, std::vector<Argument> args = {}) {
  CreateOperator(MakeOperatorDef(type, "", in, out, std::move(args)), ws)->Run(0);
}

void ToBlocked(Workspace* ws, const std::string& from, const std::string& to, int64_t block) {
  RunOnce(ws, "NCHW2NCHWc", {from}, {to}, {MakeArgument("block", block)});
}
void ToPlain(Workspace* ws, const std::string& from, const std::string& to, int64_t block) {
  RunOnce(ws, "NCHWc2NCHW", {from}, {to}, {MakeArgument("block", block)});
}

void ExpectClose(const Workspace& ws, const std::string& got, const std::string& want,
                 float tol = 1e-5f) {
  EXPECT_EQ(ws.GetTensor(got).dims(), ws.GetTensor(want).dims()) << got;
  ExpectNear(ToFloatVector(ws.GetTensor(got)), ToFloatVector(ws.GetTensor(want)), tol, tol, got);
}

// Shape inference (the memory planner's sizes) knows the blocked output: the schema of `type` on
// the inputs `in` gives the dims op `type` wrote to `y`.
void ExpectInferredY(const Workspace& ws, const std::string& type,
                     const std::vector<std::string>& in, const std::vector<Argument>& args,
                     const std::string& y) {
  std::vector<TensorShape> shapes;
  for (const auto& name : in)
    shapes.push_back(TensorShape{ws.GetTensor(name).dims(), DataType::FLOAT});
  EXPECT_EQ(OpSchemaRegistry::Schema(type)
                ->InferShapes(MakeOperatorDef(type, "", in, {y}, args), shapes)
                .at(0)
                .dims,
            ws.GetTensor(y).dims())
      << type;
}

// A (transposed) convolution gradient's outputs: dW, db with a bias, dX.
std::vector<std::string> GradientOutputs(bool bias, const std::string& dw, const std::string& db,
                                         const std::string& dx) {
  return bias ? std::vector<std::string>{dw, db, dx} : std::vector<std::string>{dw, dx};
}

TEST(ChannelBlockTest, ConversionPutsEachElementInItsBlock) {
  Workspace ws;
  const int64_t N = 2, C = 16, H = 3, W = 5, B = 8;
  SetInput(&ws, "X", RandomTensor({N, C, H, W}, 1));
  ToBlocked(&ws, "X", "Xb", B);
  const Tensor& xb = ws.GetTensor("Xb");
  ASSERT_EQ(xb.dims(), (std::vector<int64_t>{N, C / B, H, W, B}));
  const float* x = ws.GetTensor("X").data<float>();
  const float* b = xb.data<float>();
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t w = 0; w < W; ++w) {
          const float want = x[((n * C + c) * H + h) * W + w];
          ASSERT_EQ(b[(((n * (C / B) + c / B) * H + h) * W + w) * B + c % B], want);
        }
      }
    }
  }
  ToPlain(&ws, "Xb", "X2", B);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("X2")), ToFloatVector(ws.GetTensor("X")));
}

TEST(ChannelBlockTest, ConversionErrorsNameTheProblem) {
  Workspace ws;
  SetInput(&ws, "X", RandomTensor({2, 12, 3, 3}, 1));
  SetInput(&ws, "X5", RandomTensor({2, 3, 3, 3, 4}, 2));
  auto error = [&](const std::string& type, const std::string& in, int64_t block) {
    try {
      RunOnce(&ws, type, {in}, {"Y"}, {MakeArgument("block", block)});
    } catch (const EnforceNotMet& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("NCHW2NCHWc", "X", 8).find("cannot be channel-blocked by 8"), std::string::npos);
  EXPECT_NE(error("NCHW2NCHWc", "X", 0).find("'block'"), std::string::npos);
  EXPECT_NE(error("NCHW2NCHWc", "X5", 4).find("cannot be channel-blocked"), std::string::npos);
  EXPECT_NE(error("NCHWc2NCHW", "X5", 8).find("must be channel-blocked"), std::string::npos);
  EXPECT_NE(error("NCHWc2NCHW", "X", 4).find("must be channel-blocked"), std::string::npos);
}

OperatorDef ConversionDef(bool to_blocked, int64_t block) {
  return MakeOperatorDef(to_blocked ? "NCHW2NCHWc" : "NCHWc2NCHW", "", {"X"}, {"Y"},
                         {MakeArgument("block", block)});
}

// Finite differences through both conversions; float16 and bfloat16 move as float does (bit
// patterns: the same rounded values); NaN and infinities keep their places.
TEST(ChannelBlockTest, ConversionGradientsLowPrecisionAndNaN) {
  GradientChecker checker;
  checker.Check(ConversionDef(true, 4), {{"X", RandomTensor({2, 8, 3, 2}, 21)}}, 0, 0);
  checker.Check(ConversionDef(false, 4), {{"X", RandomTensor({2, 2, 3, 2, 4}, 22)}}, 0, 0);
  CheckFp16MatchesFp32(ConversionDef(true, 8), {{"X", RandomTensor({2, 16, 3, 3}, 23)}}, {"X"}, {0},
                       0.f, 0.f);
  CheckFp16MatchesFp32(ConversionDef(false, 8), {{"X", RandomTensor({2, 2, 3, 3, 8}, 24)}}, {"X"},
                       {0}, 0.f, 0.f);
  Tensor x = RandomTensor({1, 8, 2, 2}, 25);
  float* p = x.mutable_data<float>();
  p[5] = std::nanf("");
  p[17] = -std::numeric_limits<float>::infinity();
  Workspace ws;
  SetInput(&ws, "X", x);
  ToBlocked(&ws, "X", "Xb", 8);
  ToPlain(&ws, "Xb", "X2", 8);
  const std::vector<float> back = ToFloatVector(ws.GetTensor("X2"));
  EXPECT_TRUE(std::isnan(back[5]));
  EXPECT_EQ(back[17], -std::numeric_limits<float>::infinity());
  // X[0][1][0][1] (flat 5) is block 0, pixel (0, 1), lane 1 of the blocked tensor.
  EXPECT_TRUE(std::isnan(ToFloatVector(ws.GetTensor("Xb"))[1 * 8 + 1]));
}

struct ConvCase {
  int64_t N, C, H, W, M, k, stride, pad;
  bool bias;
};

std::vector<Argument> ConvArgs(const ConvCase& c, int64_t block) {
  std::vector<Argument> a = {MakeArgument("kernel", static_cast<int>(c.k)),
                             MakeArgument("stride", static_cast<int>(c.stride)),
                             MakeArgument("pad", static_cast<int>(c.pad))};
  if (!c.bias) a.push_back(MakeArgument("no_bias", 1));
  if (block != 0) a.push_back(MakeArgument("channel_block", block));
  return a;
}

// Runs `type` and its gradient on the NCHW inputs (X, W, and b with a bias) and, with `args_b`
// (channel_block B), on X blocked (`plain_x`: X as it is, a first convolution) and dY blocked,
// and expects the same Y, dX, dW and db.
void ExpectBlockedOpAndGradientMatch(Workspace* ws, const std::string& type, bool bias,
                                     const std::vector<Argument>& args,
                                     const std::vector<Argument>& args_b, int64_t B,
                                     bool plain_x = false) {
  std::vector<std::string> in = {"X", "W"}, in_b = {"Xb", "W"};
  if (bias) {
    in.push_back("b");
    in_b.push_back("b");
  }
  RunOnce(ws, type, in, {"Y"}, args);
  if (plain_x) {
    RunOnce(ws, "Copy", {"X"}, {"Xb"});
  } else {
    ToBlocked(ws, "X", "Xb", B);
  }
  RunOnce(ws, type, in_b, {"Yb"}, args_b);
  ToPlain(ws, "Yb", "Y2", B);
  ExpectClose(*ws, "Y2", "Y");
  ExpectInferredY(*ws, type, in_b, args_b, "Yb");

  SetInput(ws, "dY", RandomTensor(ws->GetTensor("Y").dims(), 6));
  ToBlocked(ws, "dY", "dYb", B);
  const std::string grad = type + "Gradient";
  RunOnce(ws, grad, {"X", "W", "dY"}, GradientOutputs(bias, "dW", "db", "dX"), args);
  RunOnce(ws, grad, {"Xb", "W", "dYb"}, GradientOutputs(bias, "dW2", "db2", "dXb"), args_b);
  if (plain_x) {
    RunOnce(ws, "Copy", {"dXb"}, {"dX2"});
  } else {
    ToPlain(ws, "dXb", "dX2", B);
  }
  ExpectClose(*ws, "dX2", "dX");
  ExpectClose(*ws, "dW2", "dW", 1e-4f);
  if (bias) ExpectClose(*ws, "db2", "db", 1e-4f);
}

TEST(ChannelBlockTest, ConvAndGradientMatchNchw) {
  if (!HaveDnnl()) GTEST_SKIP() << "built without oneDNN";
  // The last: a first convolution over 3 channels, X (and dX) plain NCHW, Y (dY) blocked.
  const std::vector<ConvCase> cases = {{2, 16, 9, 7, 32, 3, 1, 1, true},
                                       {3, 32, 8, 8, 16, 1, 2, 0, false},
                                       {1, 64, 5, 6, 64, 3, 2, 1, false},
                                       {2, 3, 15, 13, 16, 7, 2, 3, true}};
  for (int64_t B : {16, 8}) {
    for (const ConvCase& c : cases) {
      SCOPED_TRACE(::testing::Message() << "block " << B << " C " << c.C << " M " << c.M);
      Workspace ws;
      SetInput(&ws, "X", RandomTensor({c.N, c.C, c.H, c.W}, 3));
      SetInput(&ws, "W", RandomTensor({c.M, c.C, c.k, c.k}, 4));
      if (c.bias) SetInput(&ws, "b", RandomTensor({c.M}, 5));
      ExpectBlockedOpAndGradientMatch(&ws, "Conv", c.bias, ConvArgs(c, 0), ConvArgs(c, B), B,
                                      c.C < B);
    }
  }
}

// ConvTranspose and its gradient with channel_block (X, Y, dY, dX blocked) against NCHW: the
// same oneDNN kernels, which compute in the blocked layout anyway.
TEST(ChannelBlockTest, ConvTransposeAndGradientMatchNchw) {
  if (!HaveDnnl()) GTEST_SKIP() << "built without oneDNN";
  struct Case {
    int64_t N, M, H, W, C, k, stride, pad;  // X (N, M, H, W), filter (M, C, k, k)
    bool bias;
  };
  // The AC-GAN generator's first layer, and a 3 x 3 stride-1 one with a bias.
  const std::vector<Case> cases = {{4, 32, 7, 7, 16, 4, 2, 1, false},
                                   {2, 16, 5, 6, 32, 3, 1, 1, true}};
  for (int64_t B : {16, 8}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(::testing::Message() << "block " << B << " M " << c.M << " C " << c.C);
      std::vector<Argument> args = {MakeArgument("kernel", static_cast<int>(c.k)),
                                    MakeArgument("stride", static_cast<int>(c.stride)),
                                    MakeArgument("pad", static_cast<int>(c.pad))};
      if (!c.bias) args.push_back(MakeArgument("no_bias", 1));
      std::vector<Argument> args_b = args;
      args_b.push_back(MakeArgument("channel_block", B));
      Workspace ws;
      SetInput(&ws, "X", RandomTensor({c.N, c.M, c.H, c.W}, 3));
      SetInput(&ws, "W", RandomTensor({c.M, c.C, c.k, c.k}, 4));
      if (c.bias) SetInput(&ws, "b", RandomTensor({c.C}, 5));
      ExpectBlockedOpAndGradientMatch(&ws, "ConvTranspose", c.bias, args, args_b, B);
    }
  }
}

// What a blocked ConvTranspose cannot take is one clear error naming the problem: an X that is not
// blocked, an output channel count that is not a multiple of the block, a 1-D kernel.
TEST(ChannelBlockTest, ConvTransposeBadBlockedInputsAreOneClearError) {
  if (!HaveDnnl()) GTEST_SKIP() << "built without oneDNN";
  struct Bad {
    std::vector<int64_t> x, w;
    std::vector<Argument> args;
    const char* message;
  };
  const std::vector<Argument> k3 = {MakeArgument("kernel", 3), MakeArgument("channel_block", 16)};
  const std::vector<Bad> bad = {
      {{2, 16, 5, 5}, {16, 16, 3, 3}, k3, "X must be channel-blocked"},
      {{2, 1, 5, 5, 16}, {16, 24, 3, 3}, k3, "cannot be channel-blocked by 16"},
      {{2, 1, 5, 5, 16}, {16, 16, 3},
       {MakeArgument("kernels", std::vector<int>{3}), MakeArgument("channel_block", 16)},
       "needs a 2-D transposed convolution"}};
  for (const Bad& b : bad) {
    Workspace ws;
    SetInput(&ws, "X", RandomTensor(b.x, 1));
    SetInput(&ws, "W", RandomTensor(b.w, 2));
    try {
      RunOnce(&ws, "ConvTranspose", {"X", "W"}, {"Y"}, b.args);
      ADD_FAILURE() << "accepted: " << b.message;
    } catch (const EnforceNotMet& e) {
      EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
    }
  }
}

// Finite differences on the blocked operators themselves (the gradient makers give ConvGradient,
// ConvTransposeGradient and SpatialBNGradient with channel_block).
TEST(ChannelBlockTest, BlockedConvAndBatchNormGradientCheck) {
  if (!HaveDnnl()) GTEST_SKIP() << "built without oneDNN";
  GradientCheckOptions opts;
  opts.max_elements = 100;
  const ConvCase c{2, 8, 5, 4, 8, 3, 1, 1, true};
  const OperatorDef conv = MakeOperatorDef("Conv", "", {"X", "W", "b"}, {"Y"}, ConvArgs(c, 8));
  const std::map<std::string, Tensor> conv_in = {{"X", RandomTensor({2, 1, 5, 4, 8}, 31)},
                                                 {"W", RandomTensor({8, 8, 3, 3}, 32)},
                                                 {"b", RandomTensor({8}, 33)}};
  for (int i = 0; i < 3; ++i) GradientChecker(opts).Check(conv, conv_in, i, 0);
  const ConvCase up{2, 8, 5, 4, 8, 3, 2, 1, true};  // stride 2: the AC-GAN's upsampling form
  const OperatorDef deconv =
      MakeOperatorDef("ConvTranspose", "", {"X", "W", "b"}, {"Y"}, ConvArgs(up, 8));
  for (int i = 0; i < 3; ++i) GradientChecker(opts).Check(deconv, conv_in, i, 0);
  const OperatorDef bn = MakeOperatorDef(
      "SpatialBN", "", {"X", "scale", "bias", "rm", "rv"}, {"Y", "rm", "rv", "sm", "si"},
      {MakeArgument("is_test", 0), MakeArgument("channel_block", int64_t{8})});
  const std::map<std::string, Tensor> bn_in = {{"X", RandomTensor({3, 2, 3, 4, 8}, 34, -2.f, 2.f)},
                                               {"scale", RandomTensor({16}, 35, 0.5f, 1.5f)},
                                               {"bias", RandomTensor({16}, 36)},
                                               {"rm", RandomTensor({16}, 37)},
                                               {"rv", RandomTensor({16}, 38, 0.5f, 1.5f)}};
  for (int i = 0; i < 3; ++i) GradientChecker(opts).Check(bn, bn_in, i, 0);
}

Tensor AsType(const Tensor& t, DataType dtype) {
  return dtype == DataType::FLOAT ? t : ToFloat16Type(t, dtype);
}

// Bit for bit: the blocked loops sum each channel in the NCHW loops' order (spatial_bn_loops.h).
void ExpectSame(const Workspace& ws, const std::string& got, const std::string& want) {
  EXPECT_EQ(ws.GetTensor(got).dtype(), ws.GetTensor(want).dtype()) << got;
  EXPECT_EQ(ws.GetTensor(got).dims(), ws.GetTensor(want).dims()) << got;
  const std::vector<float> g = ToFloatVector(ws.GetTensor(got));
  const std::vector<float> w = ToFloatVector(ws.GetTensor(want));
  ASSERT_EQ(g.size(), w.size()) << got;
  int64_t differ = 0;
  for (size_t i = 0; i < g.size(); ++i) differ += g[i] != w[i];
  EXPECT_EQ(differ, 0) << got << " differs from " << want << " in " << differ << " of " << g.size()
                       << " values";
}

TEST(ChannelBlockTest, SpatialBNAndGradientMatchNchwBitForBit) {
  struct Case {
    int64_t B, H, W;  // H * W = 30 and 49 leave a tail after the eight lanes; 64 none
    DataType dtype;
  };
  for (const VectorWidth width : AvailableVectorWidths()) {
    const ScopedVectorWidth cap(width);
    for (const Case& k : {Case{16, 5, 6, DataType::FLOAT}, Case{8, 7, 7, DataType::FLOAT},
                          Case{4, 8, 8, DataType::FLOAT}, Case{16, 7, 7, DataType::FLOAT16},
                          Case{8, 5, 6, DataType::BFLOAT16}}) {
      const int64_t B = k.B;
      SCOPED_TRACE(::testing::Message()
                   << "width " << static_cast<int>(width) << ", block " << B << ", " << k.H << " x "
                   << k.W << ", " << DataTypeName(k.dtype));
      Workspace ws;
      const int64_t N = 4, C = 32, H = k.H, W = k.W;
      SetInput(&ws, "X", AsType(RandomTensor({N, C, H, W}, 7, -2.f, 3.f), k.dtype));
      SetInput(&ws, "scale", RandomTensor({C}, 8));
      SetInput(&ws, "bias", RandomTensor({C}, 9));
      for (const char* s : {"rm", "rm2"}) SetInput(&ws, s, RandomTensor({C}, 10));
      for (const char* s : {"rv", "rv2"}) SetInput(&ws, s, RandomTensor({C}, 11, 0.5f, 1.5f));
      RunOnce(&ws, "SpatialBN", {"X", "scale", "bias", "rm", "rv"}, {"Y", "rm", "rv", "sm", "si"},
              {MakeArgument("is_test", 0)});
      ToBlocked(&ws, "X", "Xb", B);
      RunOnce(&ws, "SpatialBN", {"Xb", "scale", "bias", "rm2", "rv2"},
              {"Yb", "rm2", "rv2", "sm2", "si2"},
              {MakeArgument("is_test", 0), MakeArgument("channel_block", B)});
      ToPlain(&ws, "Yb", "Y2", B);
      ExpectSame(ws, "Y2", "Y");
      for (const auto& [got, want] : std::map<std::string, std::string>{
               {"rm2", "rm"}, {"rv2", "rv"}, {"sm2", "sm"}, {"si2", "si"}}) {
        ExpectSame(ws, got, want);
      }
      // Test mode (an evaluation net's): the estimated statistics.
      RunOnce(&ws, "SpatialBN", {"X", "scale", "bias", "rm", "rv"}, {"T"},
              {MakeArgument("is_test", 1)});
      RunOnce(&ws, "SpatialBN", {"Xb", "scale", "bias", "rm", "rv"}, {"Tb"},
              {MakeArgument("is_test", 1), MakeArgument("channel_block", B)});
      ToPlain(&ws, "Tb", "T2", B);
      ExpectSame(ws, "T2", "T");
      ToBlocked(&ws, "X", "Ib", B);  // in place, as a memory plan may make it
      RunOnce(&ws, "SpatialBN", {"Ib", "scale", "bias", "rm", "rv"}, {"Ib"},
              {MakeArgument("is_test", 1), MakeArgument("channel_block", B)});
      ToPlain(&ws, "Ib", "I2", B);
      ExpectSame(ws, "I2", "T");
      SetInput(&ws, "dY", AsType(RandomTensor({N, C, H, W}, 12), k.dtype));
      ToBlocked(&ws, "dY", "dYb", B);
      RunOnce(&ws, "SpatialBNGradient", {"X", "scale", "dY", "sm", "si"}, {"dX", "ds", "db"});
      RunOnce(&ws, "SpatialBNGradient", {"Xb", "scale", "dYb", "sm", "si"}, {"dXb", "ds2", "db2"},
              {MakeArgument("channel_block", B)});
      ToPlain(&ws, "dXb", "dX2", B);
      ExpectSame(ws, "dX2", "dX");
      ExpectSame(ws, "ds2", "ds");
      ExpectSame(ws, "db2", "db");
      // Test mode's gradient (constant statistics) too.
      RunOnce(&ws, "SpatialBNGradient", {"X", "scale", "dY", "rm", "rv"}, {"tX", "ts", "tb"},
              {MakeArgument("is_test", 1)});
      RunOnce(&ws, "SpatialBNGradient", {"Xb", "scale", "dYb", "rm", "rv"}, {"tXb", "ts2", "tb2"},
              {MakeArgument("is_test", 1), MakeArgument("channel_block", B)});
      ToPlain(&ws, "tXb", "tX2", B);
      ExpectSame(ws, "tX2", "tX");
      ExpectSame(ws, "ts2", "ts");
      ExpectSame(ws, "tb2", "tb");
    }
  }
}

// NaN and inf in a blocked batch normalization land where they land on NCHW: a NaN (or an inf) in
// one channel makes that channel's mean NaN (inf) and its outputs NaN, and leaves the other
// channels' values as they are.
TEST(ChannelBlockTest, SpatialBNNaNStaysInItsChannel) {
  Workspace ws;
  const int64_t N = 2, C = 16, H = 3, W = 3;
  Tensor x = RandomTensor({N, C, H, W}, 21);
  float* xp = x.mutable_data<float>();
  xp[(1 * C + 5) * H * W + 4] = std::numeric_limits<float>::quiet_NaN();
  xp[(0 * C + 9) * H * W + 2] = std::numeric_limits<float>::infinity();
  SetInput(&ws, "X", x);
  SetInput(&ws, "scale", RandomTensor({C}, 22, 0.5f, 1.5f));
  SetInput(&ws, "bias", RandomTensor({C}, 23));
  for (const char* s : {"rm", "rm2"}) SetInput(&ws, s, RandomTensor({C}, 24));
  for (const char* s : {"rv", "rv2"}) SetInput(&ws, s, RandomTensor({C}, 25, 0.5f, 1.5f));
  RunOnce(&ws, "SpatialBN", {"X", "scale", "bias", "rm", "rv"}, {"Y", "rm", "rv", "sm", "si"},
          {MakeArgument("is_test", 0)});
  ToBlocked(&ws, "X", "Xb", 8);
  RunOnce(&ws, "SpatialBN", {"Xb", "scale", "bias", "rm2", "rv2"},
          {"Yb", "rm2", "rv2", "sm2", "si2"},
          {MakeArgument("is_test", 0), MakeArgument("channel_block", int64_t{8})});
  ToPlain(&ws, "Yb", "Y2", 8);
  const std::vector<float> y = ToFloatVector(ws.GetTensor("Y"));
  const std::vector<float> y2 = ToFloatVector(ws.GetTensor("Y2"));
  const std::vector<float> sm = ToFloatVector(ws.GetTensor("sm2"));
  for (int64_t c = 0; c < C; ++c) {
    EXPECT_EQ(!std::isfinite(sm[c]), c == 5 || c == 9) << "saved mean of channel " << c;
  }
  for (size_t i = 0; i < y.size(); ++i) {
    const int64_t c = static_cast<int64_t>(i) / (H * W) % C;
    EXPECT_EQ(std::isnan(y2[i]), c == 5 || c == 9) << i;
    EXPECT_TRUE(std::isnan(y2[i]) ? std::isnan(y[i]) : y2[i] == y[i]) << i;
  }
}

TEST(ChannelBlockTest, OperatorsWithoutABlockedPathRefuseIt) {
  Workspace ws;
  SetInput(&ws, "X", RandomTensor({1, 1, 4, 4, 16}, 1));
  SetInput(&ws, "W", RandomTensor({16, 16, 1, 1}, 2));
  const std::vector<Argument> args = {MakeArgument("kernel", 1), MakeArgument("channel_block", 16)};
  for (const std::string type :
       {"Conv", "ConvGradient", "ConvTranspose", "ConvTransposeGradient"}) {
    const OperatorCreator* plain = OperatorRegistry::Find(DeviceType::CPU, type, "");
    ASSERT_NE(plain, nullptr);
    const bool forward = type == "Conv" || type == "ConvTranspose";
    const std::vector<std::string> out =
        forward ? std::vector<std::string>{"Y"} : std::vector<std::string>{"dW", "db"};
    try {
      (*plain)(MakeOperatorDef(type, "", {"X", "W"}, out, args), &ws);
      ADD_FAILURE() << type << " accepted channel_block";
    } catch (const EnforceNotMet& e) {
      EXPECT_NE(std::string(e.what()).find("needs the DNNL engine"), std::string::npos) << e.what();
    }
  }
  if (HaveDnnl()) {  // a bad block size is one clear error on the DNNL operator
                     // too
    try {
      RunOnce(&ws, "Conv", {"X", "W"}, {"Y"},
              {MakeArgument("kernel", 1), MakeArgument("channel_block", 12)});
      ADD_FAILURE() << "channel_block 12 accepted";
    } catch (const EnforceNotMet& e) {
      EXPECT_NE(std::string(e.what()).find("must be 0, 4, 8 or 16"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
