// ReduceMax / ReduceMin and their gradients on CUDA (gpu/reduce_minmax_kernels.h). Shapes,
// arguments, comparisons and errors as in reduce_minmax_op.cc, which holds the schemas and the
// gradient makers.
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/reduce_minmax_kernels.h"
#include "operators/math/reduce_minmax_op.h"

namespace halfcaf {

namespace {

gpu::StridedGroups ToStridedGroups(const ReduceLayout& l) {
  return gpu::StridedGroups{l.kept_dims,       l.kept_strides, l.reduced_dims,
                            l.reduced_strides, l.outputs,      l.count};
}

template <bool kMax>
class ReduceMinMaxCUDAOp final : public Operator<CUDAContext> {
 public:
  ReduceMinMaxCUDAOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), reduce_(*this) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const MinMaxPlan p = PlanMinMax(X, reduce_);
    const DataType dtype = X.dtype();
    const void* x = X.raw_data();
    void* y = Output(0, p.out_dims)->raw_mutable_data(dtype);
    gpu::GroupExtremes(ToStridedGroups(p.layout), kMax, dtype, x, y, nullptr, context_.stream());
  }

 private:
  MinMaxArgs reduce_;
};

template <bool kMax>
class ReduceMinMaxGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  ReduceMinMaxGradientCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), reduce_(*this) {}

  void RunOnDevice() override {
    const Tensor& dY = Input(0);
    const Tensor& X = Input(1);
    const Tensor& Y = Input(2);
    const ReduceLayout l = PlanMinMaxGradient(dY, X, Y, reduce_);
    const DataType dtype = dY.dtype();
    void* dx = Output(0, X.dims())->raw_mutable_data(dtype);
    gpu::GroupExtremesGradient(ToStridedGroups(l), dtype, dY.raw_data(), X.dtype(), X.raw_data(),
                               Y.dtype(), Y.raw_data(), dtype, dx, context_.stream());
  }

 private:
  MinMaxArgs reduce_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(ReduceMax, ReduceMinMaxCUDAOp<true>);
REGISTER_CUDA_OPERATOR(ReduceMin, ReduceMinMaxCUDAOp<false>);
REGISTER_CUDA_OPERATOR(ReduceMaxGradient, ReduceMinMaxGradientCUDAOp<true>);
REGISTER_CUDA_OPERATOR(ReduceMinGradient, ReduceMinMaxGradientCUDAOp<false>);

}  // namespace halfcaf
