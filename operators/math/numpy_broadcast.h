// NumPy (multidirectional) broadcasting for the binary element-wise ops (Add, Sub, Mul, Div
// without broadcast=1) and their gradients (AddGradient, ...).
//
// A and B are lined up on their trailing dims; a missing leading dim counts as 1. Each pair of
// dims must be equal or contain a 1, and the output takes the larger: [3, 4, 5] with [3, 1, 5] ->
// [3, 4, 5]; [1, 4, 1] with [3, 1, 5] -> [3, 4, 5]; [5] with [3, 4, 5] -> [3, 4, 5]; [] with
// [2] -> [2]. An input is repeated along the output dims where it has a 1 (or no dim).
//
// The output is walked as a few merged dims: size-1 output dims are dropped and neighbouring
// dims are merged when each input is either repeated along both or along neither, so that
// [3, 4, 5] with [3, 1, 5] runs as 3 x 4 x 5 but [2, 3, 4, 5] with [4, 5] as 6 x 20.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "operators/cpu_parallel.h"

namespace halfcaf {

class OperatorBase;

// Most merged dims a broadcast may walk (more is refused with an error naming the shapes).
constexpr int kMaxBroadcastDims = 8;

struct NumpyBroadcast {
  std::vector<int64_t> out_dims;  // the broadcast of A's and B's dims
  int64_t numel = 1;              // elements of the output
  // The merged walk, innermost last (1 to kMaxBroadcastDims dims): sizes, and each input's
  // element stride along them (0 where the input is repeated). The output is contiguous over
  // `dims`.
  std::vector<int64_t> dims, a_stride, b_stride;
};

// The broadcast of a_dims and b_dims. Throws naming `op` and both shapes when a pair of dims is
// neither equal nor contains a 1 (MakeNumpyBroadcast also when the walk needs more than
// kMaxBroadcastDims dims).
std::vector<int64_t> NumpyBroadcastDims(const std::string& op, const std::vector<int64_t>& a_dims,
                                        const std::vector<int64_t>& b_dims);

NumpyBroadcast MakeNumpyBroadcast(const std::string& op, const std::vector<int64_t>& a_dims,
                                  const std::vector<int64_t>& b_dims);

// Per dim of out_dims: whether an input with dims x_dims (which broadcast to out_dims) is repeated
// along it, i.e. the dims its gradient is summed over.
std::vector<bool> RepeatedDims(const std::vector<int64_t>& out_dims,
                               const std::vector<int64_t>& x_dims);

// The walk for an op's inputs A (0) and B (1), remade only when their dims change. Get also
// throws unless the op's output C (0) shares its blob only with an input of C's dims: a repeated
// input would be overwritten while it is still being read.
class NumpyBroadcastPlan {
 public:
  const NumpyBroadcast& Get(const OperatorBase& op, const std::vector<int64_t>& a_dims,
                            const std::vector<int64_t>& b_dims);

 private:
  bool made_ = false;
  std::vector<int64_t> a_dims_, b_dims_;
  NumpyBroadcast walk_;
};

// Calls row(c, a, b) with the offsets of the first output, A and B element of every innermost run
// of s.dims.back() outputs, for the runs [run0, run1) in order.
template <class Row>
void WalkBroadcastRuns(const NumpyBroadcast& s, int64_t run0, int64_t run1, Row row) {
  const int nd = static_cast<int>(s.dims.size());
  const int64_t inner = s.dims[nd - 1];
  int64_t index[kMaxBroadcastDims] = {};
  int64_t a = 0, b = 0, rest = run0;
  for (int d = nd - 2; d >= 0; --d) {
    index[d] = rest % s.dims[d];
    rest /= s.dims[d];
    a += index[d] * s.a_stride[d];
    b += index[d] * s.b_stride[d];
  }
  for (int64_t r = run0; r < run1; ++r) {
    row(r * inner, a, b);
    for (int d = nd - 2; d >= 0; --d) {
      a += s.a_stride[d];
      b += s.b_stride[d];
      if (++index[d] < s.dims[d]) break;
      a -= s.a_stride[d] * s.dims[d];
      b -= s.b_stride[d] * s.dims[d];
      index[d] = 0;
    }
  }
}

// c[i] = f(a[ia], b[ib]) over the output, with ia, ib the elements of A and B that output i reads.
// Split over the threads by runs. c may alias a (or b) when that input has the output's dims.
template <typename T, typename U, class F>
void ApplyNumpyBroadcast(const T* a, const T* b, U* c, const NumpyBroadcast& s, F f) {
  if (s.numel == 0) return;
  const int64_t inner = s.dims.back();
  const int64_t sa = s.a_stride.back(), sb = s.b_stride.back();
  ParallelFor(s.numel / inner, static_cast<double>(inner), [&](int64_t r0, int64_t r1) {
    WalkBroadcastRuns(s, r0, r1, [&](int64_t ci, int64_t ai, int64_t bi) {
      U* cr = c + ci;
      const T* ar = a + ai;
      const T* br = b + bi;
      // The common stride patterns get their own loops so that the compiler vectorizes them.
      if (sa == 1 && sb == 1) {
        for (int64_t k = 0; k < inner; ++k) cr[k] = f(ar[k], br[k]);
      } else if (sa == 1 && sb == 0) {
        for (int64_t k = 0; k < inner; ++k) cr[k] = f(ar[k], br[0]);
      } else if (sa == 0 && sb == 1) {
        for (int64_t k = 0; k < inner; ++k) cr[k] = f(ar[0], br[k]);
      } else {
        for (int64_t k = 0; k < inner; ++k) cr[k] = f(ar[k * sa], br[k * sb]);
      }
    });
  });
}

}  // namespace halfcaf
