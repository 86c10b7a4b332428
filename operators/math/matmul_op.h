// MatMul (Caffe2's): (A, B[, like]) -> Y, one matrix product Y = op(A2) op(B2) of dims [M, N].
//   A2 is A viewed as a matrix split at `axis_a` (int, default 1; negative counts from the end):
//   prod(A.dims[:axis_a]) x prod(A.dims[axis_a:]); B2 likewise at `axis_b`. op() transposes the
//   view when `trans_a` / `trans_b` (int, default 0) is set. The optional third input only lends
//   its dims to Y (same element count): the gradient ops use it to give dA and dB the dims of A
//   and B. Float, float16 and bfloat16 on CPU (16-bit computed in float), float and float16 on
//   CUDA; A and B share one dtype, which Y takes.
// Gradient (Caffe2's): two MatMul ops whose trans and axis arguments undo the forward ones, each
//   with the forward input it differentiates as third input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/math.h"
#include "core/tensor.h"

namespace halfcaf {

// The product one MatMul computes: op(A2) is M x K, op(B2) K x N, Y has dims out_dims.
struct MatMulShape {
  int64_t M = 0, N = 0, K = 0;
  math::Trans trans_a = math::Trans::kNo, trans_b = math::Trans::kNo;
  std::vector<int64_t> out_dims;
};

// Checks the axes and the inner dims (errors name both shapes and `op`). `like_dims` (null: none)
// are the third input's dims, which Y takes when they hold M * N elements.
MatMulShape ComputeMatMulShape(const std::vector<int64_t>& a_dims,
                               const std::vector<int64_t>& b_dims, int axis_a, int axis_b,
                               bool trans_a, bool trans_b, const std::vector<int64_t>* like_dims,
                               const std::string& op);

// A MatMul's arguments, with Caffe2's defaults.
struct MatMulArgs {
  int axis_a = 1, axis_b = 1;
  bool trans_a = false, trans_b = false;
};
MatMulArgs ReadMatMulArgs(const ArgumentHelper& args);

// ComputeMatMulShape for the tensors of a running MatMul (`like` null without a third input),
// after checking that A and B are float types (EnforceFloatType: float or float16 on CUDA) of one
// dtype.
MatMulShape CheckMatMulInputs(const Tensor& A, const Tensor& B, const Tensor* like,
                              const MatMulArgs& args, const std::string& op);

}  // namespace halfcaf
