// ArgMax / ArgMin on CUDA (gpu/reduce_minmax_kernels.h): float, float16, int32 and int64 input,
// int64 output. Shapes, arguments (select_last_index too), tie and NaN rules and errors as in
// arg_op.cc, which holds the schemas.
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/reduce_minmax_kernels.h"
#include "operators/math/arg_op.h"

namespace halfcaf {

namespace {

template <bool kMax>
class ArgCUDAOp final : public Operator<CUDAContext> {
 public:
  ArgCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        axis_(GetSingleArgument<int>("axis", -1)),
        keepdims_(GetSingleArgument<int>("keepdims", 1) != 0),
        select_last_index_(GetSingleArgument<int>("select_last_index", 0) != 0) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceArgInputType(X, DebugName());
    const ArgPlan p = MakeArgPlan(X.dims(), axis_, keepdims_, DebugName());
    const ReduceLayout& l = p.layout;
    const gpu::StridedGroups groups{l.kept_dims,       l.kept_strides, l.reduced_dims,
                                    l.reduced_strides, l.outputs,      l.count};
    int64_t* y = Output(0, p.out_dims)->mutable_data<int64_t>();
    gpu::GroupExtremes(groups, kMax, X.dtype(), X.raw_data(), nullptr, y, context_.stream(),
                       select_last_index_);
  }

 private:
  int axis_;
  bool keepdims_, select_last_index_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(ArgMax, ArgCUDAOp<true>);
REGISTER_CUDA_OPERATOR(ArgMin, ArgCUDAOp<false>);

}  // namespace halfcaf
