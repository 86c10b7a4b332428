// Binary arithmetic with Caffe2's legacy broadcast: Add, Sub, Mul, Div compute C = A (op) B.
//   Inputs:  A (any shape), B (same shape as A, or with broadcast=1 a shape that aligns to a
//            span of A's dims, see elementwise_broadcast.h; one element = scalar).
//   Output:  C, A's shape and type.
//   Args:    broadcast (bool, 0), axis (int, -1 = trailing), axis_str (string, one letter of
//            order), order (string, "NCHW").
// Types: float, float16 (computed in float; A and B may mix float and float16), double, int32,
// int64 (A and B of the same type).
//
// DivGradient: (B, C, dC) -> (dA, dB) with dA = dC / B and dB = -dC * C / B (no broadcast).
#pragma once

#include <vector>

#include "core/operator.h"
#include "operators/elementwise_broadcast.h"

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
  void RunTyped(const Tensor& A, const Tensor& B, const BroadcastSizes& s);

  LegacyBroadcastArgs bargs_;
  std::vector<float> a_, b_, c_;
};

class DivGradientOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;

 private:
  std::vector<float> b_, c_, dc_, da_, db_;
};

}  // namespace halfcaf
