#include "core/checked_math.h"

namespace halfcaf {

namespace detail {

bool NumelOf(const std::vector<int64_t>& dims, int64_t* numel) {
  int64_t nonzero = 1;
  bool zero = false;
  for (int64_t d : dims) {
    if (d < 0) return false;
    if (d == 0) {
      zero = true;
    } else if (__builtin_mul_overflow(nonzero, d, &nonzero)) {
      return false;
    }
  }
  *numel = zero ? 0 : nonzero;
  return true;
}

void ThrowBadShape(const std::vector<int64_t>& dims, const std::string& what) {
  const std::string prefix = what.empty() ? std::string() : what + ": ";
  for (int64_t d : dims) {
    HALFCAF_ENFORCE(d >= 0, prefix, "negative dimension ", d, " in shape ", DimsString(dims));
  }
  HALFCAF_THROW(prefix, "shape ", DimsString(dims),
                " has too many elements (the product of the dims overflows int64)");
}

namespace {
[[noreturn]] void ThrowOverflow(int64_t a, int64_t b, const char* op, const std::string& what) {
  const std::string prefix = what.empty() ? std::string() : what + ": ";
  HALFCAF_ENFORCE(a >= 0 && b >= 0, prefix, "negative size ", a < 0 ? a : b);
  HALFCAF_THROW(prefix, "size ", a, op, b, " overflows int64");
}
}  // namespace

void ThrowMulOverflow(int64_t a, int64_t b, const std::string& what) {
  ThrowOverflow(a, b, " x ", what);
}

void ThrowAddOverflow(int64_t a, int64_t b, const std::string& what) {
  ThrowOverflow(a, b, " + ", what);
}

}  // namespace detail

}  // namespace halfcaf
