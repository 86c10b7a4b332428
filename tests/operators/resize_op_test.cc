#include <gtest/gtest.h>

#include <cmath>

#include "core/gradient.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

struct ResizeCase {
  float hs, ws;
  bool nhwc;
  std::string mode = "";     // coordinate_transformation_mode; "" = the op's default
  std::string nearest = "";  // ResizeNearest's nearest_mode; "" = default
};

std::vector<Argument> Args(const ResizeCase& c) {
  std::vector<Argument> a{MakeArgument("height_scale", c.hs), MakeArgument("width_scale", c.ws),
                          MakeArgument("order", std::string(c.nhwc ? "NHWC" : "NCHW"))};
  if (!c.mode.empty()) a.push_back(MakeArgument("coordinate_transformation_mode", c.mode));
  if (!c.nearest.empty()) a.push_back(MakeArgument("nearest_mode", c.nearest));
  return a;
}

std::vector<int64_t> Dims(bool nhwc, int64_t N, int64_t C, int64_t H, int64_t W) {
  return nhwc ? std::vector<int64_t>{N, H, W, C} : std::vector<int64_t>{N, C, H, W};
}

int64_t At(bool nhwc, int64_t C, int64_t H, int64_t W, int64_t n, int64_t c, int64_t h, int64_t w) {
  return nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

// ResizeNearest's source index from the definitions: Caffe2's float quotient by default, else
// the coordinate in double rounded by nearest_mode (halves down: ceil(src - 0.5); halves up:
// floor(src + 0.5)) and clamped.
int64_t NearestIndex(const ResizeCase& c, int64_t o, int64_t in, int64_t out, float s) {
  if ((c.mode.empty() || c.mode == "asymmetric") && (c.nearest.empty() || c.nearest == "floor")) {
    return std::min(static_cast<int64_t>(o / s), in - 1);
  }
  double src = 0;
  if (c.mode == "align_corners") {
    src = out > 1 ? o * double(in - 1) / double(out - 1) : 0.0;
  } else if (c.mode == "half_pixel") {
    src = (o + 0.5) / s - 0.5;
  } else if (c.mode == "pytorch_half_pixel") {
    src = out > 1 ? (o + 0.5) / s - 0.5 : 0.0;
  } else if (c.mode == "tf_half_pixel_for_nn") {
    src = (o + 0.5) / s;
  } else {
    src = o / double(s);
  }
  double i = std::floor(src);
  if (c.nearest == "ceil") i = std::ceil(src);
  if (c.nearest == "round_prefer_floor") i = std::ceil(src - 0.5);
  if (c.nearest == "round_prefer_ceil") i = std::floor(src + 0.5);
  return static_cast<int64_t>(std::min(std::max(i, 0.0), double(in - 1)));
}

std::vector<float> NaiveNearest(const ResizeCase& c, const Tensor& X, int64_t N, int64_t C,
                                int64_t H, int64_t W) {
  const int64_t OH = static_cast<int64_t>(H * c.hs), OW = static_cast<int64_t>(W * c.ws);
  std::vector<float> y(static_cast<size_t>(N * C * OH * OW));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t ch = 0; ch < C; ++ch) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t h = NearestIndex(c, oh, H, OH, c.hs);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t w = NearestIndex(c, ow, W, OW, c.ws);
          y[At(c.nhwc, C, OH, OW, n, ch, oh, ow)] =
              X.data<float>()[At(c.nhwc, C, H, W, n, ch, h, w)];
        }
      }
    }
  }
  return y;
}

// Bilinear sampling from the coordinate definitions, in double.
double Source(const std::string& mode, int64_t o, int64_t in, int64_t out, double s) {
  double src = 0;
  if (mode.empty() || mode == "align_corners") {
    src = out > 1 ? o * double(in - 1) / double(out - 1) : 0.0;
  } else if (mode == "half_pixel") {
    src = (o + 0.5) / s - 0.5;
  } else if (mode == "pytorch_half_pixel") {
    src = out > 1 ? (o + 0.5) / s - 0.5 : 0.0;
  } else {
    src = o / s;
  }
  return std::min(std::max(src, 0.0), double(in - 1));
}

