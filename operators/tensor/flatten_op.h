// Flatten and ResizeLike: ops that change only the dims of a tensor (data copied as raw bytes, so
// any data type works).
//
// Flatten: X -> Y, 2-D (prod(X.dims[:axis]), prod(X.dims[axis:])). Argument `axis` (int, default 1,
//   0 <= axis <= ndim; negative counts from the end). Gradient: ResizeLike(dY, X) -> dX.
// ResizeLike: (data, like) -> Y with data's values and like's dims; element counts must match.
#pragma once

#include "core/operator.h"

namespace halfcaf {

// Flatten's output dims for input dims and axis (checked).
std::vector<int64_t> FlattenDims(const std::vector<int64_t>& dims, int axis);

class FlattenOp final : public Operator<CPUContext> {
 public:
  FlattenOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  int axis_;
};

class ResizeLikeOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;
};

// Copies src's type and values into dst and gives dst the dims `dims` (same element count). When
// dst is src (in-place) only the dims change.
void CopyWithDims(const Tensor& src, std::vector<int64_t> dims, Tensor* dst);

}  // namespace halfcaf
