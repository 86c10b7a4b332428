#include "operators/optimizer/learning_rate_policy.h"

#include <algorithm>
#include <cmath>

#include "core/enforce.h"

namespace halfcaf {

namespace {

constexpr double kPi = 3.14159265358979323846;

std::string JoinNames(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s;
}

}  // namespace

// The arguments of one policy: names are looked up with the policy's prefix (empty, or
// sub_policy_<i>_ for a composite stage), and errors name the prefixed argument.
class LearningRatePolicy::Args {
 public:
  Args(const ArgumentHelper& args, const std::string& prefix, const std::string& where)
      : args_(args), prefix_(prefix), where_(where) {}

  const ArgumentHelper& helper() const { return args_; }
  const std::string& where() const { return where_; }
  std::string Name(const std::string& arg) const { return prefix_ + arg; }
  int64_t Int(const char* arg, int64_t dflt) const {
    return args_.GetSingleArgument<int64_t>(Name(arg), dflt);
  }
  // Caffe2 reads its float arguments as float; so do we, then compute in double.
  double Float(const char* arg, float dflt) const {
    return static_cast<double>(args_.GetSingleArgument<float>(Name(arg), dflt));
  }
  bool Bool(const char* arg, bool dflt) const {
    return args_.GetSingleArgument<bool>(Name(arg), dflt);
  }
  std::vector<int64_t> Ints(const char* arg) const {
    return args_.GetRepeatedArgument<int64_t>(Name(arg));
  }
  // An iteration count that must be >= 0.
  int64_t Count(const char* arg, int64_t dflt) const {
    const int64_t n = Int(arg, dflt);
    Require(n >= 0, arg, ">= 0", n);
    return n;
  }
  // Throws "<policy> needs <arg> <requirement>, got <value>" unless ok.
  template <typename V>
  void Require(bool ok, const char* arg, const std::string& requirement, const V& value) const {
    if (!ok) HALFCAF_THROW(where_, " needs ", Name(arg), " ", requirement, ", got ", value);
  }

 private:
  const ArgumentHelper& args_;
  std::string prefix_, where_;
};

const std::vector<LearningRatePolicy::Entry>& LearningRatePolicy::Table() {
  static const std::vector<Entry> table = {
      {"fixed", Kind::kFixed, &LearningRatePolicy::ReadNothing},
      {"step", Kind::kStep, &LearningRatePolicy::ReadStep},
      {"exp", Kind::kExp, &LearningRatePolicy::ReadExp},
      {"inv", Kind::kInv, &LearningRatePolicy::ReadInv},
      {"poly", Kind::kPoly, &LearningRatePolicy::ReadPoly},
      {"linearWarmup", Kind::kLinearWarmup, &LearningRatePolicy::ReadWarmup},
      {"constantWarmup", Kind::kConstantWarmup, &LearningRatePolicy::ReadConstantWarmup},
      {"alter", Kind::kAlter, &LearningRatePolicy::ReadAlter},
      {"hill", Kind::kHill, &LearningRatePolicy::ReadHill},
      {"gate", Kind::kGate, &LearningRatePolicy::ReadGate},
      {"slope", Kind::kSlope, &LearningRatePolicy::ReadSlope},
      {"cosine", Kind::kCosine, &LearningRatePolicy::ReadCosine},
      {"cyclical", Kind::kCyclical, &LearningRatePolicy::ReadCyclical},
      {"constantThenLinearWarmup", Kind::kConstantThenLinearWarmup,
       &LearningRatePolicy::ReadConstantThenLinearWarmup},
      {"composite", Kind::kComposite, &LearningRatePolicy::ReadComposite},
      {"multistep", Kind::kMultistep, &LearningRatePolicy::ReadMultistep},
  };
  return table;
}

const std::vector<std::string>& LearningRatePolicy::KnownPolicies() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Entry& e : Table()) n.push_back(e.name);
    return n;
  }();
  return names;
}

