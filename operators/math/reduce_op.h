// ReduceSum / ReduceMean: sum or mean of X over `axes` (ints; empty or absent = all dims;
// negative counts from the end), keeping the reduced dims as size 1 when `keepdims` (int,
// default 1) is set. Float and float16 (accumulated in double, rounded once).
// ReduceSumGradient / ReduceMeanGradient: (dY, X, Y) -> dX, dY broadcast back over the reduced
// dims (divided by the number of reduced elements for the mean).
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

// Which dims of X are reduced and what the output looks like.
struct ReducePlan {
  std::vector<int64_t> out_dims;  // honours keepdims
  std::vector<int64_t> y_stride;  // per X dim: stride in the output, 0 for reduced dims
  int64_t out_numel = 1;
  int64_t count = 1;              // X elements per output element
};
ReducePlan MakeReducePlan(const std::vector<int64_t>& x_dims, const std::vector<int>& axes,
                          bool keepdims);

// Throws if `axes` names a dim twice (checked when the op is created).
void CheckNoDuplicateAxes(const std::vector<int>& axes);
// Per dim of an ndim-dim X: whether `axes` (valid, as MakeReducePlan checks) reduces it.
std::vector<bool> ReducedDims(int ndim, const std::vector<int>& axes);

template <bool kMean>
class ReduceOp final : public Operator<CPUContext> {
 public:
  ReduceOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  std::vector<int> axes_;
  bool keepdims_;
  std::vector<float> x_, y_;
  std::vector<double> acc_;
};

template <bool kMean>
class ReduceGradientOp final : public Operator<CPUContext> {
 public:
  ReduceGradientOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  std::vector<int> axes_;
  bool keepdims_;
  std::vector<float> dy_, dx_;
};

}  // namespace halfcaf