std::vector<float> NaiveBilinear(const ResizeCase& c, const Tensor& X, int64_t N, int64_t C,
                                 int64_t H, int64_t W) {
  const int64_t OH = static_cast<int64_t>(H * c.hs), OW = static_cast<int64_t>(W * c.ws);
  std::vector<float> y(static_cast<size_t>(N * C * OH * OW));
  const float* x = X.data<float>();
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t ch = 0; ch < C; ++ch) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        const double sy = Source(c.mode, oh, H, OH, c.hs);
        const int64_t y0 = static_cast<int64_t>(sy), y1 = std::min(y0 + 1, H - 1);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const double sx = Source(c.mode, ow, W, OW, c.ws);
          const int64_t x0 = static_cast<int64_t>(sx), x1 = std::min(x0 + 1, W - 1);
          const double ly = sy - y0, lx = sx - x0;
          auto v = [&](int64_t h, int64_t w) {
            return double(x[At(c.nhwc, C, H, W, n, ch, h, w)]);
          };
          y[At(c.nhwc, C, OH, OW, n, ch, oh, ow)] =
              static_cast<float>((1 - ly) * ((1 - lx) * v(y0, x0) + lx * v(y0, x1)) +
                                 ly * ((1 - lx) * v(y1, x0) + lx * v(y1, x1)));
        }
      }
    }
  }
  return y;
}

std::vector<ResizeCase> Cases() {
  std::vector<ResizeCase> cases;
  for (bool nhwc : {false, true}) {
    for (auto hw : std::vector<std::pair<float, float>>{
             {2.f, 2.f}, {1.5f, 2.5f}, {0.5f, 0.7f}, {3.f, 1.f}, {0.34f, 1.9f}}) {
      cases.push_back({hw.first, hw.second, nhwc});
    }
  }
  return cases;
}

const char* const kModes[] = {"", "align_corners", "half_pixel", "pytorch_half_pixel",
                              "asymmetric"};

// ResizeNearest's (coordinate_transformation_mode, nearest_mode) pairs under test.
const std::pair<const char*, const char*> kNearestModes[] = {
    {"", ""},
    {"asymmetric", "floor"},
    {"half_pixel", "round_prefer_floor"},
    {"half_pixel", "ceil"},
    {"align_corners", "floor"},
    {"align_corners", "round_prefer_floor"},
    {"asymmetric", "round_prefer_ceil"},
    {"pytorch_half_pixel", "round_prefer_ceil"},
    {"tf_half_pixel_for_nn", "round_prefer_floor"},
    {"tf_half_pixel_for_nn", ""},
};

// The cases of `type`: ResizeNearest with each pair above, ResizeBilinear with each kModes.
std::vector<ResizeCase> WithModes(const ResizeCase& c, const std::string& type) {
  std::vector<ResizeCase> out;
  if (type == "ResizeNearest") {
    for (const auto& m : kNearestModes) out.push_back({c.hs, c.ws, c.nhwc, m.first, m.second});
  } else {
    for (const char* m : kModes) out.push_back({c.hs, c.ws, c.nhwc, m});
  }
  return out;
}

std::string Name(const ResizeCase& c) {
  return MakeString(c.nhwc ? "NHWC" : "NCHW", " scales ", c.hs, " x ", c.ws, " mode '", c.mode,
                    "' nearest_mode '", c.nearest, "'");
}

