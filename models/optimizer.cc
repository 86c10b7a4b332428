#include "models/optimizer.h"

#include <limits>
#include <set>
#include <sstream>

#include "core/argument.h"
#include "core/enforce.h"
#include "core/types.h"

namespace halfcaf {

const char kIterBlob[] = "iter";
const char kLrBlob[] = "lr";

std::string MomentumBlob(const std::string& param) { return param + "_momentum"; }

std::string ScaledLrBlob(const std::string& prefix, float lr_mult) {
  if (lr_mult == 1.f) return prefix + kLrBlob;
  std::ostringstream s;
  s << prefix << kLrBlob << "_x" << lr_mult;
  return s.str();
}

namespace {

// The iteration counter, the learning-rate schedule and the groups' scaled rates.
void AddCounterAndSchedule(const OptimizerOptions& o, const std::vector<ParamGradient>& params,
                           NetDef* train, NetDef* init, const std::string& prefix) {
  const std::string iter = prefix + kIterBlob, lr = prefix + kLrBlob;
  // Counter and schedule.
  *init->add_op() = MakeOperatorDef(
      "ConstantFill", "", {}, {iter},
      {MakeArgument("shape", std::vector<int64_t>{1}), MakeArgument("value", 0.f),
       MakeArgument("dtype", static_cast<int>(DataType::INT64))});
  *train->add_op() = MakeOperatorDef("Iter", "", {iter}, {iter});
  std::vector<Argument> lr_args{MakeArgument("base_lr", o.base_lr),
                                MakeArgument("policy", o.lr_policy),
                                MakeArgument("gamma", o.gamma), MakeArgument("power", o.power)};
  if (o.stepsize > 0) lr_args.push_back(MakeArgument("stepsize", o.stepsize));
  if (o.lr_policy == "cosine") {
    // Caffe2's cosine multiplies base_lr by min + (max - min) (1 + cos(pi t / period)) / 2, with
    // restarts every period: from 1 to min_lr / base_lr over max_iter iterations.
    lr_args.push_back(MakeArgument("max_lr", 1.f));
    lr_args.push_back(MakeArgument("min_lr", o.base_lr > 0 ? o.min_lr / o.base_lr : 0.f));
    lr_args.push_back(MakeArgument("period", o.max_iter));
    lr_args.push_back(MakeArgument("t_mult", 1.f));
    lr_args.push_back(MakeArgument("lr_shrink", 1.f));
  } else if (o.max_iter > 0) {
    lr_args.push_back(MakeArgument("max_iter", o.max_iter));
  }
  if (!o.stepsizes.empty()) lr_args.push_back(MakeArgument("stepsizes", o.stepsizes));
  if (o.warmup_iters > 0) {
    lr_args.push_back(MakeArgument("warmup_iters", o.warmup_iters));
    lr_args.push_back(MakeArgument("warmup_start", o.warmup_start));
  }
  *train->add_op() = MakeOperatorDef("LearningRate", "", {iter}, {lr}, lr_args);
  // The groups' rates.
  std::set<std::string> scaled;
  for (const auto& pg : params) {
    const std::string blob = ScaledLrBlob(prefix, pg.lr_mult);
    if (pg.lr_mult == 1.f || !scaled.insert(blob).second) continue;
    *train->add_op() = MakeOperatorDef("Scale", "", {lr}, {blob},
                                       {MakeArgument("scale", pg.lr_mult)});
  }
}

bool Decays(const OptimizerOptions& o, const ParamGradient& pg) {
  return pg.role == ParamRole::WEIGHT || pg.role == ParamRole::OTHER ||
         o.weight_decay_on_bias_and_bn;
}

// The loss scale and overflow flag inputs, and the copy output, every fused update takes.
void AddMixedPrecisionIo(const ParamGradient& pg, const std::string& loss_scale,
                         const std::string& found_inf, std::vector<std::string>* in,
                         std::vector<std::string>* out, std::vector<Argument>* args) {
  if (!loss_scale.empty()) {
    in->push_back(loss_scale);
    if (!found_inf.empty()) in->push_back(found_inf);
  }
  if (!pg.copy.empty()) {
    out->push_back(pg.copy);
    if (pg.copy_dtype != DataType::FLOAT16) {
      args->push_back(MakeArgument("copy_dtype", std::string(DataTypeName(pg.copy_dtype))));
    }
  }
}

float EpsilonOf(const OptimizerOptions& o) {
  if (o.epsilon >= 0.f) return o.epsilon;
  if (o.type == "adagrad") return 1e-10f;
  if (o.type == "adadelta") return 1e-6f;
  return 1e-8f;  // adam, adamw, rmsprop
}

// A zero-filled state blob of the parameter's shape.
void AddZeroState(const std::string& param, const std::string& state, NetDef* init) {
  *init->add_op() = MakeOperatorDef("ConstantFill", "", {param}, {state},
                                    {MakeArgument("value", 0.f)});
}

// A 1-element float constant.
void AddScalar(const std::string& blob, float value, NetDef* init) {
  *init->add_op() = MakeOperatorDef("ConstantFill", "", {}, {blob},
                                    {MakeArgument("shape", std::vector<int64_t>{1}),
                                     MakeArgument("value", value)});
}

// Adagrad, RMSprop and Adadelta: their fused update per parameter and its zeroed states.
void AddAdaptive(const OptimizerOptions& o, const std::vector<ParamGradient>& params,
                 const std::string& loss_scale, const std::string& found_inf, NetDef* train,
                 NetDef* init, const std::string& prefix) {
  AddCounterAndSchedule(o, params, train, init, prefix);
  std::string op_type;
  std::vector<std::string> suffixes;
  std::vector<Argument> rule_args{MakeArgument("epsilon", EpsilonOf(o))};
  if (o.type == "adagrad") {
    op_type = "MixedPrecisionAdagradUpdate";
    suffixes = {"_sum"};
  } else if (o.type == "rmsprop") {
    op_type = "MixedPrecisionRmsPropUpdate";
    suffixes = {"_square_avg", "_momentum_buffer"};
    rule_args.push_back(MakeArgument("decay", o.alpha));
    rule_args.push_back(MakeArgument("momentum", o.momentum));
  } else {
    op_type = "MixedPrecisionAdadeltaUpdate";
    suffixes = {"_square_avg", "_acc_delta"};
    rule_args.push_back(MakeArgument("decay", o.rho));
  }
  for (const auto& pg : params) {
    std::vector<std::string> in{pg.grad}, out;
    for (const auto& suffix : suffixes) {
      const std::string state = prefix + pg.param + suffix;
      in.push_back(state);
      out.push_back(state);
      AddZeroState(pg.param, state, init);
    }
    in.push_back(ScaledLrBlob(prefix, pg.lr_mult));
    in.push_back(pg.param);
    out.push_back(pg.param);
    std::vector<Argument> args = rule_args;
    args.push_back(
        MakeArgument("weight_decay", Decays(o, pg) ? o.weight_decay * pg.decay_mult : 0.f));
    AddMixedPrecisionIo(pg, loss_scale, found_inf, &in, &out, &args);
    *train->add_op() = MakeOperatorDef(op_type, "update_" + pg.param, in, out, args);
  }
}

void AddAdam(const OptimizerOptions& o, const std::vector<ParamGradient>& params,
             const std::string& loss_scale, const std::string& found_inf, NetDef* train,
             NetDef* init, const std::string& prefix) {
  AddCounterAndSchedule(o, params, train, init, prefix);
  for (const auto& pg : params) {
    const std::string m1 = prefix + pg.param + "_moment_1", m2 = prefix + pg.param + "_moment_2";
    std::vector<std::string> in{pg.grad, m1, m2, ScaledLrBlob(prefix, pg.lr_mult), pg.param,
                                prefix + kIterBlob};
    std::vector<std::string> out{m1, m2, pg.param};
    std::vector<Argument> args{
        MakeArgument("beta1", o.beta1), MakeArgument("beta2", o.beta2),
        MakeArgument("epsilon", EpsilonOf(o)),
        MakeArgument("weight_decay", Decays(o, pg) ? o.weight_decay * pg.decay_mult : 0.f),
        MakeArgument("decoupled", o.type == "adamw" ? 1 : 0)};
    AddMixedPrecisionIo(pg, loss_scale, found_inf, &in, &out, &args);
    *train->add_op() = MakeOperatorDef("MixedPrecisionAdamUpdate", "update_" + pg.param, in, out,
                                       args);
    for (const auto& m : {m1, m2}) AddZeroState(pg.param, m, init);
  }
}

}  // namespace

const char* const kOptimizerTypes[9] = {"sgd",     "momentum", "nesterov", "lars",    "adam",
                                        "adamw",   "adagrad",  "rmsprop",  "adadelta"};

std::string OptimizerTypeList() {
  std::string s;
  for (const char* t : kOptimizerTypes) s += std::string(s.empty() ? "" : ", ") + t;
  return s;
}

void AddOptimizer(const OptimizerOptions& o, const std::vector<ParamGradient>& params,
                  const std::string& loss_scale, const std::string& found_inf, NetDef* train,
                  NetDef* init, const std::string& prefix) {
  if (o.type == "adam" || o.type == "adamw") {
    AddAdam(o, params, loss_scale, found_inf, train, init, prefix);
    return;
  }
  if (o.type == "adagrad" || o.type == "rmsprop" || o.type == "adadelta") {
    AddAdaptive(o, params, loss_scale, found_inf, train, init, prefix);
    return;
  }
  HALFCAF_ENFORCE(o.type == "sgd" || o.type == "momentum" || o.type == "nesterov" ||
                      o.type == "lars",
                  "unknown optimizer '", o.type, "' (", OptimizerTypeList(), ")");
  OptimizerOptions sgd = o;
  if (o.type == "sgd") sgd.momentum = 0.f;
  if (o.type == "nesterov") sgd.nesterov = true;
  AddMomentumSGD(sgd, params, loss_scale, found_inf, train, init, prefix);
}

void AddMomentumSGD(const OptimizerOptions& o, const std::vector<ParamGradient>& params,
                    const std::string& loss_scale, const std::string& found_inf, NetDef* train,
                    NetDef* init, const std::string& prefix) {
  AddCounterAndSchedule(o, params, train, init, prefix);
  const bool lars = o.type == "lars";
  const std::string trust = prefix + "lars_trust", lr_max = prefix + "lars_lr_max";
  if (lars) {
    AddScalar(trust, o.lars_trust, init);
    AddScalar(lr_max, std::numeric_limits<float>::max(), init);
  }

  // One fused update per parameter; momenta start at zero.
  for (const auto& pg : params) {
    const bool decay = Decays(o, pg);
    const std::string momentum = prefix + MomentumBlob(pg.param);
    std::string lr = ScaledLrBlob(prefix, pg.lr_mult);
    if (lars && decay) {
      // The weight's rate times Lars' trust ratio (offset 0, no lower bound: standard LARS).
      const std::string wd = prefix + pg.param + "_lars_wd", ratio = prefix + pg.param + "_lars";
      AddScalar(wd, o.weight_decay * pg.decay_mult, init);
      std::vector<std::string> lars_in{pg.param, pg.grad, wd, trust, lr_max};
      if (!loss_scale.empty()) lars_in.push_back(loss_scale);
      *train->add_op() = MakeOperatorDef("Lars", "", lars_in, {ratio},
                                         {MakeArgument("offset", 0.f), MakeArgument("lr_min", 0.f)});
      *train->add_op() = MakeOperatorDef("Mul", "", {lr, ratio}, {ratio + "_lr"});
      lr = ratio + "_lr";
    }
    std::vector<std::string> in{pg.grad, momentum, lr, pg.param};
    std::vector<std::string> out{momentum, pg.param};
    std::vector<Argument> args{MakeArgument("momentum", o.momentum),
                               MakeArgument("nesterov", o.nesterov ? 1 : 0),
                               MakeArgument("weight_decay",
                                            decay ? o.weight_decay * pg.decay_mult : 0.f)};
    AddMixedPrecisionIo(pg, loss_scale, found_inf, &in, &out, &args);
    *train->add_op() = MakeOperatorDef("MixedPrecisionMomentumSGDUpdate", "update_" + pg.param,
                                       in, out, args);
    AddZeroState(pg.param, momentum, init);
  }
}

}  // namespace halfcaf
