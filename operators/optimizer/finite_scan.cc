#include "operators/optimizer/finite_scan.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/bfloat16.h"
#include "core/enforce.h"
#include "core/half.h"
#include "operators/cpu_parallel.h"

namespace halfcaf {

namespace {

constexpr int64_t kBlock = 4096;
constexpr uint32_t kF32Exp = 0x7f800000u;

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
  // The exponent bits as integers: an OR-reduction the compiler vectorizes (a float sum it may
  // not reorder).
  const auto* u = reinterpret_cast<const uint32_t*>(d);
  for (; b < e; b += kBlock) {
    const int64_t end = std::min(e, b + kBlock);
    uint32_t bad = 0;
    for (int64_t i = b; i < end; ++i) bad |= static_cast<uint32_t>((u[i] & kF32Exp) == kF32Exp);
    if (bad != 0) return false;
  }
  return true;
}

void EnforceFiniteScanType(const Tensor& t) {
  const DataType type = t.dtype();
  HALFCAF_ENFORCE(type == DataType::FLOAT || type == DataType::FLOAT16 ||
                      type == DataType::BFLOAT16,
                  "finite check: expected a float, float16 or bfloat16 tensor, got ",
                  t.DebugString());
}

// Elements [b, e) of t.
bool RangeFinite(const Tensor& t, int64_t b, int64_t e) {
  switch (t.dtype()) {
    case DataType::FLOAT16:
      return NoAllOnesExponent(t.data<Half>(), b, e, 0x7c00);
    case DataType::BFLOAT16:
      return NoAllOnesExponent(t.data<BFloat16>(), b, e, 0x7f80);
    default:
      return FloatsFinite(t.data<float>(), b, e);
  }
}

}  // namespace

bool AllFinite(const Tensor& t) { return AllFinite(std::vector<const Tensor*>{&t}); }

bool AllFinite(const std::vector<const Tensor*>& tensors) {
  // One parallel pass over the tensors' elements end to end (offsets[k]: where tensor k starts),
  // not one per tensor: the loss scaling check takes every gradient of a net, most of them small.
  std::vector<int64_t> offsets{0};
  for (const Tensor* t : tensors) {
    EnforceFiniteScanType(*t);
    offsets.push_back(offsets.back() + t->numel());
  }
  std::atomic<bool> finite{true};
  ParallelFor(offsets.back(), 1, [&](int64_t b, int64_t e) {
    size_t k =
        static_cast<size_t>(std::upper_bound(offsets.begin(), offsets.end(), b) - offsets.begin()) -
        1;
    for (; b < e && finite.load(std::memory_order_relaxed); ++k) {
      const int64_t end = std::min(e, offsets[k + 1]);
      if (end > b && !RangeFinite(*tensors[k], b - offsets[k], end - offsets[k])) finite = false;
      b = end;
    }
  });
  return finite;
}

}  // namespace halfcaf
