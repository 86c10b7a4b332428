// ConvTranspose / ConvTransposeGradient on CUDA (cuDNN) against the CPU operators: float and
// float16, NCHW 1-D to 3-D and NHWC 2-D, groups, dilations, symmetric and asymmetric pads, adj up
// to the stride (the planned buffer-and-crop path), every gradient output form, heuristic and
// exhaustive algorithm search. Skips without a GPU.
#include <gtest/gtest.h>

#include "tests/util/device_checker.h"

namespace halfcaf {
namespace testing {
namespace {

using V = std::vector<int64_t>;

struct Case {
  const char* name;
  V x_dims, w_dims;
  std::vector<Argument> args;
  int64_t C;  // Y's channels
};

std::vector<Case> Cases() {
  auto args = [](V k, V s, V p, V adj, int group, const char* order, V dil = {}) {
    std::vector<Argument> a{
        MakeArgument("kernels", k),   MakeArgument("strides", s),
        MakeArgument("pads", p),      MakeArgument("adjs", adj),
        MakeArgument("group", group), MakeArgument("order", std::string(order))};
    if (!dil.empty()) a.push_back(MakeArgument("dilations", dil));
    return a;
  };
  return {
      {"symmetric, adj 1",
       {2, 3, 5, 7},
       {3, 4, 3, 3},
       args({3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, "NCHW"),
       4},
      {"asymmetric, group 2",
       {2, 4, 4, 3},
       {4, 3, 3, 2},
       args({3, 2}, {2, 3}, {1, 0, 2, 1}, {0, 0}, 2, "NCHW"),
       6},
      {"adj == stride, large pads",
       {1, 2, 3, 3},
       {2, 3, 5, 3},
       args({5, 3}, {2, 2}, {3, 0, 3, 0}, {2, 1}, 1, "NCHW"),
       3},
      {"dilated",
       {1, 3, 3, 4},
       {3, 2, 3, 3},
       args({3, 3}, {1, 2}, {1, 2, 0, 1}, {0, 0}, 1, "NCHW", {2, 2}),
       2},
      {"NHWC symmetric",
       {2, 5, 7, 3},
       {3, 3, 3, 4},
       args({3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, "NHWC"),
       4},
      {"NHWC asymmetric group",
       {2, 4, 3, 4},
       {4, 3, 2, 3},
       args({3, 2}, {2, 3}, {1, 0, 2, 1}, {1, 2}, 2, "NHWC"),
       6},
      {"1-D", {2, 3, 7}, {3, 4, 3}, args({3}, {2}, {1, 2}, {1}, 1, "NCHW"), 4},
      {"3-D group",
       {1, 4, 3, 2, 4},
       {4, 1, 2, 3, 2},
       args({2, 3, 2}, {2, 1, 2}, {0, 1, 1, 1, 0, 0}, {1, 0, 0}, 2, "NCHW"),
       2},
  };
}

TEST(ConvTransposeGpuTest, Registered) {
  for (const char* type : {"ConvTranspose", "ConvTransposeGradient"}) {
    EXPECT_NE(OperatorRegistry::Find(DeviceType::CUDA, type, ""), nullptr) << type;
    EXPECT_NE(OperatorRegistry::Find(DeviceType::CUDA, type, "CUDNN"), nullptr) << type;
  }
}

TEST(ConvTransposeGpuTest, MatchesCpu) {
  REQUIRE_GPU();
  uint32_t seed = 1;
  for (const Case& c : Cases()) {
    // Y's dims from the CPU forward.
    std::map<std::string, Tensor> in{{"X", RandomTensor(c.x_dims, seed++)},
                                     {"W", RandomTensor(c.w_dims, seed++)},
                                     {"b", RandomTensor({c.C}, seed++)}};
    Workspace ws;
    RunOp(MakeOperatorDef("ConvTranspose", "", {"X", "W"}, {"Y"}, c.args), in, &ws);
    in["dY"] = RandomTensor(ws.GetTensor("Y").dims(), seed++);
    for (DataType dt : {DataType::FLOAT, DataType::FLOAT16}) {
      for (int exhaustive : {0, 1}) {
        SCOPED_TRACE(MakeString(c.name, " ", DataTypeName(dt), " exhaustive ", exhaustive));
        std::vector<Argument> args = c.args;
        args.push_back(MakeArgument("exhaustive_search", exhaustive));
        std::vector<Argument> no_bias = args;
        no_bias.push_back(MakeArgument("no_bias", 1));
        const auto data = AsDtype(in, dt);
        DeviceCheckOptions opts;
        opts.atol16 = opts.rtol16 = 2e-2f;
        const DeviceChecker check(opts);
        check.Check(MakeOperatorDef("ConvTranspose", "", {"X", "W", "b"}, {"Y"}, args), data);
        check.Check(MakeOperatorDef("ConvTranspose", "", {"X", "W"}, {"Y"}, args), data);
        check.Check(MakeOperatorDef("ConvTransposeGradient", "", {"X", "W", "dY"},
                                    {"dW", "db", "dX"}, args),
                    data);
        check.Check(
            MakeOperatorDef("ConvTransposeGradient", "", {"X", "W", "dY"}, {"dW", "db"}, args),
            data);
        check.Check(
            MakeOperatorDef("ConvTransposeGradient", "", {"X", "W", "dY"}, {"dW", "dX"}, no_bias),
            data);
      }
    }
  }
}

TEST(ConvTransposeGpuTest, EmptyBatchAndChannels) {
  REQUIRE_GPU();
  const auto args = std::vector<Argument>{MakeArgument("kernel", 3), MakeArgument("stride", 2)};
  // No input channels: Y is the bias; dbias still sums dY.
  const std::map<std::string, Tensor> in{{"X", RandomTensor({2, 0, 3, 3}, 1)},
                                         {"W", RandomTensor({0, 4, 3, 3}, 2)},
                                         {"b", RandomTensor({4}, 3)},
                                         {"dY", RandomTensor({2, 4, 7, 7}, 4)}};
  DeviceChecker().Check(MakeOperatorDef("ConvTranspose", "", {"X", "W", "b"}, {"Y"}, args), in);
  DeviceChecker().Check(
      MakeOperatorDef("ConvTransposeGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"}, args), in);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
