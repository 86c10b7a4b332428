// ArgMax / ArgMin: for each position of the other dims, the index along `axis` (int, default -1:
// the last dim) of the largest / smallest element of X. Output int64; the axis is kept as size 1
// when `keepdims` (int, default 1) is set, removed otherwise. The first of tied elements wins, or
// the last with `select_last_index` (int, default 0; a halfcaf extension after ONNX's attribute,
// Caffe2 has none); a NaN counts as larger (ArgMax) or smaller (ArgMin) than any number and NaNs
// tie with each other, so the first (last) NaN wins. X is float, float16, int32 or int64 and must
// be non-empty along `axis`. No gradient.
#pragma once

#include <vector>

#include "core/operator.h"
#include "operators/math/reduce_minmax_op.h"

namespace halfcaf {

// The output dims and X's layout (one group per output, `axis` reduced) for ArgMax / ArgMin;
// throws on a bad axis or an empty axis. `op` names the operator in messages.
struct ArgPlan {
  std::vector<int64_t> out_dims;
  ReduceLayout layout;
};
ArgPlan MakeArgPlan(const std::vector<int64_t>& x_dims, int axis, bool keepdims,
                    const std::string& op);
// Throws unless X's dtype is one ArgMax / ArgMin take.
void EnforceArgInputType(const Tensor& X, const std::string& op);

template <bool kMax>
class ArgOp final : public Operator<CPUContext> {
 public:
  ArgOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  template <typename T>
  void Run(const ReduceLayout& l, const T* x, std::vector<T>* best, int64_t* y);

  int axis_;
  bool keepdims_, select_last_index_;
  std::vector<float> x_, best_float_;
  std::vector<int32_t> best_int32_;
  std::vector<int64_t> best_int64_, where_;
};

}  // namespace halfcaf
