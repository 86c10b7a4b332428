// Iter: the training-loop counter. Its single output is an int64 CPU tensor of size 1 that is
// incremented by one per run. With one input the input and output must be the same blob (the
// usual form, `Iter(optimizer_iteration) -> optimizer_iteration`); with no input (deprecated in
// Caffe2) the output blob is the counter. A blob without data starts from 0, so the first run
// leaves 1 in it.
#pragma once

#include "core/operator.h"

namespace halfcaf {

class IterOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;
};

}  // namespace halfcaf
