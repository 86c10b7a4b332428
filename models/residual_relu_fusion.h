// The ReLU after a residual merge, forward and backward, as part of the op before it, for
// training on the CPU (a training step net: forward part, then from `backward_begin` its gradient
// ops). Forward: Add(A, B) -> S; Relu(S) -> Y becomes Add(A, B) -> Y with fuse_relu = 1
// (operators/math/elementwise_op.h). Backward: Sum(dY0, dY1, ...) -> T; ReluGradient(Y, T) -> U
// becomes ReluGradient(Y, dY0, dY1, ...) -> U (operators/nn/relu_op.cc). Each saves a pass over
// the activation (ResNet-50: 16 of each); the results are the separate ops' bit for bit.
//
// Fused forward: an Add of two inputs on the CPU's default engine without the legacy broadcast,
// whose inputs are not known (`dims`) to differ in shape, followed by a Relu on the CPU that is
// the first op to read S; S is read by nothing else, in the backward part neither (unless the
// Relu is in place), and is not in `keep` or an external output; the Relu's output is not an
// input of the Add and nothing between the two touches it.
// Fused backward: a Sum of two or more inputs on the CPU's default engine whose output T is read
// first by a ReluGradient (Y, T) on the CPU, and by nothing else (unless the ReluGradient is in
// place); T does not outlive the net unless the ReluGradient writes it, is not in `keep` or an
// external output, and no op between the two writes the Sum's inputs.
// The caller fuses nets on the CPU only (the CUDA ops refuse the fused forms); the fused ops take
// float, float16 and bfloat16 tensors.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "proto/halfcaf.pb.h"

namespace halfcaf {

struct ResidualReluFusion {
  NetDef net;
  int backward_begin = 0;  // moved back by the Relus taken out of the forward part
  int adds = 0;            // Add + Relu pairs now one Add
  int sums = 0;            // Sum + ReluGradient pairs now one ReluGradient
};

ResidualReluFusion FuseResidualRelu(const NetDef& step, int backward_begin,
                                    const std::set<std::string>& keep,
                                    const std::map<std::string, std::vector<int64_t>>& dims);

}  // namespace halfcaf
