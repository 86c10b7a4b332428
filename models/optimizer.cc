#include "models/optimizer.h"

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
  if (o.max_iter > 0) lr_args.push_back(MakeArgument("max_iter", o.max_iter));
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
        MakeArgument("epsilon", o.epsilon),
        MakeArgument("weight_decay", Decays(o, pg) ? o.weight_decay * pg.decay_mult : 0.f),
        MakeArgument("decoupled", o.type == "adamw" ? 1 : 0)};
    AddMixedPrecisionIo(pg, loss_scale, found_inf, &in, &out, &args);
    *train->add_op() = MakeOperatorDef("MixedPrecisionAdamUpdate", "update_" + pg.param, in, out,
                                       args);
    for (const auto& m : {m1, m2}) {
      *init->add_op() = MakeOperatorDef("ConstantFill", "", {pg.param}, {m},
                                        {MakeArgument("value", 0.f)});
    }
  }
}

}  // namespace

const char* const kOptimizerTypes[5] = {"sgd", "momentum", "nesterov", "adam", "adamw"};

void AddOptimizer(const OptimizerOptions& o, const std::vector<ParamGradient>& params,
                  const std::string& loss_scale, const std::string& found_inf, NetDef* train,
                  NetDef* init, const std::string& prefix) {
  if (o.type == "adam" || o.type == "adamw") {
    AddAdam(o, params, loss_scale, found_inf, train, init, prefix);
    return;
  }
  HALFCAF_ENFORCE(o.type == "sgd" || o.type == "momentum" || o.type == "nesterov",
                  "unknown optimizer '", o.type, "' (sgd, momentum, nesterov, adam or adamw)");
  OptimizerOptions sgd = o;
  if (o.type == "sgd") sgd.momentum = 0.f;
  if (o.type == "nesterov") sgd.nesterov = true;
  AddMomentumSGD(sgd, params, loss_scale, found_inf, train, init, prefix);
}

void AddMomentumSGD(const OptimizerOptions& o, const std::vector<ParamGradient>& params,
                    const std::string& loss_scale, const std::string& found_inf, NetDef* train,
                    NetDef* init, const std::string& prefix) {
  AddCounterAndSchedule(o, params, train, init, prefix);

  // One fused update per parameter; momenta start at zero.
  for (const auto& pg : params) {
    const bool decay = Decays(o, pg);
    const std::string momentum = prefix + MomentumBlob(pg.param);
    std::vector<std::string> in{pg.grad, momentum, ScaledLrBlob(prefix, pg.lr_mult), pg.param};
    std::vector<std::string> out{momentum, pg.param};
    std::vector<Argument> args{MakeArgument("momentum", o.momentum),
                               MakeArgument("nesterov", o.nesterov ? 1 : 0),
                               MakeArgument("weight_decay",
                                            decay ? o.weight_decay * pg.decay_mult : 0.f)};
    AddMixedPrecisionIo(pg, loss_scale, found_inf, &in, &out, &args);
    *train->add_op() = MakeOperatorDef("MixedPrecisionMomentumSGDUpdate", "update_" + pg.param,
                                       in, out, args);
    *init->add_op() = MakeOperatorDef("ConstantFill", "", {pg.param}, {momentum},
                                      {MakeArgument("value", 0.f)});
  }
}

}  // namespace halfcaf
