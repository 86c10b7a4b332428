// LearningRate: lr = base_lr * f(iter), a 0-d float tensor, where `iter` is the int64 counter
// that Iter maintains and f is the multiplier of the policy named by `policy`. LearningRatePolicy
// holds that multiplier on its own (arguments read and validated once), so schedules can be
// tested and reused without an operator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/operator.h"

namespace halfcaf {

// f(iter) for one policy:
//   fixed           1
//   step            gamma ^ floor(iter / stepsize)
//   exp             gamma ^ iter
//   inv             (1 + gamma * iter) ^ (-power)
//   poly            (1 - iter / max_iter) ^ power, and 0 from max_iter on
//   linearWarmup    start_multiplier + (1 - start_multiplier) * iter / num_iter before num_iter,
//                   then 1
//   constantWarmup  multiplier before num_iter, then 1
//   alter           1 during active periods, 0 during inactive ones (active_first: active first)
//   hill            linearWarmup for num_iter iterations, then
//                   max(end_multiplier, (1 + gamma * (iter - num_iter)) ^ (-power))
//   multistep       gamma ^ (number of entries of stepsizes that are <= iter)  (Caffe1 policy)
// Extension: with warmup_iters > 0 any policy's multiplier is scaled by a linear ramp from
// warmup_start to 1 over the first warmup_iters iterations.
class LearningRatePolicy {
 public:
  // Reads `policy` and the arguments it uses; throws naming the argument on a bad value and
  // listing the known policies when `policy` is missing or unknown.
  explicit LearningRatePolicy(const ArgumentHelper& args);

  // The multiplier at iteration iter (>= 0).
  double operator()(int64_t iter) const;
  const std::string& name() const { return name_; }

  static const std::vector<std::string>& KnownPolicies();

 private:
  enum class Kind { kFixed, kStep, kExp, kInv, kPoly, kLinearWarmup, kConstantWarmup, kAlter,
                    kHill, kMultistep };
  double Base(int64_t iter) const;  // the policy alone, without the warm-up extension
  double LinearWarmup(int64_t iter) const;
  double Inv(int64_t iter) const;

  std::string name_;
  Kind kind_ = Kind::kFixed;
  int64_t stepsize_ = 0, max_iter_ = -1, num_iter_ = 0;
  int64_t active_period_ = -1, inactive_period_ = -1;
  bool active_first_ = true;
  double gamma_ = 0, power_ = 0, start_multiplier_ = 0, multiplier_ = 0.5, end_multiplier_ = 0;
  std::vector<int64_t> stepsizes_;
  int64_t warmup_iters_ = 0;  // extension: linear warm-up applied on top of any policy
  double warmup_start_ = 0;
};

// base_lr of a LearningRate op (required; throws naming it when absent).
float RequiredBaseLr(const OperatorBase& op);
// base_lr * policy(iter) for the int64 one-element CPU tensor `iter` (checked: int64, >= 0).
float ComputeLearningRate(const Tensor& iter, float base_lr, const LearningRatePolicy& policy);

class LearningRateOp final : public Operator<CPUContext> {
 public:
  LearningRateOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  float base_lr_;
  LearningRatePolicy policy_;
};

}  // namespace halfcaf
