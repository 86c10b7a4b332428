// The argument `channel_block` of Conv, ConvGradient, SpatialBN, SpatialBNGradient and the 2-D
// pools and their gradients: B > 0 means the activations (X, Y, dY, dX) are channel-blocked 5-D
// tensors (N, C / B, H, W, B) (operators/tensor/channel_block_op.cc), the layout oneDNN's FP32
// kernels compute in. The DNNL engine's convolutions, the CPU batch normalization
// (spatial_bn_loops.h) and the CPU pools (pool_op.h) read it; the other operators refuse it with
// one clear error rather than misread the 5-D tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/enforce.h"
#include "core/operator.h"

namespace halfcaf {

// The channel block oneDNN's FP32 convolutions compute in on this CPU (16 with AVX-512, 8 with
// AVX2), probed once; 0 in a build without oneDNN or when oneDNN keeps plain layouts.
int64_t CpuConvChannelBlock();

// 0 (plain layout) or B, one of 4, 8, 16 (oneDNN's nChw4c / nChw8c / nChw16c).
inline int64_t ReadChannelBlock(const OperatorBase& op) {
  const int64_t b = op.GetSingleArgument<int64_t>("channel_block", 0);
  HALFCAF_ENFORCE(b == 0 || b == 4 || b == 8 || b == 16, op.type(),
                  ": argument channel_block must be 0, 4, 8 or 16, got ", b);
  return b;
}

// For the operators that compute on plain layouts only.
inline void RefuseChannelBlock(const OperatorBase& op) {
  HALFCAF_ENFORCE(ReadChannelBlock(op) == 0, op.type(),
                  ": argument channel_block (channel-blocked activations) needs the DNNL "
                  "engine "
                  "(oneDNN) on CPU; this operator computes on NCHW / NHWC tensors");
}

// A blocked tensor's (N, C / B, H, W, B) dims as (N, C, H, W); `what` names it
// in the error.
inline std::vector<int64_t> UnblockedDims(const std::vector<int64_t>& d, int64_t block,
                                          const std::string& op, const char* what) {
  HALFCAF_ENFORCE(d.size() == 5 && d[4] == block, op, ": ", what,
                  " must be channel-blocked, (N, "
                  "C / ",
                  block, ", H, W, ", block, "), got ", DimsString(d));
  return {d[0], d[1] * block, d[2], d[3]};
}

// (N, C, H, W) as blocked dims; C must be a multiple of the block.
inline std::vector<int64_t> BlockedDimsOf(const std::vector<int64_t>& d, int64_t block,
                                          const std::string& op, const char* what) {
  HALFCAF_ENFORCE(d.size() == 4 && d[1] % block == 0, op, ": ", what, " ", DimsString(d),
                  " cannot be channel-blocked by ", block);
  return {d[0], d[1] / block, d[2], d[3], block};
}

// For shape and cost inference: an op's X dims as NCHW (unblocked when the op has channel_block
// and X has the blocked rank), and its NCHW output dims in X's layout.
inline int64_t ChannelBlockOf(const OperatorDef& def, const std::vector<int64_t>& x_dims) {
  const int64_t b = ArgumentHelper(def).GetSingleArgument<int64_t>("channel_block", 0);
  return b > 0 && x_dims.size() == 5 && x_dims[4] == b ? b : 0;
}
inline std::vector<int64_t> InferenceNchwDims(const OperatorDef& def,
                                              const std::vector<int64_t>& x_dims) {
  const int64_t b = ChannelBlockOf(def, x_dims);
  return b == 0 ? x_dims : UnblockedDims(x_dims, b, def.type(), "X");
}

}  // namespace halfcaf
