// ExpandDims: X -> Y with a size-1 dim inserted at each position in `dims` (ints, required, each
//   >= 0, positions in Y; repeats are ignored, as in Caffe2). Gradient: Squeeze with the same dims.
// Squeeze: X -> Y with the size-1 dims at positions `dims` (ints, required, each >= 0; repeats
//   ignored) removed; each of them must be 1. Gradient: ExpandDims with the same dims.
// Both keep the elements in order (a raw copy, any data type) and may run in place (0, 0), which
// only changes the dims.
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

// `dims` sorted without repeats; throws if it is empty or has a negative entry. `op` names the
// operator in messages.
std::vector<int> CanonicalSqueezeDims(std::vector<int> dims, const std::string& op);
// Y's dims for ExpandDims / Squeeze of X with canonical `dims` (throws on a bad position or, for
// Squeeze, a dim that is not 1).
std::vector<int64_t> ExpandDimsShape(const std::vector<int64_t>& x_dims,
                                     const std::vector<int>& dims, const std::string& op);
std::vector<int64_t> SqueezeShape(const std::vector<int64_t>& x_dims, const std::vector<int>& dims,
                                  const std::string& op);

// kExpand: ExpandDims, else Squeeze.
template <bool kExpand>
class ExpandSqueezeOp final : public Operator<CPUContext> {
 public:
  ExpandSqueezeOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  std::vector<int> dims_;
};

}  // namespace halfcaf