TEST(ResizeOpTest, NearestHandComputedValues) {
  const Tensor X = FloatTensor({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  // Rows o / 2 -> 0 0 1 1; columns floor(o / 1.5) -> 0 0 1 2.
  Workspace ws;
  RunOp(MakeOperatorDef("ResizeNearest", "", {"X"}, {"Y"}, Args({2.f, 1.5f, false})), {{"X", X}},
        &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{1, 1, 4, 4}));
  ExpectNear(ToFloatVector(ws.GetTensor("Y")), {1, 1, 2, 3, 1, 1, 2, 3, 4, 4, 5, 6, 4, 4, 5, 6},
             0.f, 0.f);
  // Down: floor(4 * 0.5) x floor(5 * 0.5) = 2 x 2, reading rows and columns 0 and 2.
  const Tensor X2 = FloatTensor(
      {1, 1, 4, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19});
  ExpectNear(
      RunAndGet(MakeOperatorDef("ResizeNearest", "", {"X"}, {"Y"}, Args({0.5f, 0.5f, false})),
                {{"X", X2}}),
      {0, 2, 10, 12}, 0.f, 0.f);
}

// One row of 4 resized to 8 (scale 2) or 1 (scale 0.25) columns: the input index each output
// reads, worked out by hand from the coordinate definitions.
TEST(ResizeOpTest, NearestModesHandComputedIndices) {
  const Tensor X = FloatTensor({1, 1, 1, 4}, {0, 1, 2, 3});
  auto run = [&](const std::string& mode, const std::string& nearest, float ws) {
    return RunAndGet(
        MakeOperatorDef("ResizeNearest", "", {"X"}, {"Y"}, Args({1.f, ws, false, mode, nearest})),
        {{"X", X}});
  };
  using V = std::vector<float>;
  // half_pixel: src = o / 2 - 0.25 = -0.25, 0.25, 0.75, ..., 3.25.
  ExpectNear(run("half_pixel", "round_prefer_floor", 2.f), V{0, 0, 1, 1, 2, 2, 3, 3}, 0.f, 0.f);
  ExpectNear(run("half_pixel", "ceil", 2.f), V{0, 1, 1, 2, 2, 3, 3, 3}, 0.f, 0.f);
  ExpectNear(run("half_pixel", "floor", 2.f), V{0, 0, 0, 1, 1, 2, 2, 3}, 0.f, 0.f);
  // asymmetric: src = o / 2, the halves rounded up or down.
  ExpectNear(run("asymmetric", "round_prefer_ceil", 2.f), V{0, 1, 1, 2, 2, 3, 3, 3}, 0.f, 0.f);
  ExpectNear(run("asymmetric", "round_prefer_floor", 2.f), V{0, 0, 1, 1, 2, 2, 3, 3}, 0.f, 0.f);
  ExpectNear(run("", "", 2.f), V{0, 0, 1, 1, 2, 2, 3, 3}, 0.f, 0.f);
  // align_corners: src = 3 o / 7 = 0, 0.43, 0.86, 1.29, 1.71, 2.14, 2.57, 3.
  ExpectNear(run("align_corners", "floor", 2.f), V{0, 0, 0, 1, 1, 2, 2, 3}, 0.f, 0.f);
  ExpectNear(run("align_corners", "round_prefer_floor", 2.f), V{0, 0, 1, 1, 2, 2, 3, 3}, 0.f,
             0.f);
  // tf_half_pixel_for_nn: src = (o + 0.5) / 2 = 0.25, 0.75, ..., 3.75.
  ExpectNear(run("tf_half_pixel_for_nn", "", 2.f), V{0, 0, 1, 1, 2, 2, 3, 3}, 0.f, 0.f);
  ExpectNear(run("tf_half_pixel_for_nn", "round_prefer_ceil", 2.f), V{0, 1, 1, 2, 2, 3, 3, 3},
             0.f, 0.f);
  // One output: half_pixel samples 1.5, pytorch_half_pixel and align_corners 0.
  ExpectNear(run("half_pixel", "round_prefer_floor", 0.25f), V{1}, 0.f, 0.f);
  ExpectNear(run("half_pixel", "round_prefer_ceil", 0.25f), V{2}, 0.f, 0.f);
  ExpectNear(run("pytorch_half_pixel", "round_prefer_ceil", 0.25f), V{0}, 0.f, 0.f);
  ExpectNear(run("align_corners", "ceil", 0.25f), V{0}, 0.f, 0.f);
}

// Gradient: each dY element goes to the pixel its output read (half_pixel + ceil from above:
// inputs 0..3 are read by outputs {0}, {1, 2}, {3, 4}, {5, 6, 7}).
TEST(ResizeOpTest, NearestModeGradientSumsIntoThePixelRead) {
  const Tensor X = FloatTensor({1, 1, 1, 4}, {0, 1, 2, 3});
  const Tensor dY = FloatTensor({1, 1, 1, 8}, {1, 2, 4, 8, 16, 32, 64, 128});
  ExpectNear(RunAndGet(MakeOperatorDef("ResizeNearestGradient", "", {"dY", "X"}, {"dX"},
                                       Args({1.f, 2.f, false, "half_pixel", "ceil"})),
                       {{"X", X}, {"dY", dY}}),
             {1, 6, 24, 224}, 0.f, 0.f);
}

TEST(ResizeOpTest, BilinearHandComputedValues) {
  const Tensor X = FloatTensor({1, 1, 1, 2}, {0.f, 1.f});
  auto run = [&](const std::string& mode, float ws) {
    return RunAndGet(
        MakeOperatorDef("ResizeBilinear", "", {"X"}, {"Y"}, Args({1.f, ws, false, mode})),
        {{"X", X}});
  };
  ExpectNear(run("", 2.f), {0.f, 1.f / 3, 2.f / 3, 1.f}, 1e-7f, 0.f);  // Caffe2's align_corners
  ExpectNear(run("half_pixel", 2.f), {0.f, 0.25f, 0.75f, 1.f}, 0.f, 0.f);
  ExpectNear(run("pytorch_half_pixel", 2.f), {0.f, 0.25f, 0.75f, 1.f}, 0.f, 0.f);
  ExpectNear(run("asymmetric", 2.f), {0.f, 0.5f, 1.f, 1.f}, 0.f, 0.f);
  // One output column: half_pixel samples the middle, pytorch_half_pixel and align_corners 0.
  ExpectNear(run("half_pixel", 0.5f), {0.5f}, 0.f, 0.f);
  ExpectNear(run("pytorch_half_pixel", 0.5f), {0.f}, 0.f, 0.f);
  ExpectNear(run("align_corners", 0.5f), {0.f}, 0.f, 0.f);
}

TEST(ResizeOpTest, MatchDefinitions) {
  uint32_t seed = 1;
  for (ResizeCase c : Cases()) {
    const Tensor X = RandomTensor(Dims(c.nhwc, 2, 3, 5, 7), seed++);
    for (const ResizeCase& n : WithModes(c, "ResizeNearest")) {
      SCOPED_TRACE("ResizeNearest " + Name(n));
      Workspace ws;
      RunOp(MakeOperatorDef("ResizeNearest", "", {"X"}, {"Y"}, Args(n)), {{"X", X}}, &ws);
      EXPECT_EQ(ws.GetTensor("Y").dims(), Dims(c.nhwc, 2, 3, int64_t(5 * c.hs), int64_t(7 * c.ws)));
      ExpectNear(ToFloatVector(ws.GetTensor("Y")), NaiveNearest(n, X, 2, 3, 5, 7), 0.f, 0.f);
    }
    for (const char* mode : kModes) {
      c.mode = mode;
      SCOPED_TRACE("ResizeBilinear " + Name(c));
      ExpectNear(
          RunAndGet(MakeOperatorDef("ResizeBilinear", "", {"X"}, {"Y"}, Args(c)), {{"X", X}}),
          NaiveBilinear(c, X, 2, 3, 5, 7), 1e-6f, 1e-5f);
    }
  }
}

TEST(ResizeOpTest, ScalesInputReplacesArguments) {
  const Tensor X = RandomTensor({2, 3, 5, 7}, 3);
  const Tensor scales = FloatTensor({2}, {1.5f, 0.6f});
  for (const char* type : {"ResizeNearest", "ResizeBilinear"}) {
    SCOPED_TRACE(type);
    const auto want =
        RunAndGet(MakeOperatorDef(type, "", {"X"}, {"Y"}, Args({1.5f, 0.6f, false})), {{"X", X}});
    Workspace ws;
    RunOp(MakeOperatorDef(type, "", {"X", "scales"}, {"Y"}, Args({3.f, 3.f, false})),
          {{"X", X}, {"scales", scales}}, &ws);
    EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{2, 3, 7, 4}));
    ExpectNear(ToFloatVector(ws.GetTensor("Y")), want, 0.f, 0.f);
    // The gradient with the scales as its third input.
    SetInput(&ws, "dY", RandomTensor({2, 3, 7, 4}, 4));
    RunOp(MakeOperatorDef(std::string(type) + "Gradient", "", {"dY", "X", "scales"}, {"dX"},
                          Args({3.f, 3.f, false})),
          {}, &ws);
    RunOp(MakeOperatorDef(std::string(type) + "Gradient", "", {"dY", "X"}, {"dX2"},
                          Args({1.5f, 0.6f, false})),
          {}, &ws);
    ExpectNear(ToFloatVector(ws.GetTensor("dX")), ToFloatVector(ws.GetTensor("dX2")), 0.f, 0.f);
  }
}

