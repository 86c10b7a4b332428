#include "operators/optimizer/learning_rate_op.h"

#include <algorithm>
#include <cmath>

#include "core/gradient.h"

namespace halfcaf {

namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s;
}

}  // namespace

const std::vector<std::string>& LearningRatePolicy::KnownPolicies() {
  static const std::vector<std::string> names = {
      "fixed", "step", "exp", "inv", "poly", "linearWarmup", "constantWarmup", "alter",
      "hill",  "multistep"};
  return names;
}

LearningRatePolicy::LearningRatePolicy(const ArgumentHelper& args) {
  HALFCAF_ENFORCE(args.HasArgument("policy"),
                  "LearningRate needs the argument `policy`; known policies: ",
                  JoinNames(KnownPolicies()));
  name_ = args.GetSingleArgument<std::string>("policy", "");
  const std::string where = "LearningRate policy '" + name_ + "'";
  auto get_int = [&](const char* arg, int64_t dflt) {
    return args.GetSingleArgument<int64_t>(arg, dflt);
  };
  auto get_float = [&](const char* arg, float dflt) {
    return static_cast<double>(args.GetSingleArgument<float>(arg, dflt));
  };
  auto warmup_args = [&]() {
    num_iter_ = get_int("num_iter", 0);
    start_multiplier_ = get_float("start_multiplier", 0.f);
    HALFCAF_ENFORCE(num_iter_ >= 0, where, " needs num_iter >= 0, got ", num_iter_);
  };
  if (name_ == "fixed") {
    kind_ = Kind::kFixed;
  } else if (name_ == "step") {
    kind_ = Kind::kStep;
    stepsize_ = get_int("stepsize", 0);
    gamma_ = get_float("gamma", 0.f);
    HALFCAF_ENFORCE(stepsize_ > 0, where, " needs stepsize > 0, got ", stepsize_);
    HALFCAF_ENFORCE(gamma_ > 0, where, " needs gamma > 0, got ", gamma_);
  } else if (name_ == "exp") {
    kind_ = Kind::kExp;
    gamma_ = get_float("gamma", 0.f);
    HALFCAF_ENFORCE(gamma_ > 0, where, " needs gamma > 0, got ", gamma_);
  } else if (name_ == "inv") {
    kind_ = Kind::kInv;
    gamma_ = get_float("gamma", 0.f);
    power_ = get_float("power", 0.f);
    HALFCAF_ENFORCE(gamma_ >= 0, where, " needs gamma >= 0, got ", gamma_);
    HALFCAF_ENFORCE(power_ >= 0, where, " needs power >= 0, got ", power_);
  } else if (name_ == "poly") {
    kind_ = Kind::kPoly;
    power_ = get_float("power", 0.f);
    max_iter_ = get_int("max_iter", -1);
    HALFCAF_ENFORCE(max_iter_ > 0, where, " needs max_iter > 0, got ", max_iter_);
    HALFCAF_ENFORCE(power_ >= 0, where, " needs power >= 0, got ", power_);
  } else if (name_ == "linearWarmup") {
    kind_ = Kind::kLinearWarmup;
    warmup_args();
  } else if (name_ == "constantWarmup") {
    kind_ = Kind::kConstantWarmup;
    multiplier_ = get_float("multiplier", 0.5f);
    num_iter_ = get_int("num_iter", 0);
    HALFCAF_ENFORCE(num_iter_ >= 0, where, " needs num_iter >= 0, got ", num_iter_);
  } else if (name_ == "alter") {
    kind_ = Kind::kAlter;
    active_first_ = args.GetSingleArgument<bool>("active_first", true);
    active_period_ = get_int("active_period", -1);
    inactive_period_ = get_int("inactive_period", -1);
    HALFCAF_ENFORCE(active_period_ >= 0 && inactive_period_ >= 0 &&
                        active_period_ + inactive_period_ > 0,
                    where, " needs active_period >= 0 and inactive_period >= 0, not both 0; got ",
                    active_period_, " and ", inactive_period_);
  } else if (name_ == "hill") {
    kind_ = Kind::kHill;
    warmup_args();
    gamma_ = get_float("gamma", 0.f);
    power_ = get_float("power", 0.f);
    end_multiplier_ = get_float("end_multiplier", 0.f);
    HALFCAF_ENFORCE(gamma_ >= 0, where, " needs gamma >= 0, got ", gamma_);
    HALFCAF_ENFORCE(power_ >= 0, where, " needs power >= 0, got ", power_);
  } else if (name_ == "multistep") {
    kind_ = Kind::kMultistep;
    stepsizes_ = args.GetRepeatedArgument<int64_t>("stepsizes");
    gamma_ = get_float("gamma", 0.f);
    HALFCAF_ENFORCE(!stepsizes_.empty(), where, " needs the argument `stepsizes` (ints)");
    HALFCAF_ENFORCE(std::is_sorted(stepsizes_.begin(), stepsizes_.end()) && stepsizes_[0] >= 0,
                    where, " needs non-negative stepsizes in increasing order, got ",
                    DimsString(stepsizes_));
    HALFCAF_ENFORCE(gamma_ > 0, where, " needs gamma > 0, got ", gamma_);
  } else {
    HALFCAF_THROW("unknown LearningRate policy '", name_, "'; known policies: ",
                  JoinNames(KnownPolicies()));
  }
  warmup_iters_ = get_int("warmup_iters", 0);
  warmup_start_ = get_float("warmup_start", 0.f);
  HALFCAF_ENFORCE(warmup_iters_ >= 0, "warmup_iters must be >= 0, got ", warmup_iters_);
  HALFCAF_ENFORCE(warmup_start_ >= 0 && warmup_start_ <= 1, "warmup_start must be in [0, 1], got ",
                  warmup_start_);
}

