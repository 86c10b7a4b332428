// LearningRatePolicy: the multiplier f(iter) of the LearningRate op (lr = base_lr * f(iter)),
// with Caffe2's policy names, argument names, defaults and formulas. Arguments are read and
// validated once, so schedules can be tested and reused without an operator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/argument.h"

namespace halfcaf {

// f(iter) for one policy (Caffe2 defaults in brackets):
//   fixed           1
//   step            gamma ^ floor(iter / stepsize)
//   exp             gamma ^ iter
//   inv             (1 + gamma * iter) ^ (-power)
//   poly            (1 - iter / max_iter) ^ power, and 0 from max_iter on
//   linearWarmup    start_multiplier + (1 - start_multiplier) * iter / num_iter before num_iter,
//                   then 1
//   constantWarmup  multiplier [0.5] before num_iter, then 1
//   alter           1 during active periods, 0 during inactive ones (active_first: active first)
//   hill            linearWarmup for num_iter iterations, then
//                   max(end_multiplier, (1 + gamma * (iter - num_iter)) ^ (-power))
//   gate            multiplier_1 [1] before num_iter [0], then multiplier_2 [1]
//   slope           multiplier_1 [0] before num_iter_1 [0], then
//                   max(multiplier_2, multiplier_1 + (iter - num_iter_1) *
//                       (multiplier_2 - multiplier_1) / (num_iter_2 - num_iter_1))  [num_iter_2 0]
//                   (a decrease: with multiplier_2 > multiplier_1 it jumps to multiplier_2)
//   cosine          SGDR (warm restarts): cycle i (from 0) lasts period * t_mult^i iterations;
//                   at t iterations into a cycle of length T the multiplier is
//                   lr_shrink^i * (min_lr + (max_lr - min_lr) * (1 + cos(pi * t / T)) / 2)
//                   [max_lr 0.5, min_lr 0.1, period 50, t_mult 1, lr_shrink 0.99]
//   cyclical        triangular, relative to base_lr: with c = floor(iter / (2 * stepsize)) and
//                   x = |iter / stepsize - 2c - 1|,
//                   1 + (|max_lr| / |base_lr| - 1) * max(0, 1 - x) * decay^c
//                   (1 at the cycle ends 2c * stepsize, |max_lr| / |base_lr| at their middles)
//                   [max_lr 0.005, stepsize 0, decay 1]
//   constantThenLinearWarmup
//                   start_warmup_multiplier [0.1] for constant_warmup_num_iter [1e7]
//                   iterations, then linear up to 1 over linear_warmup_num_iter [1e7], then 1
//   composite       stages one after another: sub_policy_num_iters (ints > 0) gives their
//                   lengths; stage i is the policy sub_policy_<i>_policy with its arguments
//                   prefixed sub_policy_<i>_ (sub_policy_<i>_gamma, ...), times
//                   sub_policy_<i>_lr_scale [1]. As in Caffe2, stage 0 covers iterations
//                   1 .. n0 (Iter counts the first step as 1; iteration 0, undefined in Caffe2,
//                   belongs to stage 0 here), stage i the next n_i, the last stage runs on,
//                   and each stage sees the absolute iteration, not the one relative to its start.
//                   A stage may not be composite; cyclical stages use the op's base_lr.
//   multistep       gamma ^ (number of entries of stepsizes that are <= iter)  (Caffe1 policy)
// Extension: with warmup_iters > 0 any policy's multiplier (a composite's as a whole) is scaled
// by a linear ramp from warmup_start to 1 over the first warmup_iters iterations.
//
// Validation: where Caffe2 leaves a value undefined or only DCHECKs it (stepsize > 0, period > 0,
// max_lr >= min_lr, ...), a bad value throws once, naming the policy and the argument (with its
// sub_policy_<i>_ prefix inside composite). Caffe2's defaults are kept even where odd (cosine's
// max_lr 0.5 / min_lr 0.1 are multipliers of base_lr, not rates). cosine needs t_mult >= 1:
// shrinking cycles would end after period / (1 - t_mult) iterations.
//
// PyTorch's torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max, eta_min) with initial
// rate lr is cosine with base_lr = lr, max_lr = 1, min_lr = eta_min / lr, period = T_max (t_mult
// 1): iter t gives eta_min + (lr - eta_min) * (1 + cos(pi * t / T_max)) / 2 for t = 0 .. T_max - 1.
// They part at T_max: PyTorch reaches eta_min there and continues the cosine back up (period
// 2 * T_max), Caffe2 restarts at lr * lr_shrink (set lr_shrink = 1 for plain restarts). In a net,
// Iter has counted the current step when LearningRate runs (first step: iter 1), while PyTorch's
// first step uses t = 0.
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
                    kHill, kGate, kSlope, kCosine, kCyclical, kConstantThenLinearWarmup,
                    kComposite, kMultistep };
  class Args;  // the arguments of one policy: the op's, or a composite stage's (prefixed)
  using Reader = void (LearningRatePolicy::*)(const Args&);
  struct Entry {
    const char* name;
    Kind kind;
    Reader read;
  };
  struct Stage;

  static const std::vector<Entry>& Table();
  // A composite stage (`stage` names it in errors) or, with an empty prefix, the whole policy.
  LearningRatePolicy(const ArgumentHelper& args, const std::string& prefix,
                     const std::string& stage);
  void ReadNothing(const Args&) {}
  void ReadStep(const Args& a);
  void ReadExp(const Args& a);
  void ReadInv(const Args& a);
  void ReadPoly(const Args& a);
  void ReadWarmup(const Args& a);  // linearWarmup and the start of hill
  void ReadConstantWarmup(const Args& a);
  void ReadAlter(const Args& a);
  void ReadHill(const Args& a);
  void ReadGate(const Args& a);
  void ReadSlope(const Args& a);
  void ReadCosine(const Args& a);
  void ReadCyclical(const Args& a);
  void ReadConstantThenLinearWarmup(const Args& a);
  void ReadComposite(const Args& a);
  void ReadMultistep(const Args& a);

  double Base(int64_t iter) const;  // the policy alone, without the warm-up extension
  double LinearWarmup(int64_t iter) const;
  double Inv(int64_t iter) const;
  double Cosine(int64_t iter) const;
  double Cyclical(int64_t iter) const;
  double Composite(int64_t iter) const;

  std::string name_;
  Kind kind_ = Kind::kFixed;
  int64_t stepsize_ = 0, max_iter_ = -1, num_iter_ = 0;
  int64_t active_period_ = -1, inactive_period_ = -1;
  bool active_first_ = true;
  double gamma_ = 0, power_ = 0, start_multiplier_ = 0, multiplier_ = 0.5, end_multiplier_ = 0;
  std::vector<int64_t> stepsizes_;
  // gate, slope
  double multiplier_1_ = 1, multiplier_2_ = 1;
  int64_t num_iter_2_ = 0;  // slope's num_iter_1 is num_iter_
  // cosine
  double max_lr_ = 0.5, min_lr_ = 0.1, t_mult_ = 1, lr_shrink_ = 0.99;
  int64_t period_ = 50;
  // cyclical: |max_lr| / |base_lr| - 1
  double amplitude_ = 0, decay_ = 1;
  // constantThenLinearWarmup: the constant part (the linear part is num_iter_)
  int64_t constant_num_iter_ = 0;
  std::vector<Stage> stages_;  // composite
  int64_t warmup_iters_ = 0;   // extension: linear warm-up applied on top of any policy
  double warmup_start_ = 0;
};

struct LearningRatePolicy::Stage {
  int64_t first_iter;  // the stage covers [first_iter, next stage's first_iter)
  double lr_scale;
  LearningRatePolicy policy;
};

}  // namespace halfcaf