// The gradient is the adjoint of the (linear) forward op: <Resize(x), dy> == <x, dX(dy)>.
TEST(ResizeOpTest, GradientIsTheAdjoint) {
  uint32_t seed = 20;
  for (const ResizeCase& base : Cases()) {
    for (const char* type : {"ResizeNearest", "ResizeBilinear"}) {
      for (const ResizeCase& c : WithModes(base, type)) {
        SCOPED_TRACE(std::string(type) + " " + Name(c));
        const Tensor X = RandomTensor(Dims(c.nhwc, 2, 3, 5, 7), seed++);
        Workspace ws;
        RunOp(MakeOperatorDef(type, "", {"X"}, {"Y"}, Args(c)), {{"X", X}}, &ws);
        const Tensor dY = RandomTensor(ws.GetTensor("Y").dims(), seed++);
        SetInput(&ws, "dY", dY);
        RunOp(MakeOperatorDef(std::string(type) + "Gradient", "", {"dY", "X"}, {"dX"}, Args(c)), {},
              &ws);
        EXPECT_EQ(ws.GetTensor("dX").dims(), X.dims());
        double lhs = 0, rhs = 0;
        const auto y = ToFloatVector(ws.GetTensor("Y")), dy = ToFloatVector(dY),
                   x = ToFloatVector(X), dx = ToFloatVector(ws.GetTensor("dX"));
        for (size_t i = 0; i < y.size(); ++i) lhs += double(y[i]) * dy[i];
        for (size_t i = 0; i < x.size(); ++i) rhs += double(x[i]) * dx[i];
        EXPECT_NEAR(lhs, rhs, 1e-4 * std::max(1.0, std::fabs(lhs)));
      }
    }
  }
}

