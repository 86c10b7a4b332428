#include "operators/optimizer/learning_rate_op.h"

#include "core/gradient.h"

namespace halfcaf {

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
    .SetDoc("Learning rate schedule: lr = base_lr * f(iter) as a 0-d float tensor, with Caffe2's "
            "policies (f), arguments and defaults. fixed: 1; step: gamma^floor(iter/stepsize); "
            "exp: gamma^iter; inv: (1 + gamma*iter)^(-power); poly: (1 - iter/max_iter)^power, 0 "
            "from max_iter on (Caffe2 leaves that case undefined); linearWarmup: start_multiplier "
            "+ (1 - start_multiplier)*iter/num_iter before num_iter, then 1; constantWarmup: "
            "multiplier before num_iter, then 1; alter: 1 during the active_period, 0 during the "
            "inactive_period, repeating (active first unless active_first = 0); hill: "
            "linearWarmup for num_iter iterations, then max(end_multiplier, "
            "(1 + gamma*(iter - num_iter))^(-power)); gate: multiplier_1 before num_iter, then "
            "multiplier_2; slope: multiplier_1 before num_iter_1, then max(multiplier_2, "
            "multiplier_1 + (iter - num_iter_1)*(multiplier_2 - multiplier_1)/(num_iter_2 - "
            "num_iter_1)); cosine (SGDR, warm restarts): cycle i lasts period*t_mult^i, and t "
            "iterations into a cycle of length T f = lr_shrink^i*(min_lr + (max_lr - min_lr)*(1 + "
            "cos(pi*t/T))/2); cyclical (triangular, relative to base_lr): with c = "
            "floor(iter/(2*stepsize)) and x = |iter/stepsize - 2c - 1|, 1 + (|max_lr|/|base_lr| - "
            "1)*max(0, 1 - x)*decay^c; constantThenLinearWarmup: start_warmup_multiplier for "
            "constant_warmup_num_iter, then linear up to 1 over linear_warmup_num_iter, then 1; "
            "composite: stages of sub_policy_num_iters iterations (stage 0 from iteration 1, "
            "Iter's first value), stage i being the policy sub_policy_<i>_policy with its "
            "arguments prefixed sub_policy_<i>_, times sub_policy_<i>_lr_scale (default 1); each "
            "stage sees the absolute iteration; stages may not be composite; multistep (Caffe1's "
            "policy, an extension): gamma^(number of stepsizes <= iter). Arguments that would make "
            "a schedule meaningless (stepsize <= 0, period <= 0, max_lr < min_lr, a missing gamma "
            "for step/exp/multistep, ...) are errors naming the argument. "
            "torch.optim.lr_scheduler.CosineAnnealingLR(T_max, eta_min) from rate lr is cosine "
            "with base_lr = lr, max_lr = 1, min_lr = eta_min/lr, period = T_max, up to iteration "
            "T_max - 1; at T_max Caffe2 restarts (at lr*lr_shrink) where PyTorch reaches eta_min "
            "and continues the cosine. Optimizers that subtract the update (MomentumSGDUpdate) "
            "take a positive base_lr; nets that add it with WeightedSum take a negative one.")
    .Arg("base_lr", "float, required: the learning rate at multiplier 1 (may be negative)")
    .Arg("warmup_iters", "int, default 0 (halfcaf extension, any policy): the multiplier is "
         "further scaled from warmup_start up to 1 linearly over the first warmup_iters")
    .Arg("warmup_start", "float, default 0 (halfcaf extension): scale at iteration 0 of warm-up")
    .Arg("policy", "string, required: one of fixed, step, exp, inv, poly, linearWarmup, "
                   "constantWarmup, alter, hill, gate, slope, cosine, cyclical, "
                   "constantThenLinearWarmup, composite, multistep")
    .Arg("stepsize", "int, default 0 (step, cyclical): iterations per decay step (step), half a "
                     "cycle (cyclical); must be > 0")
    .Arg("stepsizes", "ints (multistep): iterations at which to multiply by gamma, increasing")
    .Arg("gamma", "float, default 0 (step, exp, inv, hill, multistep): decay factor")
    .Arg("power", "float, default 0 (inv, poly, hill): exponent")
    .Arg("max_iter", "int, default -1 (poly): iteration at which the rate reaches 0; must be > 0")
    .Arg("start_multiplier", "float, default 0 (linearWarmup, hill): multiplier at iteration 0")
    .Arg("num_iter", "int, default 0 (linearWarmup, constantWarmup, hill, gate): warm-up length "
                     "(gate: the switch)")
    .Arg("multiplier", "float, default 0.5 (constantWarmup): multiplier during warm-up")
    .Arg("active_first", "bool, default 1 (alter): start with an active period")
    .Arg("active_period", "int, default -1 (alter): length of active periods, must be >= 0")
    .Arg("inactive_period", "int, default -1 (alter): length of inactive periods, must be >= 0")
    .Arg("end_multiplier", "float, default 0 (hill): lower bound after warm-up")
    .Arg("multiplier_1", "float, default 1 (gate), 0 (slope): multiplier before the switch")
    .Arg("multiplier_2", "float, default 1 (gate), 0 (slope): multiplier after it")
    .Arg("num_iter_1", "int, default 0 (slope): end of the constant part, must be > 0")
    .Arg("num_iter_2", "int, default 0 (slope): end of the ramp, must be > num_iter_1")
    .Arg("max_lr", "float, default 0.5 (cosine: multiplier at a cycle start), 0.005 (cyclical: "
                   "rate at a cycle middle, |max_lr| >= |base_lr|)")
    .Arg("min_lr", "float, default 0.1 (cosine): multiplier at a cycle end, <= max_lr")
    .Arg("period", "int, default 50 (cosine): length of the first cycle, must be > 0")
    .Arg("t_mult", "float, default 1 (cosine): each cycle is t_mult times the previous, >= 1")
    .Arg("lr_shrink", "float, default 0.99 (cosine): max_lr and min_lr shrink by it per restart")
    .Arg("decay", "float, default 1 (cyclical): the peak's excess shrinks by it per cycle")
    .Arg("start_warmup_multiplier", "float, default 0.1 (constantThenLinearWarmup)")
    .Arg("constant_warmup_num_iter", "int, default 10000000 (constantThenLinearWarmup)")
    .Arg("linear_warmup_num_iter", "int, default 10000000 (constantThenLinearWarmup)")
    .Arg("sub_policy_num_iters", "ints > 0 (composite): length of each stage")
    .Arg("sub_policy_<i>_policy", "string (composite): stage i's policy, not composite; its "
                                  "arguments are sub_policy_<i>_<argument>")
    .Arg("sub_policy_<i>_lr_scale", "float, default 1 (composite): stage i's multiplier scale")
    .Input(0, "iter", "int64 CPU tensor with one element: the iteration (from Iter)")
    .Output(0, "lr", "0-d float tensor: base_lr * f(iter)");

}  // namespace halfcaf
