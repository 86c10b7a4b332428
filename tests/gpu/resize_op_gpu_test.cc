// ResizeNearest / ResizeBilinear and their gradients on CUDA against the CPU operators: float and
// float16, NCHW and NHWC, up- and down-scaling, every bilinear coordinate mode and ResizeNearest's
// coordinate / nearest_mode pairs, the scales input on the host and on the device, mixed gradient
// dtypes. Skips without a GPU.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

std::vector<Argument> Args(float hs, float ws, bool nhwc, const char* mode,
                           const char* nearest = "") {
  std::vector<Argument> a{MakeArgument("height_scale", hs), MakeArgument("width_scale", ws),
                          MakeArgument("order", std::string(nhwc ? "NHWC" : "NCHW"))};
  if (mode[0] != '\0')
    a.push_back(MakeArgument("coordinate_transformation_mode", std::string(mode)));
  if (nearest[0] != '\0') a.push_back(MakeArgument("nearest_mode", std::string(nearest)));
  return a;
}

// (coordinate_transformation_mode, nearest_mode) pairs: ResizeBilinear's modes (no
// nearest_mode), then ResizeNearest's.
const std::pair<const char*, const char*> kBilinearModes[] = {
    {"", ""}, {"half_pixel", ""}, {"pytorch_half_pixel", ""}, {"asymmetric", ""}};
const std::pair<const char*, const char*> kNearestModes[] = {
    {"", ""},
    {"half_pixel", "round_prefer_floor"},
    {"half_pixel", "ceil"},
    {"align_corners", "floor"},
    {"asymmetric", "round_prefer_ceil"},
    {"pytorch_half_pixel", "round_prefer_ceil"},
    {"tf_half_pixel_for_nn", "round_prefer_floor"}};

TEST(ResizeGpuTest, Registered) {
  for (const char* type :
       {"ResizeNearest", "ResizeBilinear", "ResizeNearestGradient", "ResizeBilinearGradient"}) {
    EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, type)) << type;
  }
}

TEST(ResizeGpuTest, MatchesCpu) {
  REQUIRE_GPU();
  uint32_t seed = 1;
  for (bool nhwc : {false, true}) {
    const std::vector<int64_t> dims =
        nhwc ? std::vector<int64_t>{2, 9, 13, 3} : std::vector<int64_t>{2, 3, 9, 13};
    for (auto s : std::vector<std::pair<float, float>>{{2.f, 2.f}, {1.7f, 0.45f}, {0.5f, 3.f}}) {
      for (const char* type : {"ResizeNearest", "ResizeBilinear"}) {
        const bool bilinear = std::string(type) == "ResizeBilinear";
        for (const auto& m : bilinear ? std::vector<std::pair<const char*, const char*>>(
                                             std::begin(kBilinearModes), std::end(kBilinearModes))
                                       : std::vector<std::pair<const char*, const char*>>(
                                             std::begin(kNearestModes), std::end(kNearestModes))) {
          const char* mode = m.first;
          const auto args = Args(s.first, s.second, nhwc, mode, m.second);
          const Tensor x = RandomTensor(dims, seed++);
          Workspace ws;
          RunOp(MakeOperatorDef(type, "", {"X"}, {"Y"}, args), {{"X", x}}, &ws);
          const std::map<std::string, Tensor> in{
              {"X", x}, {"dY", RandomTensor(ws.GetTensor("Y").dims(), seed++)}};
          for (DataType dt : {DataType::FLOAT, DataType::FLOAT16}) {
            SCOPED_TRACE(MakeString(type, nhwc ? " NHWC" : " NCHW", " scales ", s.first, " x ",
                                    s.second, " mode '", mode, "' nearest_mode '", m.second, "' ",
                                    DataTypeName(dt)));
            const auto data = AsDtype(in, dt);
            DeviceChecker().Check(MakeOperatorDef(type, "", {"X"}, {"Y"}, args), data);
            DeviceChecker().Check(
                MakeOperatorDef(std::string(type) + "Gradient", "", {"dY", "X"}, {"dX"}, args),
                data);
          }
          // float16 X with float dY: dX follows X.
          DeviceChecker().Check(
              MakeOperatorDef(std::string(type) + "Gradient", "", {"dY", "X"}, {"dX"}, args),
              {{"X", ToHalf(x)}, {"dY", in.at("dY")}});
        }
      }
    }
  }
}

TEST(ResizeGpuTest, ScalesInputOnHostOrDevice) {
  REQUIRE_GPU();
  const Tensor x = RandomTensor({2, 3, 5, 7}, 3);
  const Tensor scales = FloatTensor({2}, {1.5f, 0.6f});
  const Tensor dy = RandomTensor({2, 3, 7, 4}, 4);
  for (const char* type : {"ResizeNearest", "ResizeBilinear"}) {
    SCOPED_TRACE(type);
    const auto fwd = MakeOperatorDef(type, "", {"X", "scales"}, {"Y"});
    const auto grad =
        MakeOperatorDef(std::string(type) + "Gradient", "", {"dY", "X", "scales"}, {"dX"});
    const std::map<std::string, Tensor> in{{"X", x}, {"scales", scales}, {"dY", dy}};
    for (const std::set<std::string>& host :
         {std::set<std::string>{"scales"}, std::set<std::string>{}}) {
      for (const OperatorDef& def : {fwd, grad}) {
        const CpuCudaOutputs out = RunCpuAndCuda(def, in, host, 2);
        ExpectNear(ToFloatVector(out.cuda[0]), ToFloatVector(out.cpu[0]), 1e-5f, 1e-5f, def.type());
      }
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
