// ScopedBf16Off: sets HALFCAF_DNNL_BF16=0 for a scope (restored after), so the operators that
// would run bfloat16 on oneDNN's BF16 kernels take the emulated path. Without it the tests run as
// the environment says: `HALFCAF_DNNL_BF16=0 operators_tests` is a CPU without BF16 instructions.
#pragma once

#include <cstdlib>
#include <string>

namespace halfcaf {
namespace testing {

class ScopedBf16Off {
 public:
  ScopedBf16Off() {
    const char* old = std::getenv("HALFCAF_DNNL_BF16");
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv("HALFCAF_DNNL_BF16", "0", 1);
  }
  ~ScopedBf16Off() {
    if (had_) {
      setenv("HALFCAF_DNNL_BF16", old_.c_str(), 1);
    } else {
      unsetenv("HALFCAF_DNNL_BF16");
    }
  }
  ScopedBf16Off(const ScopedBf16Off&) = delete;
  ScopedBf16Off& operator=(const ScopedBf16Off&) = delete;

 private:
  std::string old_;
  bool had_ = false;
};

}  // namespace testing
}  // namespace halfcaf
