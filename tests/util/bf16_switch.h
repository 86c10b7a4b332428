// ScopedEnv sets an environment variable for a scope. ScopedBf16Off sets HALFCAF_DNNL_BF16=0 for a
// scope (restored after), so the operators that would run bfloat16 on oneDNN's BF16 kernels take
// the emulated path. Without it the tests run as the environment says: `HALFCAF_DNNL_BF16=0
// operators_tests` is a CPU without BF16 instructions.
// ExpectBFloat16PathsAgree runs an op both ways and compares. WithAndWithoutBFloat16Vectors runs a
// check on the AVX-512F bfloat16 vectors of the element-wise ops and on their scalar loops (the
// vector width capped to the baseline).
#pragma once

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "tests/util/op_test_util.h"
#include "tests/util/vector_width.h"

#ifdef HALFCAF_WITH_DNNL
#include "operators/dnnl_util.h"
#endif

namespace halfcaf {
namespace testing {

// f() on the element-wise ops' bfloat16 vectors (operators/math/bf16_vector_loops.h, where the
// CPU has AVX-512F), then on their scalar loops (the loops of a CPU without it).
inline void WithAndWithoutBFloat16Vectors(const std::function<void()>& f) {
  for (const bool vectors : {true, false}) {
    SCOPED_TRACE(vectors ? "bfloat16 vectors" : "scalar loops");
    const ScopedVectorWidth width(vectors ? VectorWidth::kAvx512 : VectorWidth::kBaseline);
    f();
  }
}

// Sets an environment variable for a scope (restored, or unset, after).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

class ScopedBf16Off {
 public:
  ScopedBf16Off() : env_("HALFCAF_DNNL_BF16", "0") {}

 private:
  ScopedEnv env_;
};

// Runs `def` (created as nets create it: CreateOperator) on bfloat16 inputs `in` twice: with the
// BF16 kernels as the environment says, then with them forced off (the emulated path). The first
// run must take `kernel_runs` BF16 kernel runs (DnnlBFloat16Runs) when the kernels are on and
// none otherwise, the second none; every output is bfloat16 and the two agree within bfloat16
// tolerance (both accumulate in float and round once, in different orders: 2^-8 relative, and a
// little absolute for cancellations).
inline void ExpectBFloat16PathsAgree(const OperatorDef& def,
                                     const std::map<std::string, Tensor>& in, int64_t kernel_runs) {
#ifdef HALFCAF_WITH_DNNL
  const bool fast = DnnlBFloat16Enabled();
  const int64_t before = DnnlBFloat16Runs();
#endif
  const std::vector<Tensor> on = RunOpOutputs(def, in);
#ifdef HALFCAF_WITH_DNNL
  EXPECT_EQ(DnnlBFloat16Runs() - before, fast ? kernel_runs : 0) << def.type();
#endif
  std::vector<Tensor> off;
  {
    ScopedBf16Off s;
    off = RunOpOutputs(def, in);
  }
#ifdef HALFCAF_WITH_DNNL
  EXPECT_EQ(DnnlBFloat16Runs() - before, fast ? kernel_runs : 0) << "forced off, " << def.type();
#endif
  for (size_t i = 0; i < on.size(); ++i) {
    EXPECT_EQ(on[i].dtype(), DataType::BFLOAT16) << def.output(i);
    EXPECT_EQ(on[i].dims(), off[i].dims()) << def.output(i);
    ExpectNear(ToFloatVector(on[i]), ToFloatVector(off[i]), 2e-2f, 8e-3f,
               def.type() + " " + def.output(i) + " fast vs emulated");
  }
}

}  // namespace testing
}  // namespace halfcaf
