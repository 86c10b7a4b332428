// Gradient ops of Add, Sub, Mul, Div (elementwise_op.h), with Caffe2's names and inputs:
//   AddGradient (dC, A, B) -> (dA, dB)        dA = dC, dB = dC
//   SubGradient (dC, A, B) -> (dA, dB)        dA = dC, dB = -dC
//   MulGradient (dC, A, B) -> (dA, dB)        dA = dC * B, dB = dC * A
//   DivGradient (dC, A, B, C) -> (dA, dB)     dA = dC / B, dB = -dC * C / B   (C = A / B)
// Any shapes the forward op accepted: dC has the shape of C, the broadcast of A and B (NumPy
// rules, or the legacy broadcast when the op carries broadcast=1 with axis / axis_str / order, as
// the forward op did), and each of dA, dB is summed over the dims its input was repeated along,
// so that it has that input's shape. The shapes are read at run time. Outputs take dC's type.
// Float and float16 in any mix (computed in float, summed in double), or all double.
//
// DivGradient also has Caffe2's older three-input form, for identical shapes only:
//   DivGradient (B, C, dC) -> (dA, dB) with dA in dC's type and dB in B's type.
#pragma once

#include <vector>

#include "core/operator.h"
#include "operators/math/elementwise_broadcast.h"
#include "operators/math/numpy_broadcast.h"

namespace halfcaf {

enum class BinaryGradientKind { kAdd, kSub, kMul, kDiv };

// The walk of dC for a gradient op: A's and B's dims as the forward op broadcast them (B's dims
// placed within A's under broadcast=1). Throws naming `op` and the shapes when dC does not have
// the broadcast shape of A and B.
NumpyBroadcast MakeGradientBroadcast(const std::string& op, const LegacyBroadcastArgs& args,
                                     const std::vector<int64_t>& dc_dims,
                                     const std::vector<int64_t>& a_dims,
                                     const std::vector<int64_t>& b_dims);

// Whether the gradient op reads A's values (Mul) and B's values (Mul, Div); the others only
// need their dims.
constexpr bool GradientReadsA(BinaryGradientKind k) { return k == BinaryGradientKind::kMul; }
constexpr bool GradientReadsB(BinaryGradientKind k) {
  return k == BinaryGradientKind::kMul || k == BinaryGradientKind::kDiv;
}

// The checked inputs of a gradient op of `kind` named `op`: (dC, A, B) and C for Div (else
// null). dC must have the broadcast shape of A and B (MakeGradientBroadcast), C dC's shape; the
// tensors whose values are read must be all double, or float / float16. Returns them with the
// walk of dC and whether the op runs in double.
struct GradientInputs {
  const Tensor *dC, *A, *B, *C;
  NumpyBroadcast walk;
  bool all_double = false;
};
GradientInputs CheckGradientInputs(BinaryGradientKind kind, const std::string& op,
                                   const LegacyBroadcastArgs& args, const Tensor& dC,
                                   const Tensor& A, const Tensor& B, const Tensor* C);

// DivGradient (B, C, dC): throws unless B, C and dC have one shape.
void EnforceLegacyDivShapes(const Tensor& B, const Tensor& C, const Tensor& dC);

template <BinaryGradientKind kKind>
class BinaryGradientOp final : public Operator<CPUContext> {
 public:
  BinaryGradientOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  void RunLegacyDiv();  // DivGradient (B, C, dC)
  template <typename T>
  void Accumulate(const T* dc, const T* a, const T* b, const T* c);

  LegacyBroadcastArgs bargs_;
  NumpyBroadcast walk_;
  std::vector<float> dc_, a_, b_, c_, da_, db_;
  std::vector<double> acc_a_, acc_b_;
};

}  // namespace halfcaf
