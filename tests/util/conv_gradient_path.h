// For the oneDNN engine's alternative BF16 convolution-gradient paths (the 1 x 1 matrix products,
// the im2col filter gradient): runs the gradient op on bfloat16 inputs with and without the path
// and checks that it ran exactly when it should and that its outputs are those of the convolution
// primitives and of the float32 default op within one bfloat16 rounding.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/util/bf16_switch.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {

// Runs `def` on `fp32_in` rounded to bfloat16, with its outputs (dW, dX) holding stale values
// first; `runs` (the path's counter) must grow by one exactly when `path` is true. Then runs it
// with the environment variable `off_env` = 0 (the convolution primitives), and the float32
// default op over the rounded values. Outputs named in `exact` must equal the primitives' bit for
// bit (what the path leaves to them); the others agree within bfloat16 tolerance.
inline void ExpectConvGradientPathAgrees(const OperatorDef& def,
                                         const std::map<std::string, Tensor>& fp32_in,
                                         std::atomic<int64_t>& runs, bool path, const char* off_env,
                                         uint32_t seed, const std::set<std::string>& exact = {}) {
  std::map<std::string, Tensor> in, rounded;
  for (const auto& kv : fp32_in) {
    in[kv.first] = ToBFloat16(kv.second);
    rounded[kv.first] = RoundThroughBFloat16(kv.second);
  }
  const int64_t before = runs;
  std::map<std::string, Tensor> stale = in;
  stale["dW"] = ToBFloat16(RandomTensor(in.at("W").dims(), seed + 50, 5.f, 9.f));
  if (def.output_size() > 0 && def.output(def.output_size() - 1) == "dX") {
    stale["dX"] = ToBFloat16(RandomTensor(in.at("X").dims(), seed + 60, 5.f, 9.f));
  }
  Workspace run_ws;
  RunOp(def, stale, &run_ws);
  EXPECT_EQ(runs - before, path ? 1 : 0);
  std::vector<Tensor> conv;
  {
    ScopedEnv off(off_env, "0");
    conv = RunOpOutputs(def, in);
  }
  EXPECT_EQ(runs - before, path ? 1 : 0) << "switched off";
  Workspace ws;
  RunWithEngine(def, rounded, "", &ws);
  ASSERT_EQ(static_cast<size_t>(def.output_size()), conv.size());
  for (int i = 0; i < def.output_size(); ++i) {
    const std::string& name = def.output(i);
    const Tensor& got = run_ws.GetTensor(name);
    EXPECT_EQ(got.dtype(), DataType::BFLOAT16) << name;
    if (exact.count(name) != 0) {
      EXPECT_EQ(ToFloatVector(got), ToFloatVector(conv[i])) << name << " bit for bit";
      continue;
    }
    ExpectNear(ToFloatVector(got), ToFloatVector(conv[i]), 2e-2f, 8e-3f,
               name + " against the convolution primitives");
    ExpectNear(ToFloatVector(got), ToFloatVector(ws.GetTensor(name)), 1e-2f, 4e-3f,
               name + " against float32");
  }
}

}  // namespace testing
}  // namespace halfcaf
