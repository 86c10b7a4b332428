// Recomputation in the backward pass: a training step keeps the activations its gradient ops
// read from the forward pass alive from the forward op that writes them to the gradient op that
// reads them, which is what a step's peak memory is made of. The outputs of cheap,
// deterministic ops (batch normalization, element-wise activations and arithmetic, casts,
// layout transposes) need not be kept: they are made again in the backward pass, just before the
// first gradient op that reads them, from what the step keeps anyway (convolution and FC
// outputs, parameters, the data). Batch normalization is run again in training mode, on the same
// input, so it computes the same statistics; its running statistics are not updated twice (the
// copy updates throwaway blobs). Every recomputed value is bit for bit the forward's, so the
// step computes the same gradients; what it costs is the time of those ops once more.
//
// With `convolutions`, convolutions are made again too: what the step keeps is then the outputs
// of pools, of residual merges (a Sum or Add of two activations, and the in-place ops after it),
// of the ops not listed, and the data, and the backward part runs the forward ops between two
// of those again (activation checkpointing; ResNet-50: a quarter more time per step).
//
//   RecomputeResult r = RecomputeInBackward(step, backward_begin, keep, false);
//   // r.net: the step with recompute ops in its backward part; r.blobs: what is recomputed
//
// A blob is recomputed when the backward part reads it, its last forward writer is one of those
// ops, it is not in `keep` (blobs the caller reads after the step), and every input its writer
// reads is still there at that point or can itself be recomputed (an input overwritten later in
// the forward pass by an in-place op is recomputed in its earlier version).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "proto/halfcaf.pb.h"

namespace halfcaf {

struct RecomputeResult {
  NetDef net;
  std::vector<std::string> blobs;  // the forward blobs the backward part now recomputes
  int ops_added = 0;
};

// `step`: forward ops [0, backward_begin), then the gradient ops.
RecomputeResult RecomputeInBackward(const NetDef& step, int backward_begin,
                                    const std::set<std::string>& keep, bool convolutions);

// The ops whose outputs RecomputeInBackward makes again (without convolutions).
bool IsRecomputableType(const std::string& type);

// TrainerOptions::recompute's values: "off", "elementwise" (batch normalization, element-wise
// ops, casts, transposes) or "all" (convolutions too); a bad value is an error naming them.
// Returns whether to recompute, and sets *convolutions.
bool ParseRecompute(const std::string& setting, bool* convolutions);

// The suffix of a recomputed blob's name ("res2_0_branch2a_bn" -> "res2_0_branch2a_bn_recomputed").
extern const char kRecomputedSuffix[];

}  // namespace halfcaf
