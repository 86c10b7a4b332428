// FC (fully connected): Y = X * W^T + b, with X viewed as (M, K) = (prod(dims[:axis]),
// prod(dims[axis:])) and W as (N, K) = (prod(W.dims[:axis_w]), prod(W.dims[axis_w:])).
// FCGradient: (X, W, dY) -> (dW, db[, dX]). Float and float16 data (FP32 accumulation).
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

// The (M, K, N) an FC op computes for given X and W, with every dimension checked.
struct FCShape {
  int64_t M, K, N;
  int axis;
};
FCShape ComputeFCShape(const std::vector<int64_t>& x_dims, const std::vector<int64_t>& w_dims,
                       int axis, int axis_w);
// FC's inputs checked the same way on every device (float or float16, shapes, bias size).
FCShape CheckFCInputs(const Tensor& X, const Tensor& W, const Tensor& B, int axis, int axis_w);
// Y's dims: X.dims[:axis] + [N].
std::vector<int64_t> FCOutputDims(const std::vector<int64_t>& x_dims, const FCShape& s);

class FCOp final : public Operator<CPUContext> {
 public:
  FCOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  int axis_, axis_w_;
  std::vector<float> x_, w_, b_, y_;
};

class FCGradientOp final : public Operator<CPUContext> {
 public:
  FCGradientOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  int axis_, axis_w_;
  std::vector<float> x_, w_, dy_, dw_, db_, dx_;
};

}  // namespace halfcaf
