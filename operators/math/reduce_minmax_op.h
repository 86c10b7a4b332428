// ReduceMax / ReduceMin: the largest / smallest element of X over `axes` (ints; empty or absent =
//   all dims; negative counts from the end), the reduced dims kept as size 1 when `keepdims` (int,
//   default 1) is set. Float and float16. A NaN in a group makes its result NaN; an empty group
//   (a reduced dim of size 0) gives -inf for the max and +inf for the min.
// ReduceMaxGradient / ReduceMinGradient: (dY, X, Y) -> dX shaped like X: dY of the group where X
//   equals its group's Y, 0 elsewhere. Every element tied for the extreme gets the whole dY, as in
//   Caffe2. A NaN Y or dY stays NaN in dX.
// ArgMax / ArgMin (arg_op.h) walk X with the same layout and comparisons.
#pragma once

#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/nan_math.h"
#include "core/operator.h"

namespace halfcaf {

// X seen as `outputs` groups of `count` elements each. Element r of group o sits at offset
// (o over kept_dims, row-major, with kept_strides) + (r over reduced_dims with reduced_strides).
// Neighbouring dims that are both kept or both reduced are merged and size-1 dims dropped, so the
// lists are short; groups come in the output's order.
struct ReduceLayout {
  std::vector<int64_t> kept_dims, kept_strides;
  std::vector<int64_t> reduced_dims, reduced_strides;
  int64_t outputs = 1, count = 1;
};
ReduceLayout MakeReduceLayout(const std::vector<int64_t>& x_dims, const std::vector<bool>& reduced);

// Offsets sum_d i_d * strides[d] visited with the index (i_0, i_1, ...) counting up row-major.
class StridedOdometer {
 public:
  StridedOdometer(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides)
      : dims_(dims), strides_(strides), index_(dims.size(), 0) {}
  int64_t offset() const { return offset_; }
  void Reset() {
    std::fill(index_.begin(), index_.end(), 0);
    offset_ = 0;
  }
  void Next() {
    for (size_t k = dims_.size(); k-- > 0;) {
      offset_ += strides_[k];
      if (++index_[k] < dims_[k]) return;
      offset_ -= strides_[k] * dims_[k];
      index_[k] = 0;
    }
  }

 private:
  const std::vector<int64_t>& dims_;
  const std::vector<int64_t>& strides_;
  std::vector<int64_t> index_;
  int64_t offset_ = 0;
};

// Calls f(o, r, offset_in_x) for every element of X, group by group, r increasing.
template <typename F>
void ForEachReduced(const ReduceLayout& l, F f) {
  if (l.outputs == 0 || l.count == 0) return;
  StridedOdometer group(l.kept_dims, l.kept_strides);
  StridedOdometer member(l.reduced_dims, l.reduced_strides);
  for (int64_t o = 0; o < l.outputs; ++o, group.Next()) {
    member.Reset();
    for (int64_t r = 0; r < l.count; ++r, member.Next()) f(o, r, group.offset() + member.offset());
  }
}

// Whether v replaces `best` in a running maximum (kMax) or minimum: strictly beyond it, or, for
// floating point, the first NaN (which then stays).
template <bool kMax, typename T>
inline bool Beats(T v, T best) {
  if constexpr (std::is_floating_point<T>::value) {
    return kMax ? BeatsMax(v, best) : BeatsMax(-v, -best);
  } else {
    return kMax ? v > best : v < best;
  }
}

// For each group o: its extreme value and the position r of its first occurrence (ties go to the
// smaller r), or of its last one when `last_of_ties` (ArgMax / ArgMin's select_last_index; NaNs
// tie with each other). Empty groups keep `init` and position -1.
template <bool kMax, typename T>
void FindExtremes(const ReduceLayout& l, const T* x, T init, std::vector<T>* best,
                  std::vector<int64_t>* where, bool last_of_ties = false) {
  best->assign(static_cast<size_t>(l.outputs), init);
  where->assign(static_cast<size_t>(l.outputs), -1);
  T* b = best->data();
  int64_t* w = where->data();
  ForEachReduced(l, [&](int64_t o, int64_t r, int64_t xi) {
    // r increases within a group, so a tie (neither beats the other) moves a last-of-ties search.
    if (w[o] < 0 || Beats<kMax>(x[xi], b[o]) || (last_of_ties && !Beats<kMax>(b[o], x[xi]))) {
      b[o] = x[xi];
      w[o] = r;
    }
  });
}

// The arguments of ReduceMax / ReduceMin and their gradients (CPU and CUDA), read and checked
// (no repeated axis) when the op is created.
struct MinMaxArgs {
  explicit MinMaxArgs(const OperatorBase& op);
  std::vector<int> axes;
  bool keepdims;
};

// The forward op's output dims and X's layout; throws on a bad axis or a non-float X.
struct MinMaxPlan {
  std::vector<int64_t> out_dims;
  ReduceLayout layout;
};
MinMaxPlan PlanMinMax(const Tensor& X, const MinMaxArgs& a);
// The gradient op's checks of dY, X and Y; returns X's layout.
ReduceLayout PlanMinMaxGradient(const Tensor& dY, const Tensor& X, const Tensor& Y,
                                const MinMaxArgs& a);

template <bool kMax>
class ReduceMinMaxOp final : public Operator<CPUContext> {
 public:
  ReduceMinMaxOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), reduce_(*this) {}
  void RunOnDevice() override;

 private:
  MinMaxArgs reduce_;
  std::vector<float> x_, y_, best_;
  std::vector<int64_t> where_;
};

template <bool kMax>
class ReduceMinMaxGradientOp final : public Operator<CPUContext> {
 public:
  ReduceMinMaxGradientOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), reduce_(*this) {}
  void RunOnDevice() override;

 private:
  MinMaxArgs reduce_;
  std::vector<float> dy_, x_, y_, dx_;
};

}  // namespace halfcaf
