// FC (fully connected): Y = X * W^T + b, with X viewed as (M, K) = (prod(dims[:axis]),
// prod(dims[axis:])) and W as (N, K) = (prod(W.dims[:axis_w]), prod(W.dims[axis_w:])).
// FCTransposed: the same layer with W stored the other way round: W viewed as (K, N) =
// (prod(W.dims[:axis_w]), prod(W.dims[axis_w:])) and Y = X * W + b.
// FCGradient / FCTransposedGradient: (X, W, dY) -> (dW, db[, dX]). Float and float16 data (FP32
// accumulation). One class template serves both layouts (kTransposed), on CPU and CUDA.
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

// The (M, K, N) an FC op computes for given X and W, with every dimension checked. `transposed`
// selects FCTransposed's (K, N) view of W.
struct FCShape {
  int64_t M, K, N;
  int axis;
};
FCShape ComputeFCShape(const std::vector<int64_t>& x_dims, const std::vector<int64_t>& w_dims,
                       int axis, int axis_w, bool transposed = false);
// FC's inputs checked the same way on every device (float or float16, shapes, bias size).
FCShape CheckFCInputs(const Tensor& X, const Tensor& W, const Tensor& B, int axis, int axis_w,
                      bool transposed = false);
// FCGradient's inputs checked the same way on every device (float or float16, shapes, dY size).
FCShape CheckFCGradientInputs(const Tensor& X, const Tensor& W, const Tensor& dY, int axis,
                              int axis_w, bool transposed = false);
// Y's dims: X.dims[:axis] + [N].
std::vector<int64_t> FCOutputDims(const std::vector<int64_t>& x_dims, const FCShape& s);

// kTransposed = false: FC; true: FCTransposed.
template <bool kTransposed>
class FCOpT final : public Operator<CPUContext> {
 public:
  FCOpT(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  int axis_, axis_w_;
  std::vector<float> x_, w_, b_, y_;
};
using FCOp = FCOpT<false>;
using FCTransposedOp = FCOpT<true>;

template <bool kTransposed>
class FCGradientOpT final : public Operator<CPUContext> {
 public:
  FCGradientOpT(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  int axis_, axis_w_;
  // All of X, W and dY bfloat16: the three products on oneDNN's BF16 kernels; false (nothing
  // written) when they are off.
  bool RunBFloat16(const Tensor& X, const Tensor& W, const Tensor& dY, const FCShape& s);
  std::vector<float> x_, w_, dy_, dw_, db_, dx_;
};
using FCGradientOp = FCGradientOpT<false>;
using FCTransposedGradientOp = FCGradientOpT<true>;

}  // namespace halfcaf
