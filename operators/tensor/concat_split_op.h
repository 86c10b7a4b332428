// Concat / Split (aliases DepthConcat / DepthSplit): joining tensors along one axis and cutting a
// tensor into pieces along one axis. Both copy raw bytes, so they work on any data type.
//
// Concat: X0 ... Xn-1 -> (Y, split_info). All inputs have the same dims except along `axis`; Y
//   has the sum of their extents there. split_info is a 1-D int32 CPU tensor (n) holding each
//   input's extent on the axis. With add_axis=1 the inputs (all the same shape) are stacked along
//   a new axis inserted at `axis` and split_info is all ones.
// Split: X [, split lengths (1-D int32, CPU)] -> Y0 ... Yk-1. Lengths come from the `split`
//   argument or input 1 (not both); without either, X is cut into k equal parts. With add_axis=1
//   every length must be 1 and the axis is removed from the outputs.
// Arguments (both): `axis` (int, default 1; negative counts from the end) or `order` ("NCHW" ->
//   1, "NHWC" -> 3), not both; `add_axis` (int, default 0).
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

// The axis selected by `axis` / `order` (not yet canonicalised) and add_axis.
struct ConcatSplitAxis {
  int axis = 1;
  bool add_axis = false;
};
ConcatSplitAxis ParseConcatSplitAxis(const ArgumentHelper& args);

// Concat's output dims and per-input extents for the given input dims (all checked).
struct ConcatShape {
  std::vector<int64_t> dims;
  std::vector<int64_t> extents;
  int axis;  // canonical, in the output's dims
};
ConcatShape ComputeConcatShape(const std::vector<std::vector<int64_t>>& input_dims,
                               const ConcatSplitAxis& a);

// Split lengths for X's dims (all checked); `lengths` empty means equal parts.
std::vector<int64_t> ComputeSplitLengths(const std::vector<int64_t>& x_dims,
                                         const ConcatSplitAxis& a, int num_outputs,
                                         const std::vector<int64_t>& lengths);

// How Concat copies its inputs into Y, the same on every device: Y is seen as `outer` rows of
// `y_row` bytes; input i fills `row_bytes[i]` bytes of each row, starting at `offsets[i]`. Also
// checks that the inputs share one data type.
struct ConcatPlan {
  ConcatShape shape;
  DataType dtype = DataType::UNDEFINED;
  std::vector<size_t> row_bytes, offsets;
  size_t outer = 0, y_row = 0;
};
ConcatPlan PlanConcat(const OperatorBase& op, const std::vector<const Tensor*>& inputs,
                      const ConcatSplitAxis& axis);
// Writes Concat's second output: each input's extent on the axis, int32 on the CPU.
void WriteSplitInfo(const ConcatShape& shape, Tensor* info);

// How Split copies X into its outputs, the same on every device: X is seen as `outer` rows of
// `x_row` bytes; output k takes `row_bytes[k]` bytes of each row, starting at `offsets[k]`.
struct SplitPlan {
  std::vector<std::vector<int64_t>> out_dims;
  std::vector<size_t> row_bytes, offsets;
  size_t outer = 0, x_row = 0;
};
// `split_arg`: the `split` argument (empty: from input 1 when the op has it, else equal parts).
SplitPlan PlanSplit(const OperatorBase& op, const Tensor& X, const ConcatSplitAxis& axis,
                    const std::vector<int64_t>& split_arg);

class ConcatOp final : public Operator<CPUContext> {
 public:
  ConcatOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  ConcatSplitAxis axis_;
};

class SplitOp final : public Operator<CPUContext> {
 public:
  SplitOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  ConcatSplitAxis axis_;
  std::vector<int64_t> split_;  // from the `split` argument
};

}  // namespace halfcaf