double LearningRatePolicy::LinearWarmup(int64_t iter) const {
  if (iter >= num_iter_) return 1.0;
  return start_multiplier_ +
         (1.0 - start_multiplier_) * static_cast<double>(iter) / static_cast<double>(num_iter_);
}

double LearningRatePolicy::Inv(int64_t iter) const {
  return std::pow(1.0 + gamma_ * static_cast<double>(iter), -power_);
}

double LearningRatePolicy::operator()(int64_t iter) const {
  double warm = 1.0;
  if (iter < warmup_iters_) {
    warm = warmup_start_ + (1.0 - warmup_start_) * static_cast<double>(iter) /
                               static_cast<double>(warmup_iters_);
  }
  return warm * Base(iter);
}

double LearningRatePolicy::Base(int64_t iter) const {
  switch (kind_) {
    case Kind::kFixed:
      return 1.0;
    case Kind::kStep:
      return std::pow(gamma_, static_cast<double>(iter / stepsize_));
    case Kind::kExp:
      return std::pow(gamma_, static_cast<double>(iter));
    case Kind::kInv:
      return Inv(iter);
    case Kind::kPoly: {
      double left = 1.0 - static_cast<double>(iter) / static_cast<double>(max_iter_);
      return std::pow(std::max(left, 0.0), power_);
    }
    case Kind::kLinearWarmup:
      return LinearWarmup(iter);
    case Kind::kConstantWarmup:
      return iter < num_iter_ ? multiplier_ : 1.0;
    case Kind::kAlter: {
      const int64_t phase = iter % (active_period_ + inactive_period_);
      if (active_first_) return phase < active_period_ ? 1.0 : 0.0;
      return phase < inactive_period_ ? 0.0 : 1.0;
    }
    case Kind::kHill:
      if (iter < num_iter_) return LinearWarmup(iter);
      return std::max(end_multiplier_, Inv(iter - num_iter_));
    case Kind::kMultistep: {
      const auto passed = std::upper_bound(stepsizes_.begin(), stepsizes_.end(), iter) -
                          stepsizes_.begin();
      return std::pow(gamma_, static_cast<double>(passed));
    }
  }
  return 1.0;
}

float RequiredBaseLr(const OperatorBase& op) {
  HALFCAF_ENFORCE(op.HasArgument("base_lr"), "LearningRate needs the argument `base_lr` (float)");
  return op.GetSingleArgument<float>("base_lr", 0.f);
}

