// Softmax: X is viewed as a matrix (N, D) = (prod(dims[:axis]), prod(dims[axis:])) and each row
// is normalised: Y[i, j] = exp(X[i, j] - max_i) / sum_k exp(X[i, k] - max_i). Y has X's shape and
// dtype. Arg `axis` (int, default 1; negative counts from the end).
// SoftmaxGradient: (Y, dY) -> dX[i, j] = Y[i, j] * (dY[i, j] - sum_k dY[i, k] * Y[i, k]).
// Float and float16 data (computed in float).
#pragma once

#include <string>
#include <vector>

#include "core/operator.h"

namespace halfcaf {

// Row-wise, max-subtracted softmax of an (N, D) matrix; y may alias x. When row_lse is given it
// receives log(sum_k exp(x[i, k])) per row, so that log y[i, j] = x[i, j] - row_lse[i] exactly.
void SoftmaxRows(const float* x, int64_t N, int64_t D, float* y, float* row_lse = nullptr);

// Views `dims` as (N, D) split at `axis` (negative counts from the end) and returns the canonical
// axis; throws naming `op` and the dims when the axis is out of range.
int SoftmaxMatrixShape(const std::vector<int64_t>& dims, int axis, const std::string& op,
                       int64_t* N, int64_t* D);

class SoftmaxOp final : public Operator<CPUContext> {
 public:
  SoftmaxOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  int axis_;
  std::vector<float> x_, y_;
};

class SoftmaxGradientOp final : public Operator<CPUContext> {
 public:
  SoftmaxGradientOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  int axis_;
  std::vector<float> y_, dy_, dx_;
};

}  // namespace halfcaf
