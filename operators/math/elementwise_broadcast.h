// Caffe2's legacy broadcast for binary element-wise ops (Add, Sub, Mul, Div) and SumReduceLike.
//
// B is aligned to A starting at dimension `axis` of A (-1: B's last dim lines up with A's last
// dim). Size-1 dims at the start and end of B are ignored; the remaining dims of B must equal the
// A dims they line up with. A is then viewed as (pre, n, post) with n = B's element count, and B
// is repeated over pre and post. A B with exactly one element is a scalar. `axis_str` (one letter
// of `order`, e.g. "C" in "NCHW") is an alternative way to give `axis`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/argument.h"
#include "operators/cpu_parallel.h"

namespace halfcaf {

// A seen as (pre, n, post); B has n elements and is repeated over pre and post.
struct BroadcastSizes {
  int64_t pre = 1, n = 1, post = 1;
};

// Reads `axis`, `axis_str` and `order` and returns the axis they name (-1: trailing alignment).
// Throws if both axis and axis_str are set, or axis_str is not one letter of order.
int ParseBroadcastAxis(const ArgumentHelper& args);

// Parsed arguments of Add/Sub/Mul/Div.
struct LegacyBroadcastArgs {
  bool broadcast = false;
  int axis = -1;  // resolved from axis / axis_str; -1 = trailing alignment
};
// Throws if axis/axis_str are given without broadcast=1.
LegacyBroadcastArgs ParseLegacyBroadcastArgs(const ArgumentHelper& args);

// Aligns B (b_dims) to A (a_dims) at `axis` (-1: trailing). B with one element is a scalar.
// Throws naming both shapes and the axis if B cannot be aligned.
BroadcastSizes ComputeBroadcastSizes(const std::vector<int64_t>& a_dims,
                                     const std::vector<int64_t>& b_dims, int axis);

// B's dims (b_dims) as A-ranked dims under the legacy broadcast at `axis`: B's dims where they
// line up with A, 1 elsewhere (all 1 for a one-element B), i.e. the same alignment in NumPy's
// terms. Throws as ComputeBroadcastSizes.
std::vector<int64_t> LegacyBroadcastView(const std::vector<int64_t>& a_dims,
                                         const std::vector<int64_t>& b_dims, int axis);

// Sizes for a binary op: without broadcast the dims must be identical (pre = post = 1).
BroadcastSizes ComputeBinaryOpSizes(const std::vector<int64_t>& a_dims,
                                    const std::vector<int64_t>& b_dims,
                                    const LegacyBroadcastArgs& args);

// c[(i * n + j) * post + k] = f(a[(i * n + j) * post + k], b[j]). Safe when c aliases a.
template <typename T, typename U, class F>
void ApplyBroadcast(const T* a, const T* b, U* c, const BroadcastSizes& s, F f) {
  // Split over the threads: rows of a (post == 1, b repeats every n) or runs of post.
  if (s.post == 1) {
    if (s.pre == 1) {
      ParallelFor(s.n, 1.0, [&](int64_t j0, int64_t j1) {
        for (int64_t j = j0; j < j1; ++j) c[j] = f(a[j], b[j]);
      });
      return;
    }
    ParallelFor(s.pre, static_cast<double>(s.n), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const T* ai = a + i * s.n;
        U* ci = c + i * s.n;
        for (int64_t j = 0; j < s.n; ++j) ci[j] = f(ai[j], b[j]);
      }
    });
    return;
  }
  ParallelFor(s.pre * s.n, static_cast<double>(s.post), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T bj = b[r % s.n];
      const int64_t off = r * s.post;
      for (int64_t k = 0; k < s.post; ++k) c[off + k] = f(a[off + k], bj);
    }
  });
}

}  // namespace halfcaf
