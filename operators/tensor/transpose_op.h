// Transpose and the layout switches NCHW2NHWC / NHWC2NCHW. Elements are moved as raw bytes, so
// any data type works.
//
// Transpose: X -> Y with Y.dims[i] = X.dims[axes[i]]. Argument `axes` (ints, a permutation of
//   0..ndim-1; empty or absent = reverse all dims). Gradient: Transpose with the inverse
//   permutation.
// NCHW2NHWC: (N, C, D1, ..., Dk) -> (N, D1, ..., Dk, C); NHWC2NCHW the inverse. Usually 4-D; any
//   ndim >= 3 is accepted. Each is the other's gradient.
#pragma once

#include <vector>

#include "core/op_schema.h"
#include "core/operator.h"

namespace halfcaf {

// Throws unless axes is a permutation of 0..axes.size()-1.
void CheckPermutation(const std::vector<int>& axes);
// The default axes of Transpose: nd-1, ..., 0.
std::vector<int> ReverseAxes(int nd);
// The permutation of NCHW2NHWC (to_channels_last) or NHWC2NCHW for an nd-dim input (nd >= 3).
std::vector<int> OrderSwitchAxes(int nd, bool to_channels_last);
// Output dims of a transpose.
std::vector<int64_t> TransposeDims(const std::vector<int64_t>& dims, const std::vector<int>& axes);
// y = transpose(x) for elements of `item_size` bytes (1, 2, 4 or 8).
void TransposeBytes(const std::vector<int64_t>& x_dims, const std::vector<int>& axes,
                    size_t item_size, const void* x, void* y);

// The cost of an op that moves its input's elements once (a transpose, a layout change).
OpCost ElementMoveCost(const OperatorDef& def, const std::vector<TensorShape>& in);

class TransposeOp final : public Operator<CPUContext> {
 public:
  TransposeOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  std::vector<int> axes_;  // as given (may be empty)
  std::vector<int> run_axes_;
};

// NCHW2NHWC (to_channels_last = true) and NHWC2NCHW.
template <bool to_channels_last>
class OrderSwitchOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;

 private:
  std::vector<int> axes_;
};

}  // namespace halfcaf
