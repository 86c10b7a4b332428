// BackwardPass: each net's step = its forward net + the gradient ops of its weighted losses. The
// gradient of loss i is seeded with weight_i * loss_scale / replicas (a ConstantFill of 1 for one
// unweighted FP32 loss on one replica); the gradient of a trained parameter is taken through its
// 16-bit copy when it has one. Gradient ops that feed no trained parameter are pruned (the data's
// gradient, the weight gradients of frozen layers when nothing else needs their op; a frozen
// convolution's gradient op that still makes dX is marked no_weight_gradient).
#include <algorithm>

#include "core/argument.h"
#include "core/enforce.h"
#include "models/backward.h"
#include "models/mixed_precision.h"
#include "models/op_types.h"
#include "models/passes/passes.h"

namespace halfcaf {

namespace {

// Removes gradient outputs nobody needs: the gradient of the data (first layer's dX) and ops
// whose outputs are all unused. `first_grad_op` is the index of the first backward op.
void PruneBackward(NetDef* net, int first_grad_op, const std::set<std::string>& wanted) {
  std::set<std::string> needed = wanted;
  std::vector<OperatorDef> kept;
  for (int i = net->op_size() - 1; i >= first_grad_op; --i) {
    OperatorDef op = net->op(i);
    bool any = false;
    for (const auto& o : op.output()) any |= needed.count(o) > 0;
    if (!any) continue;
    // Conv/FC gradients may drop their trailing dX output.
    const std::string fwd_type = ForwardTypeOfGradient(op.type());
    const bool conv = IsConvType(fwd_type);
    const bool fc = IsFCType(fwd_type);
    const bool no_bias = ArgumentHelper(op).GetSingleArgument<int>("no_bias", 0) != 0;
    const bool has_dx =
        fc ? op.output_size() == 3 : (no_bias ? op.output_size() == 2 : op.output_size() == 3);
    if ((conv || fc) && has_dx && !needed.count(op.output(op.output_size() - 1))) {
      op.mutable_output()->RemoveLast();
    } else if (conv && has_dx && !needed.count(op.output(0)) &&
               (no_bias || !needed.count(op.output(1)))) {
      // A frozen layer's convolution gradient: dX alone is wanted (conv_op.cc).
      *op.add_arg() = MakeArgument("no_weight_gradient", 1);
    }
    for (const auto& in : op.input()) needed.insert(in);
    kept.push_back(op);
  }
  while (net->op_size() > first_grad_op) net->mutable_op()->RemoveLast();
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) *net->add_op() = *it;
}

class BackwardPass : public TrainingPass {
 public:
  const char* name() const override { return "backward"; }

  void Apply(TrainingJob* job) const override {
    for (JobNet& net : job->nets) Build(*job, &net);
  }

 private:
  static void Build(const TrainingJob& job, JobNet* net) {
    HALFCAF_ENFORCE(!net->losses.empty(), "net '", net->name, "' has no loss");
    NetDef step;
    std::map<std::string, std::string> seeds;
    std::vector<std::string> losses;
    const bool one_plain_loss = net->losses.size() == 1 && net->losses[0].weight == 1.f;
    for (const LossTerm& loss : net->losses) {
      losses.push_back(loss.blob);
      if (one_plain_loss && job.replicas > 1) {
        // Each replica's loss is the mean over its share of the batch: seeded with
        // loss_scale / N, the summed gradients are those of the whole batch.
        seeds[loss.blob] = net->State(kLossGradSeed);
        *step.add_op() = MakeOperatorDef(
            "Scale", "", {net->State(kLossScale)}, {net->State(kLossGradSeed)},
            {MakeArgument("scale", 1.f / static_cast<float>(job.replicas))});
      } else if (one_plain_loss) {
        if (job.mixed_precision()) seeds[loss.blob] = net->State(kLossScale);
      } else {
        const std::string seed = net->State(loss.blob + "_grad_seed");
        seeds[loss.blob] = seed;
        *step.add_op() = MakeOperatorDef(
            "Scale", "", {net->State(kLossScale)}, {seed},
            {MakeArgument("scale", loss.weight / static_cast<float>(job.replicas))});
      }
    }
    NetDef body = net->forward;
    const int first_grad = body.op_size();
    std::map<std::string, GradientWrapper> grads;
    try {
      grads = Backward(&body, losses, seeds, job.blob_dims.empty() ? nullptr : &job.blob_dims);
    } catch (EnforceNotMet& e) {
      std::string names;
      for (const auto& l : losses) names += (names.empty() ? "'" : ", '") + l + "'";
      e.AddContext("building the backward pass for loss " + names);
      throw;
    }
    net->param_grads.clear();
    std::set<std::string> wanted;
    for (const auto& p : net->params) {
      if (!net->trained.count(p.name)) continue;
      const bool lowp = net->lowp.count(p.name) > 0;
      const std::string copy = lowp ? LowPrecisionCopyName(p.name, job.precision) : "";
      auto it = grads.find(lowp ? copy : p.name);
      if (it == grads.end() || !it->second.IsDense()) continue;  // not differentiable
      const ParamGroup& group = net->param_group.at(p.name);
      ParamGradient pg{p.name, it->second.dense, p.role, copy, job.precision};
      pg.lr_mult = group.lr_mult;
      pg.decay_mult = group.decay_mult;
      net->param_grads.push_back(pg);
      wanted.insert(it->second.dense);
    }
    std::string names;
    for (const auto& l : losses) names += (names.empty() ? "'" : ", '") + l + "'";
    HALFCAF_ENFORCE(!net->param_grads.empty(), "no parameter of the net receives a gradient from ",
                    names);
    PruneBackward(&body, first_grad, wanted);
    net->backward_begin = step.op_size() + first_grad;
    for (const auto& op : body.op()) *step.add_op() = op;
    net->step = step;
  }
};

}  // namespace

std::unique_ptr<TrainingPass> MakeBackwardPass() { return std::make_unique<BackwardPass>(); }

}  // namespace halfcaf
