// The optimizer builder: appends to a training net the iteration counter, the learning-rate
// schedule and one fused update per parameter on its FP32 master, refreshing its FP16 / BF16
// copy when it has one (MixedPrecisionMomentumSGDUpdate for sgd / momentum / nesterov / lars,
// MixedPrecisionAdamUpdate for adam / adamw, MixedPrecisionAdagradUpdate, -RmsPropUpdate and
// -AdadeltaUpdate), and to the init net the state those need (momenta, moments, accumulators).
// Weight decay applies to weights only, unless asked for biases and BatchNorm parameters. lars is
// momentum SGD whose weights' rates are rescaled each step by Caffe2's Lars operator (trust ratio
// lars_trust |w| / (|g| + weight_decay |w|)); biases and BatchNorm parameters keep the plain rate.
//
// Adding an optimizer: its per-element rule in core/adaptive_update_rules.h (shared by the CPU
// operator and the CUDA kernel), its fused update op in operators/optimizer/ (for element-wise
// rules, RunFusedUpdate and FusedUpdateSchema of fused_update.h give the FP32 master, the 16-bit
// gradient unscaled by loss_scale, the found_inf skip and the copy output; the CUDA op one more
// case in gpu/adaptive_kernels.cu), a branch in AddOptimizer making that op and its zeroed state,
// the name in kOptimizerTypes and train_net's flags, operator tests against the formula, and a
// case in the step-by-step equivalence suite against torch.optim
// (tests/tools/train_equivalence_test.cc and tools/peers/train_equivalence.py).
#pragma once

#include <string>
#include <vector>

#include "core/types.h"
#include "models/model_helper.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

struct OptimizerOptions {
  // sgd (momentum 0), momentum, nesterov, lars, adam, adamw, adagrad, rmsprop, adadelta, with
  // PyTorch's defaults and epsilon placement. momentum / nesterov apply to the SGD kinds and
  // lars, momentum to rmsprop too; beta1, beta2 to Adam and AdamW; alpha to RMSprop; rho to
  // Adadelta; epsilon to the adaptive kinds (negative: the optimizer's default, 1e-8 for Adam,
  // AdamW and RMSprop, 1e-10 for Adagrad, 1e-6 for Adadelta).
  std::string type = "momentum";
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = -1.f;
  float alpha = 0.99f, rho = 0.9f;
  float lars_trust = 0.001f;
  float base_lr = 0.01f;
  std::string lr_policy = "fixed";
  int64_t stepsize = 0, max_iter = 0, warmup_iters = 0;
  std::vector<int64_t> stepsizes;
  float gamma = 0.1f, power = 1.f, warmup_start = 0.f;
  float min_lr = 0.f;  // cosine: the rate at the end of each period of max_iter iterations
  float momentum = 0.9f;
  bool nesterov = false;
  float weight_decay = 0.f;
  bool weight_decay_on_bias_and_bn = false;
};

struct ParamGradient {
  std::string param;       // FP32 master
  std::string grad;        // its gradient blob (FP16/BF16 when it flows through such a copy)
  ParamRole role = ParamRole::WEIGHT;
  std::string copy;        // its FP16 or BF16 copy; empty when the parameter has none
  DataType copy_dtype = DataType::FLOAT16;
  float lr_mult = 1.f;     // its group's multipliers of the learning rate and the weight decay
  float decay_mult = 1.f;
};

// Blob names the optimizer uses.
extern const char kIterBlob[];       // int64 (1), on the CPU
extern const char kLrBlob[];         // 0-d float
std::string MomentumBlob(const std::string& param);
// Blob of the learning rate times `lr_mult` (kLrBlob itself for 1).
std::string ScaledLrBlob(const std::string& prefix, float lr_mult);

// `loss_scale` / `found_inf`: when non-empty, every update unscales by loss_scale and skips the
// step when found_inf is set. `prefix` goes in front of the state blobs (iteration, learning
// rate, momenta) of one optimizer among several. A parameter with lr_mult != 1 updates with
// Scale(lr, lr_mult) (one blob per distinct multiplier: <prefix>lr_x<mult>); its weight decay is
// multiplied by decay_mult.
void AddMomentumSGD(const OptimizerOptions& options, const std::vector<ParamGradient>& params,
                    const std::string& loss_scale, const std::string& found_inf, NetDef* train,
                    NetDef* init, const std::string& prefix = "");

// The optimizer options.type names.
extern const char* const kOptimizerTypes[9];
// One of kOptimizerTypes, listed for messages: "sgd, momentum, ..., adadelta".
std::string OptimizerTypeList();
// AddMomentumSGD for sgd / momentum / nesterov (and lars, with its rescaled rates); for the others
// the same counter and schedule, then their fused update per parameter (state blobs
// <prefix><param>_moment_1 / _moment_2 for Adam, _sum for Adagrad, _square_avg and
// _momentum_buffer for RMSprop, _square_avg and _acc_delta for Adadelta). Throws on an unknown
// type.
void AddOptimizer(const OptimizerOptions& options, const std::vector<ParamGradient>& params,
                  const std::string& loss_scale, const std::string& found_inf, NetDef* train,
                  NetDef* init, const std::string& prefix = "");

}  // namespace halfcaf
