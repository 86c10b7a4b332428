// Backward: appends the backward pass of a forward NetDef, built from the registered gradient
// makers (core/gradient.h), with Caffe2's naming and accumulation conventions:
//
// - Each loss `L` is seeded by `ConstantFill([L], [L + "_autogen_grad"], value=1.0)` (same shape
//   as L, float), unless the caller names a seed blob for it (e.g. `loss_scale`): then that blob
//   is L's gradient and no fill op is written. Seeds come first, in the order of `losses`.
// - Forward ops are replayed into versions (a blob written again is a new version) and walked in
//   reverse. An op none of whose outputs has a gradient is skipped (ZeroGradient excepted), so
//   ops behind the loss or with NO_GRADIENT inputs (StopGradient) never ask for a gradient.
// - A blob version read by several ops gets one contribution per op. When the walk reaches its
//   first reader and there are two or more contributions, they are summed: the first one written
//   by a gradient op keeps its name (normally `X_grad`) and names the result; the other
//   op-written ones are renamed in their ops to `_X_grad_autosplit_<n>` (n = 0, 1, ... per sum);
//   pass-through contributions (Sum's gradient) keep their names. One `Sum` op, output in input
//   slot 0 so it runs in place, is appended right after the current op's gradient ops.
// - Sparse gradients (indices + values) are passed on when a blob has a single contribution;
//   summing them is not supported.
//
// Differences from Caffe2's Python driver (only where it matters for odd nets): gradients are
// tracked per blob version, so a blob overwritten by an unrelated op does not leak the new
// version's gradient into the old one; the seed ConstantFill and the Sum ops take the device
// option of the loss's producer / of the contributing gradient ops.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

// Dims of blobs by name, as the forward ops read them.
using BlobDims = std::map<std::string, std::vector<int64_t>>;

// Appends the gradient ops of `net` for `losses` to `net` and returns forward blob -> gradient
// blob for every blob that received a gradient (parameters: `w` -> `w_grad`). `seeds` maps a loss
// to an existing blob to use as its gradient instead of a ConstantFill of 1. `blob_dims`
// (optional) gives the gradient makers the dims of the forward ops' inputs (an op gets them when
// all its inputs are listed): Add, Sub, Mul and Div without `broadcast` assume identical input
// shapes unless these dims show a NumPy broadcast (core/gradient.h SetInputDims). Throws
// EnforceNotMet when a loss is not produced by the net, when a needed gradient cannot be made
// (the message names the forward op and its position), or on unsupported accumulations.
std::map<std::string, GradientWrapper> AddGradientOperators(
    NetDef* net, const std::vector<std::string>& losses,
    const std::map<std::string, std::string>& seeds = {}, const BlobDims* blob_dims = nullptr);

// Same as AddGradientOperators (the name the design uses).
inline std::map<std::string, GradientWrapper> Backward(
    NetDef* net, const std::vector<std::string>& losses,
    const std::map<std::string, std::string>& seeds = {}, const BlobDims* blob_dims = nullptr) {
  return AddGradientOperators(net, losses, seeds, blob_dims);
}

}  // namespace halfcaf
