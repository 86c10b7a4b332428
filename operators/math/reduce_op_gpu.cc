// ReduceSum / ReduceMean and their gradients on CUDA (gpu/reduce_kernels.cu: sums accumulate in
// double, rounded once, as on the CPU). Shapes, arguments and errors as in reduce_op.cc, which
// holds the schemas and gradient makers.
#include <algorithm>

#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/reduce_kernels.h"
#include "operators/math/reduce_op.h"

namespace halfcaf {

namespace {

template <bool kMean>
class ReduceCUDAOp final : public Operator<CUDAContext> {
 public:
  ReduceCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        axes_(GetRepeatedArgument<int>("axes")),
        keepdims_(GetSingleArgument<int>("keepdims", 1) != 0) {
    CheckNoDuplicateAxes(axes_);
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFloatType(X, "X");
    const ReducePlan p = MakeReducePlan(X.dims(), axes_, keepdims_);
    const DataType dtype = X.dtype();
    const void* x = X.raw_data();
    const std::vector<int64_t> x_dims = X.dims();
    Tensor* Y = Output(0, p.out_dims);
    // The mean of an empty set is NaN (0 * inf), as on the CPU.
    const double scale = kMean ? 1.0 / static_cast<double>(p.count) : 1.0;
    gpu::ReduceSum(x_dims, ReducedDims(static_cast<int>(x_dims.size()), axes_), dtype, x, dtype,
                   Y->raw_mutable_data(dtype), scale, context_.stream());
  }

 private:
  std::vector<int> axes_;
  bool keepdims_;
};

template <bool kMean>
class ReduceGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  ReduceGradientCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        axes_(GetRepeatedArgument<int>("axes")),
        keepdims_(GetSingleArgument<int>("keepdims", 1) != 0) {
    CheckNoDuplicateAxes(axes_);
  }

  void RunOnDevice() override {
    const Tensor& dY = Input(0);
    const Tensor& X = Input(1);
    EnforceFloatType(dY, "dY");
    const ReducePlan p = MakeReducePlan(X.dims(), axes_, keepdims_);
    HALFCAF_ENFORCE(dY.numel() == p.out_numel, "dY has dims ", DimsString(dY.dims()),
                    " but reducing X ", DimsString(X.dims()), " over axes ", DimsString(axes_),
                    " gives ", DimsString(p.out_dims));
    const DataType dtype = dY.dtype();
    const std::vector<int64_t> x_dims = X.dims();
    const float scale = kMean ? 1.f / static_cast<float>(std::max<int64_t>(p.count, 1)) : 1.f;
    Tensor* dX = Output(0, x_dims);
    gpu::BroadcastReduced(x_dims, ReducedDims(static_cast<int>(x_dims.size()), axes_), dtype,
                          dY.raw_data(), dtype, dX->raw_mutable_data(dtype), scale,
                          context_.stream());
  }

 private:
  std::vector<int> axes_;
  bool keepdims_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(ReduceSum, ReduceCUDAOp<false>);
REGISTER_CUDA_OPERATOR(ReduceMean, ReduceCUDAOp<true>);
REGISTER_CUDA_OPERATOR(ReduceSumGradient, ReduceGradientCUDAOp<false>);
REGISTER_CUDA_OPERATOR(ReduceMeanGradient, ReduceGradientCUDAOp<true>);

}  // namespace halfcaf
