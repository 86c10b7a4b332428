// SoftmaxWithLoss: softmax cross-entropy. Logits X are viewed as (N, D) split at `axis`;
//   P = Softmax(X) (float, X's shape),
//   loss (0-d float) = scale * sum_i w_i * l_i / sum_i w_i  (0 when sum_i w_i == 0), where
//   l_i = -log P[i, label_i] for int32 labels, or -sum_j label[i, j] * log P[i, j] with
//   `label_prob` = 1 (float label distributions of X's shape or (N, D)); w_i = 1 without weights.
// Inputs: X (float/float16), labels (int32, N elements: (N) or (N, 1)), [weights (N), float].
// Args: scale (float, 1), label_prob (int, 0), axis (int, 1), order ("NCHW" only),
// only_loss (bool; accepted, no effect on CPU).
// SoftmaxWithLossGradient: (X, labels, [weights], P, dloss) -> dX (X's dtype).
#pragma once

#include <string>
#include <vector>

#include "core/operator.h"

namespace halfcaf {

// Checks the `order` argument (only "NCHW").
void CheckSoftmaxLossOrder(const OperatorBase& op);
// The checks both ops make on labels (and optional weights) for logits of dims x_dims viewed as
// (N, D) split at axis `a` (dims and dtypes only, so they work on any device).
void CheckSoftmaxLossLabels(const Tensor& labels, const Tensor* weights,
                            const std::vector<int64_t>& x_dims, int a, int64_t N, int64_t D,
                            bool label_prob, const std::string& op);

// SoftmaxWithLossGradient's inputs (X, labels, [weights], P, dloss), checked the same way on every
// device; returns the (N, D) matrix view of X and its canonical axis.
struct SoftmaxLossGradInputs {
  int64_t N = 0, D = 0;
  int axis = 1;
};
SoftmaxLossGradInputs CheckSoftmaxLossGradientInputs(const OperatorBase& op, const Tensor& X,
                                                     const Tensor& L, int axis, bool label_prob,
                                                     const Tensor* W, const Tensor& P,
                                                     const Tensor& dLoss);

class SoftmaxWithLossOp final : public Operator<CPUContext> {
 public:
  SoftmaxWithLossOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  float scale_;
  bool label_prob_;
  int axis_;
  std::vector<float> x_, w_, labels_, lse_;
};

class SoftmaxWithLossGradientOp final : public Operator<CPUContext> {
 public:
  SoftmaxWithLossGradientOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  float scale_;
  bool label_prob_;
  int axis_;
  std::vector<float> w_, labels_, p_, dloss_, dx_;
};

}  // namespace halfcaf
