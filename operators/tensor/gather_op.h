// Gather: (DATA, INDICES) -> OUTPUT, DATA taken along `axis` (int, default 0) at INDICES (int32
//   or int64, any shape): OUTPUT.dims = DATA.dims[:axis] + INDICES.dims + DATA.dims[axis+1:].
//   `wrap_indices` (int; default 1 when axis is 0, else 0, as in Caffe2) lets a negative index i
//   count from the end (i + dim). Indices outside the axis are an error. Any data type. As in
//   Caffe2, a DATA whose gathered axis has size 0 gives an (empty) OUTPUT shaped like DATA.
//   Gradient, as Caffe2 makes it: for axis 0 a sparse gradient (indices = INDICES, values =
//   dOUTPUT, no op) unless `dense_gradient` = 1, which gives SparseToDense(INDICES, dOUTPUT, DATA)
//   -> dDATA; for other axes BatchGatherGradient(DATA, INDICES, dOUTPUT) -> dDATA.
// BatchGatherGradient: (DATA, INDICES, GRAD) -> dDATA shaped like DATA: zeros plus, for every
//   index, GRAD's slice added at that index along `axis` (int, default 1). `wrap_indices` (int,
//   default 0) as in Gather. Float and float16 (sums in float).
// SparseToDense: (indices, values [, data_to_infer_dim]) -> output: zeros, then
//   output[indices[i], ...] += values[i, ...] (repeated indices add up). values.dims must start
//   with indices.dims (Caffe2 takes 1-D indices only); output.dims = [first] +
//   values.dims[indices.ndim:], first = `output_first_dim` (int, when > 0; only with 2 inputs),
//   else data_to_infer_dim.dims[0], else max(indices) + 1. `wrap_indices` (int, default 0) as in
//   Gather (halfcaf's addition, set by Gather's gradient). Float, float16, int32, int64.
//   Gradient: Gather(doutput, indices) -> dvalues.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/operator.h"

namespace halfcaf {

// DATA viewed as (outer, dim, inner) around the gathered axis; OUTPUT as (outer, n, inner), n =
// the number of indices.
struct GatherPlan {
  int axis = 0;
  int64_t outer = 1, dim = 1, inner = 1, n = 0;
  std::vector<int64_t> out_dims;
};
GatherPlan MakeGatherPlan(const std::vector<int64_t>& data_dims,
                          const std::vector<int64_t>& index_dims, int axis, const std::string& op);

// Throws unless INDICES is int32 or int64.
void EnforceIndexType(const Tensor& indices, const std::string& op);
// The values of `indices` (int32 or int64, on the CPU) as int64.
void ReadIndices(const Tensor& indices, std::vector<int64_t>* out);
// Wraps negative indices (i + dim) when `wrap`, then throws naming the position and the value
// unless every index lies in [0, dim).
void CheckIndexRange(std::vector<int64_t>* index, int64_t dim, bool wrap, const std::string& op);
// Gather's wrap_indices: the argument when given, else on for axis 0 only.
bool GatherWrapsIndices(const ArgumentHelper& args, int axis);

// The arguments of Gather (gradient = false: axis default 0, wrap_indices as GatherWrapsIndices)
// or of BatchGatherGradient (axis default 1, wrap_indices default 0), for the CPU and CUDA ops;
// Caffe2's match_outer is rejected.
struct GatherArgs {
  GatherArgs(const OperatorBase& op, bool gradient);
  int axis;
  bool wrap;
};

// SparseToDense's arguments; output_first_dim and a data_to_infer_dim input exclude each other.
struct SparseToDenseArgs {
  explicit SparseToDenseArgs(const OperatorBase& op);
  int64_t output_first_dim;
  bool wrap;
};

// BatchGatherGradient's checks (index type, GRAD's dtype and dims); returns the plan.
GatherPlan CheckBatchGatherGradientInputs(const Tensor& data, const Tensor& indices,
                                          const Tensor& grad, int axis, const std::string& op);
// SparseToDense's checks on indices and values (types, leading dims).
void CheckSparseToDenseInputs(const Tensor& indices, const Tensor& values, const std::string& op);

// SparseToDense's output dims for values.dims and its first dim.
std::vector<int64_t> SparseToDenseDims(const std::vector<int64_t>& index_dims,
                                       const std::vector<int64_t>& value_dims, int64_t first,
                                       const std::string& op);

class GatherOp final : public Operator<CPUContext> {
 public:
  GatherOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), gather_(*this, false) {}
  void RunOnDevice() override;

 private:
  GatherArgs gather_;
  std::vector<int64_t> index_;
};

class BatchGatherGradientOp final : public Operator<CPUContext> {
 public:
  BatchGatherGradientOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), gather_(*this, true) {}
  void RunOnDevice() override;

 private:
  GatherArgs gather_;
  std::vector<int64_t> index_;
  std::vector<float> grad_, out_;
};

class SparseToDenseOp final : public Operator<CPUContext> {
 public:
  SparseToDenseOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), args_s2d_(*this) {}
  void RunOnDevice() override;

 private:
  SparseToDenseArgs args_s2d_;
  std::vector<int64_t> index_;
  std::vector<float> values_, out_;
};

// SparseToDense's first output dim: output_first_dim when > 0, else data_to_infer_dim's first dim
// (null: no third input), else max(index) + 1 (0 without indices); then `index` is wrapped and
// range-checked against it. Shared with the CUDA op.
int64_t SparseToDenseFirstDim(int64_t output_first_dim, const Tensor* data_to_infer_dim, bool wrap,
                              const std::string& op, std::vector<int64_t>* index);

}  // namespace halfcaf
