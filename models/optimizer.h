// The optimizer builder: appends to a training net the iteration counter, the learning-rate
// schedule and one fused update per parameter on its FP32 master, refreshing its FP16 / BF16
// copy when it has one (MixedPrecisionMomentumSGDUpdate for sgd / momentum / nesterov,
// MixedPrecisionAdamUpdate for adam / adamw), and to the init net the state those need (momenta;
// Adam's two moments). Weight decay applies to weights only, unless asked for biases and
// BatchNorm parameters.
//
// Adding an optimizer: its fused update op in operators/optimizer/ (FP32 master, 16-bit gradient
// unscaled by loss_scale, found_inf skips, copy output), a branch in AddOptimizer making that op
// and its state, the name in kOptimizerTypes and train_net's --optimizer help, and a case in the
// step-by-step equivalence suite against torch.optim.
#pragma once

#include <string>
#include <vector>

#include "core/types.h"
#include "models/model_helper.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

struct OptimizerOptions {
  // sgd (momentum 0), momentum, nesterov, adam, adamw. momentum / nesterov apply to the SGD
  // kinds; beta1, beta2, epsilon to Adam and AdamW (PyTorch's defaults, its epsilon placement).
  std::string type = "momentum";
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
  float base_lr = 0.01f;
  std::string lr_policy = "fixed";
  int64_t stepsize = 0, max_iter = 0, warmup_iters = 0;
  std::vector<int64_t> stepsizes;
  float gamma = 0.1f, power = 1.f, warmup_start = 0.f;
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

// The optimizer options.type names (sgd, momentum, nesterov, adam, adamw).
extern const char* const kOptimizerTypes[5];
// AddMomentumSGD for sgd / momentum / nesterov; for adam / adamw the same counter and schedule,
// then MixedPrecisionAdamUpdate per parameter (moments <prefix><param>_moment_1 / _moment_2).
// Throws on an unknown type.
void AddOptimizer(const OptimizerOptions& options, const std::vector<ParamGradient>& params,
                  const std::string& loss_scale, const std::string& found_inf, NetDef* train,
                  NetDef* init, const std::string& prefix = "");

}  // namespace halfcaf
