// Fill operators: create a tensor of a given shape filled with a constant, random values or
// given values. The shape comes from `shape` (no input), from the input's shape (one input), or
// from the input's values when input_as_shape=1 (a 1-D int64 tensor); `extra_shape` is appended
// (only with an input). No gradient.
#pragma once

#include <functional>
#include <vector>

#include "core/operator.h"

namespace halfcaf {

class FillerOp : public Operator<CPUContext> {
 public:
  FillerOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() final;

 protected:
  // Fills `out`, already resized; `dtype_` is the requested element type.
  virtual void Fill(Tensor* out) = 0;
  DataType dtype_ = DataType::FLOAT;

 private:
  std::vector<int64_t> shape_, extra_shape_;
  bool input_as_shape_;
};

// Output dims a fill op produces for the given input dims (no input: empty `in`).
std::vector<int64_t> FillOutputDims(const OperatorDef& def, const std::vector<TensorShape>& in);

}  // namespace halfcaf