TEST(ResizeOpTest, GradientMatchesFiniteDifferences) {
  for (const ResizeCase& c :
       {ResizeCase{1.5f, 2.5f, false}, ResizeCase{0.6f, 1.3f, true},
        ResizeCase{2.f, 0.5f, false, "half_pixel"}, ResizeCase{1.7f, 1.4f, true, "asymmetric"},
        ResizeCase{1.5f, 0.6f, false, "half_pixel", "round_prefer_ceil"},
        ResizeCase{2.5f, 1.3f, true, "align_corners", "ceil"},
        ResizeCase{0.7f, 1.7f, false, "tf_half_pixel_for_nn", "round_prefer_floor"}}) {
    for (const char* type : {"ResizeNearest", "ResizeBilinear"}) {
      // Cases with a nearest_mode are ResizeNearest's; other modes ResizeBilinear's.
      const bool nearest = std::string(type) == "ResizeNearest";
      if (nearest ? !c.mode.empty() && c.nearest.empty() : !c.nearest.empty()) continue;
      SCOPED_TRACE(std::string(type) + " " + Name(c));
      GradientChecker().Check(MakeOperatorDef(type, "", {"X"}, {"Y"}, Args(c)),
                              {{"X", RandomTensor(Dims(c.nhwc, 2, 2, 4, 5), 7)}}, 0, 0);
    }
  }
}

TEST(ResizeOpTest, GradientMakerFollowsCaffe2) {
  auto names = [](const google::protobuf::RepeatedPtrField<std::string>& r) {
    return std::vector<std::string>(r.begin(), r.end());
  };
  std::vector<GradientWrapper> g(1);
  g[0].dense = "Y_grad";
  for (const std::string type : {"ResizeNearest", "ResizeBilinear"}) {
    OperatorDef op =
        GetGradientForOp(MakeOperatorDef(type, "", {"X"}, {"Y"}, Args({2.f, 2.f, false})), g)
            .ops.at(0);
    EXPECT_EQ(op.type(), type + "Gradient");
    EXPECT_EQ(names(op.input()), (std::vector<std::string>{"Y_grad", "X"}));
    EXPECT_EQ(names(op.output()), (std::vector<std::string>{"X_grad"}));
    EXPECT_EQ(ArgumentHelper(op).GetSingleArgument<float>("height_scale", 0.f), 2.f);
    op = GetGradientForOp(MakeOperatorDef(type, "", {"X", "s"}, {"Y"}), g).ops.at(0);
    EXPECT_EQ(names(op.input()), (std::vector<std::string>{"Y_grad", "X", "s"}));
  }
}

TEST(ResizeOpTest, Fp16MatchesFp32) {
  uint32_t seed = 40;
  for (const ResizeCase& base : Cases()) {
    for (const char* type : {"ResizeNearest", "ResizeBilinear"}) {
      for (const ResizeCase& c : WithModes(base, type)) {
        SCOPED_TRACE(std::string(type) + " " + Name(c));
        const Tensor X = RandomTensor(Dims(c.nhwc, 2, 3, 5, 7), seed++);
        CheckFp16MatchesFp32(MakeOperatorDef(type, "", {"X"}, {"Y"}, Args(c)), {{"X", X}}, {"X"});
        Workspace ws;
        RunOp(MakeOperatorDef(type, "", {"X"}, {"Y"}, Args(c)), {{"X", X}}, &ws);
        CheckFp16MatchesFp32(
            MakeOperatorDef(std::string(type) + "Gradient", "", {"dY", "X"}, {"dX"}, Args(c)),
            {{"X", X}, {"dY", RandomTensor(ws.GetTensor("Y").dims(), seed++)}}, {"X", "dY"}, {0},
            3e-3f, 3e-3f);
      }
    }
  }
}

