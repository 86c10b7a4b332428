// The mixed-precision transform: rewrites an FP32 forward net so that it computes in FP16 where
// that is safe, following the recipe (DESIGN.md):
//   - Conv and FC read FP16 copies `<param>_fp16` of their parameters (the FP32 masters stay
//     untouched; the update operator refreshes the copies) and FP16 activations;
//   - activations stay FP16 through element-wise, pooling, shape and BatchNorm ops (SpatialBN
//     keeps its FP32 scale, bias and statistics);
//   - ops that must see FP32 (softmax, the losses, accuracy) get `HalfToFloat` casts in front of
//     them, so softmax and the loss run in FP32.
// Casts are inserted once per blob version. The transform knows nothing about training: the
// trainer seeds the loss gradient with the loss scale and adds the update ops.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "proto/halfcaf.pb.h"

namespace halfcaf {

struct MixedPrecisionResult {
  NetDef net;                          // the rewritten forward net
  std::vector<std::string> fp16_params;  // masters that now have a `<name>_fp16` copy
};

// Name of the FP16 copy of a master parameter.
std::string Fp16CopyName(const std::string& param);

// `float16_inputs`: external blobs that arrive as FP16 (e.g. the data blob when the reader makes
// FP16); `params`: FP32 master parameters (Conv/FC inputs among them get FP16 copies).
MixedPrecisionResult ToMixedPrecision(const NetDef& forward,
                                      const std::set<std::string>& float16_inputs,
                                      const std::set<std::string>& params);

// True for op types that the transform keeps in FP32 (softmax, losses, metrics).
bool RunsInFloat32(const std::string& op_type);

}  // namespace halfcaf
