#include "operators/optimizer/finite_scan.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>

#include "core/bfloat16.h"
#include "core/enforce.h"
#include "core/half.h"
#include "operators/cpu_parallel.h"

namespace halfcaf {

namespace {

constexpr int64_t kBlock = 4096;

// No element of d[b, e) has all of `exponent`'s bits set (inf or nan).
template <typename T>
bool NoAllOnesExponent(const T* d, int64_t b, int64_t e, uint16_t exponent) {
  for (; b < e; b += kBlock) {
    const int64_t end = std::min(e, b + kBlock);
    uint16_t bad = 0;
    for (int64_t i = b; i < end; ++i) bad |= static_cast<uint16_t>((d[i].x & exponent) == exponent);
    if (bad != 0) return false;
  }
  return true;
}

bool FloatsFinite(const float* d, int64_t b, int64_t e) {
  for (; b < e; b += kBlock) {
    const int64_t end = std::min(e, b + kBlock);
    float acc = 0.f;
    for (int64_t i = b; i < end; ++i) acc += d[i] * 0.f;  // nan iff some d[i] is inf/nan
    if (std::isnan(acc)) return false;
  }
  return true;
}

}  // namespace

bool AllFinite(const Tensor& t) {
  const DataType type = t.dtype();
  HALFCAF_ENFORCE(type == DataType::FLOAT || type == DataType::FLOAT16 ||
                      type == DataType::BFLOAT16,
                  "finite check: expected a float, float16 or bfloat16 tensor, got ",
                  t.DebugString());
  std::atomic<bool> finite{true};
  ParallelFor(t.numel(), 1, [&](int64_t b, int64_t e) {
    bool ok;
    if (type == DataType::FLOAT16) {
      ok = NoAllOnesExponent(t.data<Half>(), b, e, 0x7c00);
    } else if (type == DataType::BFLOAT16) {
      ok = NoAllOnesExponent(t.data<BFloat16>(), b, e, 0x7f80);
    } else {
      ok = FloatsFinite(t.data<float>(), b, e);
    }
    if (!ok) finite = false;
  });
  return finite;
}

}  // namespace halfcaf