float ComputeLearningRate(const Tensor& iter_t, float base_lr, const LearningRatePolicy& policy) {
  HALFCAF_ENFORCE(iter_t.dtype() == DataType::INT64 && iter_t.numel() == 1,
                  "iter must be an int64 tensor with one element, got ", iter_t.DebugString());
  const int64_t iter = iter_t.data<int64_t>()[0];
  HALFCAF_ENFORCE(iter >= 0, "iter must be >= 0, got ", iter);
  return static_cast<float>(base_lr * policy(iter));
}

LearningRateOp::LearningRateOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), base_lr_(RequiredBaseLr(*this)), policy_(args_) {}

void LearningRateOp::RunOnDevice() {
  const float lr = ComputeLearningRate(CPUInput(0), base_lr_, policy_);
  Output(0, {})->mutable_data<float>()[0] = lr;
}

REGISTER_CPU_OPERATOR(LearningRate, LearningRateOp);
NO_GRADIENT(LearningRate);

OPERATOR_SCHEMA(LearningRate)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>&) {
      return std::vector<TensorShape>{TensorShape{{}, DataType::FLOAT}};
    })
    .SetDoc("Learning rate schedule: lr = base_lr * f(iter) as a 0-d float tensor. Policies "
            "(f): fixed: 1; step: gamma^floor(iter/stepsize); exp: gamma^iter; inv: "
            "(1 + gamma*iter)^(-power); poly: (1 - iter/max_iter)^power, 0 from max_iter on "
            "(Caffe2 leaves that case undefined); linearWarmup: start_multiplier + "
            "(1 - start_multiplier)*iter/num_iter before num_iter, then 1; constantWarmup: "
            "multiplier before num_iter, then 1; alter: 1 during the active_period, 0 during "
            "the inactive_period, repeating (active first unless active_first = 0); hill: "
            "linearWarmup for num_iter iterations, then max(end_multiplier, "
            "(1 + gamma*(iter - num_iter))^(-power)); multistep (Caffe1's policy, an extension): "
            "gamma^(number of stepsizes <= iter). Arguments that would make a schedule "
            "meaningless (stepsize <= 0, max_iter <= 0, a missing gamma for step/exp/multistep) "
            "are errors. Optimizers that subtract the update (MomentumSGDUpdate) take a "
            "positive base_lr; nets that add it with WeightedSum take a negative one.")
    .Arg("base_lr", "float, required: the learning rate at multiplier 1 (may be negative)")
    .Arg("warmup_iters", "int, default 0 (halfcaf extension, any policy): the multiplier is "
         "further scaled from warmup_start up to 1 linearly over the first warmup_iters")
    .Arg("warmup_start", "float, default 0 (halfcaf extension): scale at iteration 0 of warm-up")
    .Arg("policy", "string, required: one of fixed, step, exp, inv, poly, linearWarmup, "
                   "constantWarmup, alter, hill, multistep")
    .Arg("stepsize", "int, default 0 (step): iterations per decay step, must be > 0")
    .Arg("stepsizes", "ints (multistep): iterations at which to multiply by gamma, increasing")
    .Arg("gamma", "float, default 0 (step, exp, inv, hill, multistep): decay factor")
    .Arg("power", "float, default 0 (inv, poly, hill): exponent")
    .Arg("max_iter", "int, default -1 (poly): iteration at which the rate reaches 0; must be > 0")
    .Arg("start_multiplier", "float, default 0 (linearWarmup, hill): multiplier at iteration 0")
    .Arg("num_iter", "int, default 0 (linearWarmup, constantWarmup, hill): warm-up length")
    .Arg("multiplier", "float, default 0.5 (constantWarmup): multiplier during warm-up")
    .Arg("active_first", "bool, default 1 (alter): start with an active period")
    .Arg("active_period", "int, default -1 (alter): length of active periods, must be >= 0")
    .Arg("inactive_period", "int, default -1 (alter): length of inactive periods, must be >= 0")
    .Arg("end_multiplier", "float, default 0 (hill): lower bound after warm-up")
    .Input(0, "iter", "int64 CPU tensor with one element: the iteration (from Iter)")
    .Output(0, "lr", "0-d float tensor: base_lr * f(iter)");

}  // namespace halfcaf
