// BatchMatMul: (A, B) -> Y, one matrix product per batch: Y[..., M, N] = op(A)[..., M, K] *
//   op(B)[..., K, N], op() transposing the last two dims when `trans_a` / `trans_b` (int, default
//   0) is set. Float and float16 (float16 computed in float on CPU; FP32 accumulation on CUDA).
//   broadcast (int, default 0):
//     0: A and B have the same rank >= 2 and the same batch dims (all but the last two).
//     1: numpy.matmul rules: batch dims broadcast (missing or size-1 dims stretch); a 1-D A is a
//        row vector [1, K] and a 1-D B a column vector [K, 1] whose unit dim is dropped from Y
//        (two vectors give Y of dims [1]); trans flags do not apply to 1-D operands.
// Gradient (Caffe2's, without broadcast only): two BatchMatMul ops, e.g. for A*B: dA = dY * B^T
//   (trans_b) and dB = A^T * dY (trans_a).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/math.h"
#include "core/operator.h"

namespace halfcaf {

// The products of one BatchMatMul: product i multiplies matrix a_index[i] of A (each M x K after
// op(), stored packed) by matrix b_index[i] of B (K x N) into matrix i of Y (M x N).
struct BatchMatMulPlan {
  int64_t M = 0, N = 0, K = 0;
  math::Trans trans_a = math::Trans::kNo, trans_b = math::Trans::kNo;
  std::vector<int64_t> out_dims;
  std::vector<int64_t> a_index, b_index;
  int64_t batches() const { return static_cast<int64_t>(a_index.size()); }
};
BatchMatMulPlan MakeBatchMatMulPlan(const std::vector<int64_t>& a_dims,
                                    const std::vector<int64_t>& b_dims, bool trans_a, bool trans_b,
                                    bool broadcast, const std::string& op);

// MakeBatchMatMulPlan for tensors A and B, after checking that both are float or both float16.
BatchMatMulPlan PlanBatchMatMul(const Tensor& A, const Tensor& B, bool trans_a, bool trans_b,
                                bool broadcast, const std::string& op);

// Consecutive products whose A and B matrix indices both advance by fixed steps, for strided
// batched GEMM: products first .. first + count - 1 use A matrices a_first + j * a_step and B
// matrices b_first + j * b_step.
struct StridedBatchRun {
  int64_t first = 0, count = 0, a_first = 0, a_step = 0, b_first = 0, b_step = 0;
};
std::vector<StridedBatchRun> StridedBatchRuns(const BatchMatMulPlan& p);

class BatchMatMulOp final : public Operator<CPUContext> {
 public:
  BatchMatMulOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  bool trans_a_, trans_b_, broadcast_;
  std::vector<float> a_, b_, y_;
};

}  // namespace halfcaf
