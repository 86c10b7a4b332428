// Reshape: X [, shape] -> (reshaped, old_shape). The new shape comes from the `shape` argument
// (ints) or from input 1 (1-D int32/int64 CPU tensor), exactly one of them. In the new shape 0
// keeps the input's dim at that position and -1 (at most one) is inferred from the element count.
// old_shape is a 1-D tensor with X's original dims: int64 when the shape came from the argument,
// otherwise the shape input's type. Data is copied as raw bytes (any data type); in place (0,0)
// only the dims change. Gradient: Reshape(dY, old_shape) -> (dX, "_" + dX + "_dims").
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

// The output dims for input dims and a requested shape (0 = keep, -1 = infer), fully checked.
std::vector<int64_t> ComputeReshapeDims(const std::vector<int64_t>& in_dims,
                                        const std::vector<int64_t>& shape);

class ReshapeOp final : public Operator<CPUContext> {
 public:
  ReshapeOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  std::vector<int64_t> shape_;  // from the argument
  std::vector<int64_t> requested_;
};

}  // namespace halfcaf