TEST(ResizeOpTest, ShapeInference) {
  const OpSchema* s = OpSchemaRegistry::Schema("ResizeBilinear");
  ASSERT_NE(s, nullptr);
  const auto def = MakeOperatorDef("ResizeBilinear", "", {"X"}, {"Y"}, Args({1.5f, 0.5f, true}));
  const auto out = s->InferShapes(def, {TensorShape{{2, 5, 7, 3}, DataType::FLOAT16}});
  EXPECT_EQ(out.at(0).dims, (std::vector<int64_t>{2, 7, 3, 3}));
  EXPECT_EQ(out.at(0).dtype, DataType::FLOAT16);
  // With a scales input the shape depends on its values.
  const auto def2 = MakeOperatorDef("ResizeBilinear", "", {"X", "s"}, {"Y"});
  EXPECT_TRUE(s->InferShapes(def2, {TensorShape{{2, 5, 7, 3}}, TensorShape{{2}}}).at(0).unknown);
}

TEST(ResizeOpTest, BadInputIsOneClearError) {
  const Tensor X = RandomTensor({1, 2, 3, 3}, 1);
  ExpectError(MakeOperatorDef("ResizeNearest", "", {"X"}, {"Y"}),
              {{"X", RandomTensor({2, 3, 3}, 1)}}, "X must be 4-D (N, C, H, W), got [2, 3, 3]");
  ExpectError(
      MakeOperatorDef("ResizeNearest", "", {"X"}, {"Y"}, {MakeArgument("height_scale", 0.f)}),
      {{"X", X}}, "height_scale must be a positive finite number, got 0");
  ExpectError(MakeOperatorDef("ResizeBilinear", "", {"X", "s"}, {"Y"}),
              {{"X", X}, {"s", FloatTensor({3}, {1.f, 2.f, 3.f})}},
              "the scales input must be a 1-D float tensor [height_scale, width_scale]");
  ExpectError(MakeOperatorDef("ResizeBilinear", "", {"X", "s"}, {"Y"}),
              {{"X", X}, {"s", FloatTensor({2}, {1.f, -2.f})}}, "scales[1] (width_scale)");
  ExpectError(MakeOperatorDef("ResizeBilinear", "", {"X"}, {"Y"},
                              {MakeArgument("coordinate_transformation_mode",
                                            std::string("tf_crop_and_resize"))}),
              {{"X", X}}, "unknown coordinate_transformation_mode 'tf_crop_and_resize'");
  ExpectError(MakeOperatorDef("ResizeBilinear", "", {"X"}, {"Y"},
                              {MakeArgument("coordinate_transformation_mode",
                                            std::string("tf_half_pixel_for_nn"))}),
              {{"X", X}}, "unknown coordinate_transformation_mode 'tf_half_pixel_for_nn'");
  ExpectError(
      MakeOperatorDef("ResizeBilinear", "", {"X"}, {"Y"},
                      {MakeArgument("nearest_mode", std::string("floor"))}),
      {{"X", X}}, "nearest_mode applies to ResizeNearest only");
  ExpectError(MakeOperatorDef("ResizeNearest", "", {"X"}, {"Y"},
                              {MakeArgument("nearest_mode", std::string("round"))}),
              {{"X", X}}, "unknown nearest_mode 'round' (expected floor, ceil");
  ExpectError(MakeOperatorDef("ResizeNearestGradient", "", {"dY", "X"}, {"dX"},
                              {MakeArgument("coordinate_transformation_mode",
                                            std::string("tf_crop_and_resize"))}),
              {{"X", X}, {"dY", X}},
              "or tf_half_pixel_for_nn)");
  ExpectError(MakeOperatorDef("ResizeNearestGradient", "", {"dY", "X"}, {"dX"},
                              {MakeArgument("height_scale", 2.f)}),
              {{"X", X}, {"dY", RandomTensor({1, 2, 6, 4}, 2)}},
              "dY has dims [1, 2, 6, 4] but resizing X by (height_scale 2, width_scale 1) gives "
              "[1, 2, 6, 3]");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