LearningRatePolicy::LearningRatePolicy(const ArgumentHelper& args)
    : LearningRatePolicy(args, "", "") {
  warmup_iters_ = args.GetSingleArgument<int64_t>("warmup_iters", 0);
  warmup_start_ = args.GetSingleArgument<float>("warmup_start", 0.f);
  HALFCAF_ENFORCE(warmup_iters_ >= 0, "warmup_iters must be >= 0, got ", warmup_iters_);
  HALFCAF_ENFORCE(warmup_start_ >= 0 && warmup_start_ <= 1, "warmup_start must be in [0, 1], got ",
                  warmup_start_);
}

LearningRatePolicy::LearningRatePolicy(const ArgumentHelper& args, const std::string& prefix,
                                       const std::string& stage) {
  const std::string policy_arg = prefix + "policy";
  const std::string in_stage = stage.empty() ? "" : " (" + stage + ")";
  HALFCAF_ENFORCE(args.HasArgument(policy_arg), "LearningRate", in_stage, " needs the argument `",
                  policy_arg, "`; known policies: ", JoinNames(KnownPolicies()));
  name_ = args.GetSingleArgument<std::string>(policy_arg, "");
  const auto& table = Table();
  auto entry = std::find_if(table.begin(), table.end(),
                            [&](const Entry& e) { return name_ == e.name; });
  HALFCAF_ENFORCE(entry != table.end(), "unknown LearningRate policy '", name_, "'", in_stage,
                  "; known policies: ", JoinNames(KnownPolicies()));
  kind_ = entry->kind;
  (this->*entry->read)(Args(args, prefix, "LearningRate policy '" + name_ + "'" + in_stage));
}

void LearningRatePolicy::ReadStep(const Args& a) {
  stepsize_ = a.Int("stepsize", 0);
  gamma_ = a.Float("gamma", 0.f);
  a.Require(stepsize_ > 0, "stepsize", "> 0", stepsize_);
  a.Require(gamma_ > 0, "gamma", "> 0", gamma_);
}

void LearningRatePolicy::ReadExp(const Args& a) {
  gamma_ = a.Float("gamma", 0.f);
  a.Require(gamma_ > 0, "gamma", "> 0", gamma_);
}

void LearningRatePolicy::ReadInv(const Args& a) {
  gamma_ = a.Float("gamma", 0.f);
  power_ = a.Float("power", 0.f);
  a.Require(gamma_ >= 0, "gamma", ">= 0", gamma_);
  a.Require(power_ >= 0, "power", ">= 0", power_);
}

void LearningRatePolicy::ReadPoly(const Args& a) {
  power_ = a.Float("power", 0.f);
  max_iter_ = a.Int("max_iter", -1);
  a.Require(max_iter_ > 0, "max_iter", "> 0", max_iter_);
  a.Require(power_ >= 0, "power", ">= 0", power_);
}

void LearningRatePolicy::ReadWarmup(const Args& a) {
  num_iter_ = a.Count("num_iter", 0);
  start_multiplier_ = a.Float("start_multiplier", 0.f);
}

void LearningRatePolicy::ReadConstantWarmup(const Args& a) {
  multiplier_ = a.Float("multiplier", 0.5f);
  num_iter_ = a.Count("num_iter", 0);
}

void LearningRatePolicy::ReadAlter(const Args& a) {
  active_first_ = a.Bool("active_first", true);
  active_period_ = a.Int("active_period", -1);
  inactive_period_ = a.Int("inactive_period", -1);
  HALFCAF_ENFORCE(active_period_ >= 0 && inactive_period_ >= 0 &&
                      active_period_ + inactive_period_ > 0,
                  a.where(), " needs ", a.Name("active_period"), " >= 0 and ",
                  a.Name("inactive_period"), " >= 0, not both 0; got ", active_period_, " and ",
                  inactive_period_);
}

// hill is linearWarmup, then inv bounded below by end_multiplier.
void LearningRatePolicy::ReadHill(const Args& a) {
  ReadWarmup(a);
  ReadInv(a);
  end_multiplier_ = a.Float("end_multiplier", 0.f);
}

void LearningRatePolicy::ReadGate(const Args& a) {
  multiplier_1_ = a.Float("multiplier_1", 1.f);
  multiplier_2_ = a.Float("multiplier_2", 1.f);
  num_iter_ = a.Count("num_iter", 0);
}

