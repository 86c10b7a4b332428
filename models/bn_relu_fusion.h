// Batch normalization and the ReLU after it as one op, for training on the CPU: a training
// SpatialBN (NCHW, channel-blocked: models/channels_last.h ToChannelBlocked, or NHWC) whose output
// only a Relu reads takes the Relu in (fuse_relu = 1, operators/nn/spatial_bn_op.h) and writes
// the Relu's output itself. Its gradient gates dY by the ReLU recomputed from X, so the Relu's
// read and write forward and the ReluGradient's three passes backward disappear; the results are
// the separate ops' bit for bit.
//
// Fused: SpatialBN in training mode, order NCHW or NHWC, on the CPU's default engines, without
// fuse_relu yet, followed by a Relu on the CPU that is the first op to read its output Y; Y is
// read by nothing else (unless the Relu is in place, where later readers read the Relu's output)
// and is not in `keep` or an external output, the Relu's output is not the BN's input, and
// nothing between the two touches it. The caller fuses only nets whose fused ops will take their
// X: float32, or bfloat16 in NHWC (the trainer's bfloat16 channels-last nets).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "proto/halfcaf.pb.h"

namespace halfcaf {

struct BNReluFusion {
  NetDef net;
  int fused = 0;  // SpatialBN + Relu pairs now one op
};

BNReluFusion FuseBNRelu(const NetDef& forward, const std::set<std::string>& keep);

// The index of the Relu (on the CPU's default engine, before op `end`) that can take in op i's
// output Y, or -1: it is the first op to read Y; Y is read by nothing else (unless the Relu is in
// place, where later readers read the Relu's output) and is not in `keep` or `outputs`; the Relu's
// output is not an input of op i, and nothing between the two touches it. Shared with
// models/residual_relu_fusion.h.
int ReluTakingOutput(const std::vector<OperatorDef>& ops, int i, int end,
                     const std::set<std::string>& keep, const std::set<std::string>& outputs);

}  // namespace halfcaf
