// FC / FCTransposed and their gradients on bfloat16: oneDNN's BF16 matmul (operators/math/gemm_dnnl.h)
// when the CPU has BF16 instructions, the emulated path (float BLAS on converted copies) when it
// does not or when HALFCAF_DNNL_BF16=0. Both agree with each other and with FP32 within bfloat16
// tolerance.
#include <gtest/gtest.h>

#include <optional>

#include "tests/util/bf16_switch.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

struct FcCase {
  bool transposed;
  std::vector<int64_t> x, w;  // W: (N, K) for FC, (K, N) for FCTransposed
  int64_t N;
};

std::vector<FcCase> Cases() {
  return {{false, {6, 40}, {24, 40}, 24},
          {false, {3, 2, 5, 7}, {17, 70}, 17},  // axis 1 flattens 2 x 5 x 7
          {true, {5, 33}, {33, 9}, 9}};
}

std::map<std::string, Tensor> Inputs(const FcCase& c, uint32_t seed) {
  int64_t M = c.x[0];
  return {{"X", RandomTensor(c.x, seed)},
          {"W", RandomTensor(c.w, seed + 1, -0.5f, 0.5f)},
          {"b", RandomTensor({c.N}, seed + 2)},
          {"dY", RandomTensor({M, c.N}, seed + 3)}};
}

std::vector<OperatorDef> Defs(const FcCase& c) {
  const std::string type = c.transposed ? "FCTransposed" : "FC";
  return {MakeOperatorDef(type, "", {"X", "W", "b"}, {"Y"}),
          MakeOperatorDef(type + "Gradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"}),
          MakeOperatorDef(type + "Gradient", "", {"X", "W", "dY"}, {"dW", "db"})};
}

TEST(FCBFloat16Test, FastPathMatchesEmulatedPath) {
  uint32_t seed = 70;
  for (const FcCase& c : Cases()) {
    std::map<std::string, Tensor> in;
    for (const auto& kv : Inputs(c, seed)) in[kv.first] = ToBFloat16(kv.second);
    seed += 10;
    for (const OperatorDef& def : Defs(c)) {
      SCOPED_TRACE(def.type() + " X " + DimsString(c.x));
      // Forward: one product; gradient: dW, and dX when asked for.
      const bool gradient = def.type().find("Gradient") != std::string::npos;
      ExpectBFloat16PathsAgree(def, in, gradient && def.output_size() == 3 ? 2 : 1);
    }
  }
}

TEST(FCBFloat16Test, AgreesWithFloat32) {
  for (bool off : {false, true}) {
    std::optional<ScopedBf16Off> s;
    if (off) s.emplace();
    SCOPED_TRACE(off ? "BF16 kernels off" : "BF16 kernels as the environment says");
    uint32_t seed = 90;
    for (const FcCase& c : Cases()) {
      const auto in = Inputs(c, seed);
      seed += 10;
      const std::vector<OperatorDef> defs = Defs(c);
      CheckLowPrecisionMatchesFp32(defs[0], in, {"X", "W", "b"}, DataType::BFLOAT16, {0}, 3e-2f,
                                   8e-3f);
      CheckLowPrecisionMatchesFp32(defs[1], in, {"X", "W", "dY"}, DataType::BFLOAT16, {0, 1, 2},
                                   3e-2f, 8e-3f);
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
