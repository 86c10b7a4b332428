// The optimizer builder: appends to a training net the iteration counter, the learning-rate
// schedule and one fused momentum-SGD update per parameter (MixedPrecisionMomentumSGDUpdate on
// the FP32 master, refreshing its FP16 copy when it has one), and to the init net the state those
// need. Weight decay applies to weights only, unless asked for biases and BatchNorm parameters.
#pragma once

#include <string>
#include <vector>

#include "core/types.h"
#include "models/model_helper.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

struct OptimizerOptions {
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

}  // namespace halfcaf
