// PRelu and PReluGradient on CUDA (gpu/prelu_kernels.cu): same semantics, dtypes, in-place rules
// and errors as the CPU operators in prelu_op.cc, which also holds the schemas and gradient maker.
#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/prelu_kernels.h"
#include "operators/nn/prelu_op.h"

namespace halfcaf {

namespace {

gpu::PReluShape ToKernelShape(const PReluView& v) { return {v.outer, v.C, v.inner}; }

class PReluCUDAOp final : public Operator<CUDAContext> {
 public:
  PReluCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), order_(ParsePReluOrder(*this)) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& S = Input(1);
    EnforceFloatType(X, "X");
    EnforceFloatType(S, "Slope");
    const PReluView v = PReluViewOf(order_, X.dims(), S.numel(), "PRelu");
    const DataType dtype = X.dtype();
    const void* x = X.raw_data();
    Tensor* Y = Output(0, X.dims());
    gpu::PReluForward(ToKernelShape(v), dtype, x, S.dtype(), S.raw_data(), dtype,
                      Y->raw_mutable_data(dtype), context_.stream());
  }

 private:
  const StorageOrder order_;
};

class PReluGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  PReluGradientCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), order_(ParsePReluOrder(*this)) {}

  void RunOnDevice() override {
    const Tensor& Y = Input(0);
    const Tensor& dY = Input(1);
    const Tensor& X = Input(2);
    const Tensor& S = Input(3);
    EnforceFloatType(Y, "Y");
    EnforceFloatType(dY, "dY");
    EnforceFloatType(X, "X");
    EnforceFloatType(S, "Slope");
    HALFCAF_ENFORCE(Y.dims() == X.dims() && dY.dims() == X.dims(),
                    "PReluGradient: Y, dY and X must have the same shape, got ",
                    DimsString(Y.dims()), ", ", DimsString(dY.dims()), " and ",
                    DimsString(X.dims()));
    const PReluView v = PReluViewOf(order_, X.dims(), S.numel(), "PReluGradient");
    const DataType dx_type = dY.dtype(), ds_type = S.dtype();
    Tensor* dX = Output(0, X.dims());
    Tensor* dS = Output(1, S.dims());
    gpu::PReluBackward(ToKernelShape(v), X.dtype(), X.raw_data(), dY.dtype(), dY.raw_data(),
                       S.dtype(), S.raw_data(), dx_type, dX->raw_mutable_data(dx_type), ds_type,
                       dS->raw_mutable_data(ds_type), context_.stream());
  }

 private:
  const StorageOrder order_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(PRelu, PReluCUDAOp);
REGISTER_CUDA_OPERATOR(PReluGradient, PReluGradientCUDAOp);

}  // namespace halfcaf
