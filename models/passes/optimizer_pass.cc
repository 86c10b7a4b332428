// OptimizerPass: each net's update. In mixed precision first the overflow check of its gradients
// (CheckFinite -> found_inf), then one fused update per trained parameter (models/optimizer.h: its
// group's learning rate and weight decay, unscaled by the net's loss scale, skipped on overflow),
// then the loss-scale update (static: only counts skipped steps) and the run of skipped steps. The
// init net gets the state: iteration, momenta, loss scale and its counters. Every state blob of a
// named net is prefixed with its name, so two nets keep two optimizers and two loss scales.
#include "core/argument.h"
#include "models/passes/passes.h"

namespace halfcaf {

namespace {

OperatorDef Fill(const std::string& out, std::vector<int64_t> shape, DataType dtype, float value) {
  return MakeOperatorDef("ConstantFill", "", {}, {out},
                         {MakeArgument("shape", shape), MakeArgument("value", value),
                          MakeArgument("dtype", static_cast<int>(dtype))});
}

// Ops tracking runs of skipped steps on the device (no host read per step), with found_inf in
// {0, 1}: streak = (streak + found_inf) * found_inf; max = max + relu(streak - max).
void AddSkipStreak(const JobNet& net, NetDef* update, NetDef* init) {
  const std::string streak = net.State(kSkipStreak), max = net.State(kMaxSkipStreak);
  const std::string inf = net.State(kFoundInf), gain = net.State("skipped_streak_gain");
  *update->add_op() = MakeOperatorDef("Add", "", {streak, inf}, {streak});
  *update->add_op() = MakeOperatorDef("Mul", "", {streak, inf}, {streak});
  *update->add_op() = MakeOperatorDef("Sub", "", {streak, max}, {gain});
  *update->add_op() = MakeOperatorDef("Relu", "", {gain}, {gain});
  *update->add_op() = MakeOperatorDef("Add", "", {max, gain}, {max});
  *init->add_op() = Fill(streak, {}, DataType::FLOAT, 0.f);
  *init->add_op() = Fill(max, {}, DataType::FLOAT, 0.f);
}

class OptimizerPass : public TrainingPass {
 public:
  const char* name() const override { return "optimizer"; }

  void Apply(TrainingJob* job) const override {
    for (JobNet& net : job->nets) Build(job, &net);
  }

 private:
  static void Build(TrainingJob* job, JobNet* net) {
    const bool mp = job->mixed_precision();
    const std::string scale = net->State(kLossScale), inf = net->State(kFoundInf);
    const std::string good = net->State(kGoodSteps), skipped = net->State(kSkipped);
    NetDef update;
    if (mp) {
      std::vector<std::string> grads;
      for (const auto& pg : net->param_grads) grads.push_back(pg.grad);
      *update.add_op() = MakeOperatorDef("CheckFinite", "", grads, {inf});
    }
    const std::string prefix = net->name.empty() ? "" : net->name + "/";
    AddOptimizer(net->optimizer, net->param_grads, mp ? scale : "", mp ? inf : "", &update,
                 &job->init, prefix);
    if (mp) {
      // A static scale never changes, but overflowing steps are still skipped and counted.
      std::vector<Argument> args{MakeArgument("growth_interval", job->scale_growth_interval)};
      if (!job->dynamic_loss_scale) {
        args = {MakeArgument("growth", 1.f), MakeArgument("backoff", 1.f)};
      }
      *update.add_op() = MakeOperatorDef("UpdateLossScale", "", {scale, inf, good, skipped},
                                         {scale, good, skipped}, args);
      AddSkipStreak(*net, &update, &job->init);
    }
    *job->init.add_op() = Fill(scale, {}, DataType::FLOAT, mp ? job->loss_scale : 1.f);
    *job->init.add_op() = Fill(good, {1}, DataType::INT64, 0.f);
    *job->init.add_op() = Fill(skipped, {1}, DataType::INT64, 0.f);
    net->update = update;
  }
};

}  // namespace

std::unique_ptr<TrainingPass> MakeOptimizerPass() { return std::make_unique<OptimizerPass>(); }

}  // namespace halfcaf
