// SpatialBN's NHWC loops for float and bfloat16 (operators/nn/spatial_bn_nhwc.h) through the
// default ops: the same bits at every vector width (the AVX-512F bfloat16 form included) and
// thread count, over shapes with channel tails, several channel groups and several row chunks;
// against a double-precision reference; and the fused ReLU in bfloat16 against separate Relu and
// ReluGradient ops bit for bit (NaN for NaN), where the ReLU's input rounds to zero in bfloat16,
// NaN included.
#include "operators/nn/spatial_bn_nhwc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/bfloat16.h"
#include "tests/util/op_test_util.h"
#include "tests/util/vector_width.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace halfcaf {
namespace testing {
namespace {

std::vector<Argument> Args(bool is_test, bool fused, float epsilon = 1e-4f) {
  std::vector<Argument> a{MakeArgument("order", std::string("NHWC")),
                          MakeArgument("is_test", is_test ? 1 : 0),
                          MakeArgument("epsilon", epsilon)};
  if (fused) a.push_back(MakeArgument("fuse_relu", 1));
  return a;
}

void RunDefault(Workspace* ws, const std::string& type, const std::vector<std::string>& in,
                const std::vector<std::string>& out, std::vector<Argument> args) {
  RunWithEngine(MakeOperatorDef(type, "", in, out, std::move(args)), {}, "", ws);
}

// The bits of a float or bfloat16 tensor, as 32-bit words (bfloat16: one per value).
std::vector<uint32_t> Bits(const Tensor& t) {
  std::vector<uint32_t> b(static_cast<size_t>(t.numel()));
  if (t.dtype() == DataType::BFLOAT16) {
    const BFloat16* p = t.data<BFloat16>();
    for (size_t i = 0; i < b.size(); ++i) b[i] = p[i].x;
  } else {
    std::memcpy(b.data(), t.data<float>(), b.size() * 4);
  }
  return b;
}

// Training forward (Y, the statistics) and gradient (dX, dscale, dbias), fused ReLU or not, of
// X and dY in dtype; every output's bits, by name.
std::map<std::string, std::vector<uint32_t>> TrainingBits(const std::vector<int64_t>& dims,
                                                          DataType dtype, bool fused) {
  const int64_t C = dims.back();
  Workspace ws;
  Tensor x = RandomTensor(dims, 71, -2.f, 3.f), dy = RandomTensor(dims, 72);
  if (dtype == DataType::BFLOAT16) {
    x = ToBFloat16(x);
    dy = ToBFloat16(dy);
  }
  SetInput(&ws, "X", x);
  SetInput(&ws, "dY", dy);
  SetInput(&ws, "scale", RandomTensor({C}, 73, -1.f, 1.5f));
  SetInput(&ws, "bias", RandomTensor({C}, 74));
  SetInput(&ws, "rm", RandomTensor({C}, 75));
  SetInput(&ws, "rv", RandomTensor({C}, 76, 0.5f, 1.5f));
  RunDefault(&ws, "SpatialBN", {"X", "scale", "bias", "rm", "rv"}, {"Y", "rm", "rv", "sm", "si"},
             Args(false, fused));
  std::vector<std::string> gin{"X", "scale", "dY", "sm", "si"};
  if (fused) gin.push_back("bias");
  RunDefault(&ws, "SpatialBNGradient", gin, {"dX", "ds", "db"}, Args(false, fused));
  std::map<std::string, std::vector<uint32_t>> bits;
  for (const char* s : {"Y", "rm", "rv", "sm", "si", "dX", "ds", "db"}) {
    bits[s] = Bits(ws.GetTensor(s));
  }
  EXPECT_EQ(ws.GetTensor("Y").dtype(), dtype);
  EXPECT_EQ(ws.GetTensor("dX").dtype(), dtype);
  return bits;
}

// Bits equal, or both NaN (which NaN comes out of a sum with several is not promised).
void ExpectSameValues(const Tensor& got, const Tensor& want, const std::string& what) {
  const std::vector<uint32_t> g = Bits(got), w = Bits(want);
  const std::vector<float> gf = ToFloatVector(got), wf = ToFloatVector(want);
  ASSERT_EQ(g.size(), w.size()) << what;
  int64_t differ = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    differ += g[i] != w[i] && !(std::isnan(gf[i]) && std::isnan(wf[i]));
  }
  EXPECT_EQ(differ, 0) << what << " differs in " << differ << " of " << g.size();
}

void ExpectSameBits(const std::map<std::string, std::vector<uint32_t>>& got,
                    const std::map<std::string, std::vector<uint32_t>>& want) {
  for (const auto& kv : want) {
    const std::vector<uint32_t>& g = got.at(kv.first);
    ASSERT_EQ(g.size(), kv.second.size()) << kv.first;
    int64_t differ = 0;
    for (size_t i = 0; i < g.size(); ++i) differ += g[i] != kv.second[i];
    EXPECT_EQ(differ, 0) << kv.first << " differs in " << differ << " of " << g.size();
  }
}

// (rows, C): channel tails (C % 16), two channel groups (C > 512), several row chunks (rows >
// kNhwcRowChunk, not a multiple of it), one row.
const std::vector<std::vector<int64_t>> kShapes{
    {2, 9, 17, 37}, {1, 3, 5, 600}, {3, 10, 11, 48}, {1, 1, 1, 20}};

TEST(SpatialBNNhwcTest, EveryWidthAndThreadCountGivesTheSameBits) {
  for (const DataType dtype : {DataType::FLOAT, DataType::BFLOAT16}) {
    for (const auto& dims : kShapes) {
      for (const bool fused : {false, true}) {
        SCOPED_TRACE(std::string(DataTypeName(dtype)) + " " + DimsString(dims) +
                     (fused ? " fused ReLU" : ""));
        const auto want = [&] {
          const ScopedVectorWidth cap(VectorWidth::kBaseline);
          return TrainingBits(dims, dtype, fused);
        }();
        for (const VectorWidth width : AvailableVectorWidths()) {
          if (width == VectorWidth::kBaseline) continue;
          SCOPED_TRACE(static_cast<int>(width));
          const ScopedVectorWidth cap(width);
          ExpectSameBits(TrainingBits(dims, dtype, fused), want);
        }
#ifdef _OPENMP
        const int threads = omp_get_max_threads();
        omp_set_num_threads(threads == 1 ? 2 : 1);
        const auto other = TrainingBits(dims, dtype, fused);
        omp_set_num_threads(threads);
        ExpectSameBits(other, want);
#endif
      }
    }
  }
}

// Against sums in double over the same values: mean, variance, Y, and the gradient.
TEST(SpatialBNNhwcTest, MatchesADoubleReference) {
  for (const DataType dtype : {DataType::FLOAT, DataType::BFLOAT16}) {
    const std::vector<int64_t> dims{2, 20, 15, 40};
    const int64_t C = 40, M = 2 * 20 * 15;
    SCOPED_TRACE(DataTypeName(dtype));
    Workspace ws;
    Tensor x = RandomTensor(dims, 81, -1.f, 4.f), dy = RandomTensor(dims, 82);
    if (dtype == DataType::BFLOAT16) {
      x = ToBFloat16(x);
      dy = ToBFloat16(dy);
    }
    const std::vector<float> xv = ToFloatVector(x), dyv = ToFloatVector(dy);
    const Tensor scale = RandomTensor({C}, 83, 0.5f, 1.5f), bias = RandomTensor({C}, 84);
    SetInput(&ws, "X", x);
    SetInput(&ws, "dY", dy);
    SetInput(&ws, "scale", scale);
    SetInput(&ws, "bias", bias);
    SetInput(&ws, "rm", Tensor());
    SetInput(&ws, "rv", Tensor());
    RunDefault(&ws, "SpatialBN", {"X", "scale", "bias", "rm", "rv"}, {"Y", "rm", "rv", "sm", "si"},
               Args(false, false));
    RunDefault(&ws, "SpatialBNGradient", {"X", "scale", "dY", "sm", "si"}, {"dX", "ds", "db"},
               Args(false, false));
    const float eps = 1e-4f;
    const std::vector<float> y = ToFloatVector(ws.GetTensor("Y"));
    const std::vector<float> dx = ToFloatVector(ws.GetTensor("dX"));
    const float* sm = ws.GetTensor("sm").data<float>();
    const float* ds = ws.GetTensor("ds").data<float>();
    const float* db = ws.GetTensor("db").data<float>();
    const float tol = dtype == DataType::FLOAT ? 1e-5f : 1e-2f;
    for (int64_t c = 0; c < C; ++c) {
      double mean = 0, var = 0, sdy = 0, sdyx = 0;
      for (int64_t r = 0; r < M; ++r) mean += xv[r * C + c];
      mean /= M;
      for (int64_t r = 0; r < M; ++r) var += (xv[r * C + c] - mean) * (xv[r * C + c] - mean);
      var /= M;
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t r = 0; r < M; ++r) {
        sdy += dyv[r * C + c];
        sdyx += dyv[r * C + c] * (xv[r * C + c] - mean) * inv;
      }
      EXPECT_NEAR(sm[c], mean, 1e-5 * (1 + std::abs(mean))) << c;
      EXPECT_NEAR(db[c], sdy, 1e-4 * (1 + std::abs(sdy))) << c;
      EXPECT_NEAR(ds[c], sdyx, 1e-4 * (1 + std::abs(sdyx))) << c;
      const double s = scale.data<float>()[c], b = bias.data<float>()[c];
      for (int64_t r = 0; r < M; r += 7) {
        const double xh = (xv[r * C + c] - mean) * inv;
        EXPECT_NEAR(y[r * C + c], xh * s + b, tol * (1 + std::abs(xh * s + b))) << r << " " << c;
        const double g = s * inv * (dyv[r * C + c] - sdy / M - xh * sdyx / M);
        EXPECT_NEAR(dx[r * C + c], g, tol * (1 + std::abs(g)) + 1e-5) << r << " " << c;
      }
    }
  }
}