void LearningRatePolicy::ReadSlope(const Args& a) {
  num_iter_ = a.Int("num_iter_1", 0);
  multiplier_1_ = a.Float("multiplier_1", 0.f);
  num_iter_2_ = a.Int("num_iter_2", 0);
  multiplier_2_ = a.Float("multiplier_2", 0.f);
  a.Require(num_iter_ > 0, "num_iter_1", "> 0", num_iter_);
  a.Require(num_iter_2_ > num_iter_, "num_iter_2", MakeString("> ", a.Name("num_iter_1"), " = ",
                                                              num_iter_),
            num_iter_2_);
}

void LearningRatePolicy::ReadCosine(const Args& a) {
  max_lr_ = a.Float("max_lr", 0.5f);
  min_lr_ = a.Float("min_lr", 0.1f);
  period_ = a.Int("period", 50);
  t_mult_ = a.Float("t_mult", 1.f);
  lr_shrink_ = a.Float("lr_shrink", 0.99f);
  a.Require(period_ > 0, "period", "> 0", period_);
  a.Require(t_mult_ >= 1, "t_mult", ">= 1 (shrinking cycles would end after period / (1 - t_mult))",
            t_mult_);
  a.Require(max_lr_ >= min_lr_, "max_lr", MakeString(">= ", a.Name("min_lr"), " = ", min_lr_),
            max_lr_);
  a.Require(lr_shrink_ >= 0, "lr_shrink", ">= 0", lr_shrink_);
}

void LearningRatePolicy::ReadCyclical(const Args& a) {
  // Caffe2 takes the op's base_lr (never a prefixed one) and compares magnitudes: nets that add
  // the update have a negative base_lr.
  const double base_lr = a.helper().GetSingleArgument<float>("base_lr", 0.f);
  const double max_lr = a.Float("max_lr", 0.005f);
  stepsize_ = a.Int("stepsize", 0);
  decay_ = a.Float("decay", 1.f);
  a.Require(stepsize_ > 0, "stepsize", "> 0", stepsize_);
  HALFCAF_ENFORCE(base_lr != 0, a.where(), " needs base_lr != 0 (the rate is relative to it)");
  a.Require(std::abs(max_lr) >= std::abs(base_lr), "max_lr",
            MakeString("in absolute value >= |base_lr| = ", std::abs(base_lr)), max_lr);
  amplitude_ = std::abs(max_lr) / std::abs(base_lr) - 1.0;
}

void LearningRatePolicy::ReadConstantThenLinearWarmup(const Args& a) {
  start_multiplier_ = a.Float("start_warmup_multiplier", 0.1f);
  constant_num_iter_ = a.Count("constant_warmup_num_iter", 10000000);
  num_iter_ = a.Count("linear_warmup_num_iter", 10000000);
}

void LearningRatePolicy::ReadComposite(const Args& a) {
  const std::vector<int64_t> lengths = a.Ints("sub_policy_num_iters");
  a.Require(!lengths.empty(), "sub_policy_num_iters", "(ints: one length per stage)", "none");
  // Caffe2 starts stage 0 at iteration 1, the first value of an Iter counter.
  int64_t first_iter = 1;
  for (size_t i = 0; i < lengths.size(); ++i) {
    a.Require(lengths[i] > 0, "sub_policy_num_iters", "entries > 0", DimsString(lengths));
    const std::string prefix = MakeString("sub_policy_", i, "_");
    const std::string stage = MakeString("composite stage ", i);
    HALFCAF_ENFORCE(a.helper().GetSingleArgument<std::string>(prefix + "policy", "") != "composite",
                    a.where(), ": ", stage, " (", prefix, "policy) cannot be composite");
    const double lr_scale = a.helper().GetSingleArgument<float>(prefix + "lr_scale", 1.f);
    stages_.push_back(Stage{first_iter, lr_scale, LearningRatePolicy(a.helper(), prefix, stage)});
    first_iter += lengths[i];
  }
}

