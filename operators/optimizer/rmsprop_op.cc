// RmsProp, as Caffe2 has it, and MixedPrecisionRmsPropUpdate, the fused update halfcaf's optimizer
// builder uses (PyTorch's RMSprop on an FP32 master). The rules are in
// core/adaptive_update_rules.h.
//
// RmsProp (Caffe2): inputs grad, mean_squares, mom, lr; outputs grad_out, mean_squares, mom
// (in place allowed):
//   mean_squares += (1 - decay) (g^2 - mean_squares)
//   mom = momentum mom + lr g / sqrt(epsilon + mean_squares);  grad_out = mom
// (Caffe2's nets then add grad_out to the parameter). decay 0.9, momentum 0, epsilon 1e-5.
//
// MixedPrecisionRmsPropUpdate (halfcaf extension): grad, square_avg, momentum_buffer, lr, master,
// [loss_scale, [found_inf]] -> square_avg, momentum_buffer, master, [copy]
// (operators/optimizer/fused_update.h): PyTorch's RMSprop (not centered): epsilon added after the
// square root, the rate outside the momentum buffer; decay = alpha 0.99, epsilon 1e-8.
#include "core/gradient.h"
#include "core/operator.h"
#include "operators/cpu_parallel.h"
#include "operators/optimizer/adaptive_op.h"
#include "operators/optimizer/fused_update.h"
#include "operators/optimizer/mixed_precision_sgd_op.h"

namespace halfcaf {

namespace {

class RmsPropOp final : public Operator<CPUContext> {
 public:
  RmsPropOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), args_(CaffeRmsPropArgs(*this)) {}

  void RunOnDevice() override {
    const Tensor& G = Input(0);
    CheckCaffeUpdateInputs(*this, "RmsProp", {0, 1, 2}, {&G, &Input(1), &Input(2)});
    const float lr = UpdateScalar(Input(3), "lr");
    const float* g = G.data<float>();
    float* g_out = Output(0, G.dims())->mutable_data<float>();
    float* ms = Output(1, G.dims())->mutable_data<float>();
    float* mom = Output(2, G.dims())->mutable_data<float>();
    const RmsPropRule a = args_;
    ForEachPiece(G.numel(), 8.0, [&](int64_t off, int64_t len) {
      for (int64_t i = off; i < off + len; ++i) {
        g_out[i] = CaffeRmsProp(g[i], lr, a.alpha, a.momentum, a.epsilon, ms[i], mom[i]);
      }
    });
  }

 private:
  const RmsPropRule args_;  // Caffe2's decay, momentum and epsilon (the rule itself differs)
};

class MixedPrecisionRmsPropUpdateOp final : public Operator<CPUContext> {
 public:
  MixedPrecisionRmsPropUpdateOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), rule_(ReadRmsPropRule(*this)), args_(*this) {}

  void RunOnDevice() override { RunFusedUpdate(*this, 2, rule_, args_); }

 private:
  const RmsPropRule rule_;
  const MomentumUpdateArgs args_;  // weight_decay and copy_dtype
};

}  // namespace

REGISTER_CPU_OPERATOR(RmsProp, RmsPropOp);
SHOULD_NOT_DO_GRADIENT(RmsProp);
REGISTER_CPU_OPERATOR(MixedPrecisionRmsPropUpdate, MixedPrecisionRmsPropUpdateOp);
SHOULD_NOT_DO_GRADIENT(MixedPrecisionRmsPropUpdate);

OPERATOR_SCHEMA(RmsProp)
    .NumInputs(4)
    .NumOutputs(3)
    .AllowInplace({{0, 0}, {1, 1}, {2, 2}})
    .PointwiseCost(8.0)
    .SetDoc("Caffe2's RmsProp (float): mean_squares += (1 - decay) (g^2 - mean_squares); mom = "
            "momentum mom + lr g / sqrt(epsilon + mean_squares); grad_out = mom. The parameter "
            "is then updated by the net (Caffe2's optimizer adds grad_out with WeightedSum), so "
            "lr is negative when grad_out is added.")
    .Arg("decay", "float, default 0.9")
    .Arg("momentum", "float, default 0")
    .Arg("epsilon", "float, default 1e-5 (inside the square root)")
    .Input(0, "grad", "float gradient")
    .Input(1, "mean_squares", "float running average of squared gradients")
    .Input(2, "mom", "float momentum")
    .Input(3, "lr", "1-element float learning rate")
    .Output(0, "grad_out", "the update (may be input 0's blob)")
    .Output(1, "mean_squares", "input 1 updated (may be its blob)")
    .Output(2, "mom", "input 2 updated (may be its blob)");

[[maybe_unused]] static OpSchema& g_mixed_precision_rmsprop_schema =
    FusedUpdateSchema(NEW_FUSED_UPDATE_SCHEMA(MixedPrecisionRmsPropUpdate),
                      {{"square_avg", "float running average of squared gradients"},
                       {"momentum_buffer", "float momentum buffer (unused without momentum)"}})
        .SetDoc("halfcaf extension: PyTorch's RMSprop step (not centered) on an FP32 master "
                "parameter. g = grad / loss_scale + weight_decay master; square_avg = decay "
                "square_avg + (1 - decay) g^2; s = g / (sqrt(square_avg) + epsilon); with "
                "momentum: buffer = momentum buffer + s, master -= lr buffer; else master -= lr "
                "s; writes the float16 (or bfloat16) copy of the new master. A non-zero "
                "found_inf skips the step entirely.")
        .Arg("decay", "float, default 0.99 (PyTorch's alpha)")
        .Arg("momentum", "float, default 0")
        .Arg("epsilon", "float, default 1e-8 (added after the square root, as PyTorch does)");

}  // namespace halfcaf