// Test mode with scale s, mean 0, variance 1 - epsilon and bias 0 makes the ReLU's input x * s
// exactly. X holds the smallest bfloat16 subnormal (2^-133): times 0.4 it rounds to zero in
// bfloat16 (the stored ReLU output is 0, its gradient closed) though it is positive in float;
// times 0.6 it rounds up (open). NaN, -0, inf and ordinary values around them; NaN and inf in dY.
TEST(SpatialBNNhwcTest, FusedBFloat16GatesAsTheStoredOutput) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float tiny = BFloat16BitsToFloat(1);
  const int64_t C = 21, rows = 12;  // a 16-channel vector and a 5-channel tail
  std::vector<float> special{tiny, -tiny, 0.f, -0.f, nan, inf, -inf, 1.f, -1.f, 2 * tiny};
  std::vector<float> xv(static_cast<size_t>(rows * C)), dyv(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    xv[i] = i % 3 == 0 ? special[(i / 3) % special.size()] : 0.25f * static_cast<float>(i % 7) - 1;
    dyv[i] = i % 29 == 5 ? nan : i % 31 == 7 ? inf : 0.5f - 0.125f * static_cast<float>(i % 9);
  }
  std::vector<float> s(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) s[c] = c % 3 == 0 ? 0.4f : c % 3 == 1 ? 0.6f : -0.4f;
  const float eps = 1.f / 1024;  // 1 - eps and 1 are exact: the affine map is x * s[c] + 0
  for (const VectorWidth width : AvailableVectorWidths()) {
    SCOPED_TRACE(static_cast<int>(width));
    const ScopedVectorWidth cap(width);
    Workspace ws;
    SetInput(&ws, "X", ToBFloat16(FloatTensor({1, rows, 1, C}, xv)));
    SetInput(&ws, "dY", ToBFloat16(FloatTensor({1, rows, 1, C}, dyv)));
    SetInput(&ws, "scale", FloatTensor({C}, s));
    SetInput(&ws, "bias", FloatTensor({C}, std::vector<float>(static_cast<size_t>(C), 0.f)));
    SetInput(&ws, "mean", FloatTensor({C}, std::vector<float>(static_cast<size_t>(C), 0.f)));
    SetInput(&ws, "var", FloatTensor({C}, std::vector<float>(static_cast<size_t>(C), 1 - eps)));
    const std::vector<Argument> args = Args(true, false, eps), fused = Args(true, true, eps);
    RunDefault(&ws, "SpatialBN", {"X", "scale", "bias", "mean", "var"}, {"Z"}, args);
    RunDefault(&ws, "Relu", {"Z"}, {"R"}, {});
    RunDefault(&ws, "SpatialBN", {"X", "scale", "bias", "mean", "var"}, {"Y"}, fused);
    ExpectSameValues(ws.GetTensor("Y"), ws.GetTensor("R"), "Y");
    RunDefault(&ws, "ReluGradient", {"R", "dY"}, {"dZ"}, {});
    RunDefault(&ws, "SpatialBNGradient", {"X", "scale", "dZ", "mean", "var"}, {"dX", "ds", "db"},
               args);
    RunDefault(&ws, "SpatialBNGradient", {"X", "scale", "dY", "mean", "var", "bias"},
               {"dX2", "ds2", "db2"}, fused);
    for (const char* o : {"dX", "ds", "db"}) {
      ExpectSameValues(ws.GetTensor(std::string(o) + "2"), ws.GetTensor(o), o);
    }
    // The case the test is for: some gradient closed by rounding alone.
    const std::vector<float> r = ToFloatVector(ws.GetTensor("R"));
    int64_t rounded_shut = 0;
    for (size_t i = 0; i < xv.size(); ++i) {
      rounded_shut += xv[i] == tiny && s[i % C] == 0.4f && r[i] == 0.f;
    }
    EXPECT_GT(rounded_shut, 0);
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
