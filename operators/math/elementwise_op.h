// Binary arithmetic Add, Sub, Mul, Div: C = A (op) B, with Caffe2's two broadcasts.
//   Inputs:  A, B (any shapes that broadcast, see below).
//   Output:  C, A's type; A's shape with broadcast=1 (or identical shapes), else the NumPy
//            broadcast of A's and B's shapes.
//   Args:    broadcast (bool, 0), axis (int, -1 = trailing), axis_str (string, one letter of
//            order), order (string, "NCHW").
// With broadcast=1, Caffe2's legacy broadcast: B's shape aligns to a span of A's dims
// (elementwise_broadcast.h; one element = scalar). Without it, identical shapes take the plain
// path and other shapes broadcast NumPy-style in both directions (numpy_broadcast.h), as in
// Caffe2 1.0: [3, 4, 5] with [3, 1, 5] or [1, 4, 1] with [3, 1, 5] gives [3, 4, 5].
// Types: float, float16 (computed in float; A and B may mix float and float16), double, int32,
// int64 (A and B of the same type).
//
// Add with fuse_relu = 1 (halfcaf's argument; models/residual_relu_fusion.h): C = ReluNaN(A + B),
// the Relu after a residual merge in the same pass, bit for bit the two ops; A and B of one shape
// (float, float16 or bfloat16; C has A's type, the sum rounded once as the unfused Add rounds
// it, which the ReLU then leaves as it is), CPU only.
//
// The gradient ops (DivGradient, AddGradient, ...) are in elementwise_gradient_op.h.
#pragma once

#include <vector>

#include "core/operator.h"
#include "operators/math/elementwise_broadcast.h"
#include "operators/math/numpy_broadcast.h"

namespace halfcaf {

// Functor: `template <typename T> static T Apply(T a, T b)` and `kDivides` (integer division by
// zero is reported instead of trapping).
template <class Functor>
class BinaryElementwiseOp final : public Operator<CPUContext> {
 public:
  BinaryElementwiseOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  template <typename T>
  void RunTyped(const Tensor& A, const Tensor& B);
  void RunAddRelu(const Tensor& A, const Tensor& B);
  // c = f(a, b) over this run's walk: sizes_ (legacy or same shape) or *numpy_ (when set).
  template <typename T, typename U, class F>
  void Apply(const T* a, const T* b, U* c, F f) const {
    if (numpy_) {
      ApplyNumpyBroadcast(a, b, c, *numpy_, f);
    } else {
      ApplyBroadcast(a, b, c, sizes_, f);
    }
  }

  LegacyBroadcastArgs bargs_;
  bool fuse_relu_ = false;
  BroadcastSizes sizes_;
  NumpyBroadcastPlan plan_;
  const NumpyBroadcast* numpy_ = nullptr;  // this run's NumPy walk (from plan_), or null
  std::vector<float> a_, b_, c_;
};

}  // namespace halfcaf
