// ReduceMax / ReduceMin and their gradients on CUDA (gpu/reduce_minmax_kernels.h). Shapes,
// arguments, comparisons and errors as in reduce_minmax_op.cc, which holds the schemas and the
// gradient makers.
#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/reduce_minmax_kernels.h"
#include "operators/reduce_minmax_op.h"
#include "operators/reduce_op.h"

namespace halfcaf {

namespace {

gpu::StridedGroups ToStridedGroups(const ReduceLayout& l) {
  return gpu::StridedGroups{l.kept_dims,       l.kept_strides, l.reduced_dims,
                            l.reduced_strides, l.outputs,      l.count};
}

template <bool kMax>
class ReduceMinMaxCUDAOp final : public Operator<CUDAContext> {
 public:
  ReduceMinMaxCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        axes_(GetRepeatedArgument<int>("axes")),
        keepdims_(GetSingleArgument<int>("keepdims", 1) != 0) {
    CheckNoDuplicateAxes(axes_);
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFloatType(X, "X");
    const ReducePlan p = MakeReducePlan(X.dims(), axes_, keepdims_);
    const ReduceLayout l = MakeReduceLayout(X.dims(), ReducedDims(X.ndim(), axes_));
    const DataType dtype = X.dtype();
    const void* x = X.raw_data();
    Tensor* Y = Output(0, p.out_dims);
    gpu::GroupExtremes(ToStridedGroups(l), kMax, dtype, x, Y->raw_mutable_data(dtype), nullptr,
                       context_.stream());
  }

 private:
  std::vector<int> axes_;
  bool keepdims_;
};

template <bool kMax>
class ReduceMinMaxGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  ReduceMinMaxGradientCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        axes_(GetRepeatedArgument<int>("axes")),
        keepdims_(GetSingleArgument<int>("keepdims", 1) != 0) {
    CheckNoDuplicateAxes(axes_);
  }

  void RunOnDevice() override {
    const Tensor& dY = Input(0);
    const Tensor& X = Input(1);
    const Tensor& Y = Input(2);
    const ReduceLayout l = CheckMinMaxGradientInputs(dY, X, Y, axes_, keepdims_);
    const DataType dtype = dY.dtype();
    Tensor* dX = Output(0, X.dims());
    gpu::GroupExtremesGradient(ToStridedGroups(l), dtype, dY.raw_data(), X.dtype(), X.raw_data(),
                               Y.dtype(), Y.raw_data(), dtype, dX->raw_mutable_data(dtype),
                               context_.stream());
  }

 private:
  std::vector<int> axes_;
  bool keepdims_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(ReduceMax, ReduceMinMaxCUDAOp<true>);
REGISTER_CUDA_OPERATOR(ReduceMin, ReduceMinMaxCUDAOp<false>);
REGISTER_CUDA_OPERATOR(ReduceMaxGradient, ReduceMinMaxGradientCUDAOp<true>);
REGISTER_CUDA_OPERATOR(ReduceMinGradient, ReduceMinMaxGradientCUDAOp<false>);

}  // namespace halfcaf
