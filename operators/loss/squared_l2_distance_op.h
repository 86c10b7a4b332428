// SquaredL2Distance: X, Y of the same shape (at least 1-d), viewed as (N, D) with N = dims[0];
// Dist (N, float) = 0.5 * ||X[i] - Y[i]||^2.
// SquaredL2DistanceGradient: (X, Y, dDist) -> (dX, dY) with dX[i] = dDist[i] * (X[i] - Y[i]) and
// dY = -dX; dX has X's dtype and dY has Y's. Float and float16 inputs (computed in float).
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

// Checks X and Y (float / float16, same shape, at least 1-d) and returns (N, D).
void SquaredL2DistanceShape(const Tensor& X, const Tensor& Y, const std::string& op,
                            int64_t* N, int64_t* D);

// Schema functions of the row distances (SquaredL2Distance, L1Distance): the distance is float
// (N), N = X.dims[0]; the gradient op's outputs have X's and Y's shapes and types; the cost reads
// X and Y once.
std::vector<TensorShape> RowDistanceShape(const OperatorDef&, const std::vector<TensorShape>& in);
std::vector<TensorShape> RowDistanceGradientShape(const OperatorDef&,
                                                  const std::vector<TensorShape>& in);
OpCost RowDistanceCost(const OperatorDef&, const std::vector<TensorShape>& in);

class SquaredL2DistanceOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;

 private:
  std::vector<float> x_, y_;
};

class SquaredL2DistanceGradientOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;

 private:
  std::vector<float> x_, y_, dd_, dx_, dy_;
};

}  // namespace halfcaf
