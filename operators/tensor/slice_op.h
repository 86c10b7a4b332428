// Slice: Y = data[start_0:end_0, start_1:end_1, ...], any data type (a raw copy).
//   Inputs: data; optionally starts and ends (1-D int32 or int64 CPU tensors, one entry per
//   leading dim) instead of the `starts` / `ends` arguments (ints).
//   Rules (Caffe2's): dims beyond the lists are taken whole; a negative index v means
//   dim + 1 + v (so -1 is the end of the dim); indices above the dim are clamped to it; after
//   that 0 <= start <= end <= dim must hold; at most one dimension may actually be cut.
// SliceGradient: (data, [starts, ends,] dY) -> ddata, shaped like data: zeros outside the slice,
//   dY inside it. Same arguments.
#pragma once

#include <cstdint>
#include <vector>

#include "core/operator.h"

namespace halfcaf {

// data viewed as (outer, dim, inner) around the one cut axis, of which [start, end) is kept.
// Without a cut, axis is 0 and the whole tensor is kept (start = 0, end = dim).
struct SlicePlan {
  std::vector<int64_t> out_dims;
  int axis = 0;
  int64_t outer = 1, dim = 1, inner = 1, start = 0, end = 1;
  int64_t length() const { return end - start; }
};

// Checks starts / ends against data's dims (messages name the dim, the values and the dims).
SlicePlan PlanSlice(const std::vector<int64_t>& dims, const std::vector<int64_t>& starts,
                    const std::vector<int64_t>& ends);

// Where the bounds come from: the `starts` / `ends` arguments, or inputs 1 and 2 (1-D int32 or
// int64 CPU tensors) in both Slice (data, starts, ends) and SliceGradient (data, starts, ends, dY).
class SliceBounds {
 public:
  // Validates the argument / input combination once, when the op is created. `tensor_inputs` is
  // the op's input count without starts and ends: 1 for Slice, 2 for SliceGradient.
  SliceBounds(const OperatorBase& op, int tensor_inputs);
  // The plan for data of `dims`, reading the index inputs when there are any.
  SlicePlan Plan(const OperatorBase& op, const std::vector<int64_t>& dims);
  // SliceGradient's plan: data's, with dY's dims checked against the slice.
  SlicePlan PlanGradient(const OperatorBase& op, const Tensor& data, const Tensor& dY);
  bool from_inputs() const { return from_inputs_; }

 private:
  bool from_inputs_;
  std::vector<int64_t> starts_, ends_;
};

class SliceOp final : public Operator<CPUContext> {
 public:
  SliceOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  SliceBounds bounds_;
};

class SliceGradientOp final : public Operator<CPUContext> {
 public:
  SliceGradientOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  SliceBounds bounds_;
};

}  // namespace halfcaf
