// The mixed-precision transform: rewrites an FP32 forward net so that it computes in FP16 (or
// BF16) where that is safe, following the recipe (DESIGN.md); below, "FP16" stands for either:
//   - Conv, FC and ConvTranspose read FP16 copies `<param>_fp16` of their parameters (the FP32 masters stay
//     untouched; the update operator refreshes the copies) and FP16 activations;
//   - activations stay FP16 through element-wise, pooling, shape and BatchNorm ops (SpatialBN
//     keeps its FP32 scale, bias and statistics);
//   - ops that must see FP32 (softmax, the losses, accuracy) get `HalfToFloat` (`BFloat16ToFloat`)
//     casts in front of them, so softmax and the loss run in FP32.
// BF16 copies are named `<param>_bf16`.
// Casts are inserted once per blob version. The transform knows nothing about training: the
// trainer seeds the loss gradient with the loss scale and adds the update ops.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/types.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

struct MixedPrecisionResult {
  NetDef net;                          // the rewritten forward net
  std::vector<std::string> fp16_params;  // masters that now have a low-precision copy
};

// Name of the FP16 copy of a master parameter.
std::string Fp16CopyName(const std::string& param);
// Name of the `type` (FLOAT16: `_fp16`, BFLOAT16: `_bf16`) copy of a master parameter.
std::string LowPrecisionCopyName(const std::string& param, DataType type);
// The cast operator between float and a 16-bit float type: FloatToHalf / HalfToFloat,
// FloatToBFloat16 / BFloat16ToFloat.
std::string CastOpType(DataType from, DataType to);

// `float16_inputs`: external blobs that arrive in `low_type` already (e.g. the data blob when the
// reader makes it); `params`: FP32 master parameters (Conv/FC inputs among them get copies);
// `low_type`: FLOAT16 or BFLOAT16.
MixedPrecisionResult ToMixedPrecision(const NetDef& forward,
                                      const std::set<std::string>& float16_inputs,
                                      const std::set<std::string>& params,
                                      DataType low_type = DataType::FLOAT16);

// True for op types that the transform keeps in FP32 (softmax, losses, metrics).
bool RunsInFloat32(const std::string& op_type);

}  // namespace halfcaf