void LearningRatePolicy::ReadMultistep(const Args& a) {
  stepsizes_ = a.Ints("stepsizes");
  gamma_ = a.Float("gamma", 0.f);
  HALFCAF_ENFORCE(!stepsizes_.empty(), a.where(), " needs the argument `", a.Name("stepsizes"),
                  "` (ints)");
  HALFCAF_ENFORCE(std::is_sorted(stepsizes_.begin(), stepsizes_.end()) && stepsizes_[0] >= 0,
                  a.where(), " needs non-negative ", a.Name("stepsizes"),
                  " in increasing order, got ", DimsString(stepsizes_));
  a.Require(gamma_ > 0, "gamma", "> 0", gamma_);
}

double LearningRatePolicy::LinearWarmup(int64_t iter) const {
  if (iter >= num_iter_) return 1.0;
  return start_multiplier_ +
         (1.0 - start_multiplier_) * static_cast<double>(iter) / static_cast<double>(num_iter_);
}

double LearningRatePolicy::Inv(int64_t iter) const {
  return std::pow(1.0 + gamma_ * static_cast<double>(iter), -power_);
}

double LearningRatePolicy::Cosine(int64_t iter) const {
  const double t = static_cast<double>(iter), period = static_cast<double>(period_);
  double cycle;  // restarts so far
  double start;  // first iteration of the current cycle
  if (t_mult_ == 1.0) {
    cycle = std::floor(t / period);
    start = cycle * period;
  } else {
    // Cycle i starts at period * (t_mult^i - 1) / (t_mult - 1). Caffe2 inverts that with logs
    // alone, which can put a restart point in the previous cycle (log(1000) / log(10) is
    // 2.9999999999999996); the exact starts settle it.
    auto start_of = [&](double i) { return period * (std::pow(t_mult_, i) - 1) / (t_mult_ - 1); };
    cycle = std::floor(std::log1p(t / period * (t_mult_ - 1)) / std::log(t_mult_));
    if (start_of(cycle + 1) <= t) {
      cycle += 1;
    } else if (start_of(cycle) > t) {
      cycle -= 1;
    }
    start = start_of(cycle);
  }
  const double length = period * std::pow(t_mult_, cycle);
  const double cosine = 0.5 * (1.0 + std::cos(kPi * (t - start) / length));
  return std::pow(lr_shrink_, cycle) * (min_lr_ + (max_lr_ - min_lr_) * cosine);
}

double LearningRatePolicy::Cyclical(int64_t iter) const {
  const int64_t cycle = iter / (2 * stepsize_);
  const double x =
      std::abs(static_cast<double>(iter) / static_cast<double>(stepsize_) - 2.0 * cycle - 1.0);
  return 1.0 + amplitude_ * std::max(0.0, 1.0 - x) * std::pow(decay_, static_cast<double>(cycle));
}

double LearningRatePolicy::Composite(int64_t iter) const {
  // The last stage that has started; stage 0 also takes iteration 0.
  auto next = std::upper_bound(stages_.begin() + 1, stages_.end(), iter,
                               [](int64_t it, const Stage& s) { return it < s.first_iter; });
  const Stage& stage = *(next - 1);
  return stage.lr_scale * stage.policy(iter);
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
    case Kind::kGate:
      return iter < num_iter_ ? multiplier_1_ : multiplier_2_;
    case Kind::kSlope: {
      if (iter < num_iter_) return multiplier_1_;
      const double ramp = static_cast<double>(iter - num_iter_) * (multiplier_2_ - multiplier_1_) /
                          static_cast<double>(num_iter_2_ - num_iter_);
      return std::max(multiplier_2_, multiplier_1_ + ramp);
    }
    case Kind::kCosine:
      return Cosine(iter);
    case Kind::kCyclical:
      return Cyclical(iter);
    case Kind::kConstantThenLinearWarmup:
      if (iter < constant_num_iter_) return start_multiplier_;
      return LinearWarmup(iter - constant_num_iter_);
    case Kind::kComposite:
      return Composite(iter);
    case Kind::kMultistep: {
      const auto passed = std::upper_bound(stepsizes_.begin(), stepsizes_.end(), iter) -
                          stepsizes_.begin();
      return std::pow(gamma_, static_cast<double>(passed));
    }
  }
  return 1.0;
}

}  // namespace halfcaf
