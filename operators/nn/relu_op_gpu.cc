// Relu and ReluGradient on CUDA (float, float16 and bfloat16; the gradient's Y and dY both
// bfloat16 or neither), with the kernels of gpu/math_gpu.cu. Same
// semantics, dtypes and errors as the CPU operators in relu_op.cc (schema and gradient maker are
// shared: they are registered there).
#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/math_gpu.h"

namespace halfcaf {

namespace {

class ReluCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFloatType(X, "X", true);
    Tensor* Y = Output(0, X.dims());
    if (X.dtype() == DataType::BFLOAT16) {
      gpu::Relu(X.numel(), X.data<BFloat16>(), Y->mutable_data<BFloat16>(), context_.stream());
    } else if (X.dtype() == DataType::FLOAT) {
      gpu::Relu(X.numel(), X.data<float>(), Y->mutable_data<float>(), context_.stream());
    } else {
      gpu::Relu(X.numel(), X.data<Half>(), Y->mutable_data<Half>(), context_.stream());
    }
  }
};

class ReluGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  ReluGradientCUDAOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws) {
    HALFCAF_ENFORCE(InputSize() == 2, "ReluGradient on CUDA takes one dY (Y, dY), got ",
                    InputSize() - 1, ": the summed form runs on the CPU only");
  }

  void RunOnDevice() override {
    const Tensor& Y = Input(0);
    const Tensor& dY = Input(1);
    EnforceFloatType(Y, "Y", true);
    EnforceFloatType(dY, "dY", true);
    HALFCAF_ENFORCE(Y.dims() == dY.dims(), "Y and dY must have the same shape, got ",
                    DimsString(Y.dims()), " and ", DimsString(dY.dims()));
    const bool y_bf16 = Y.dtype() == DataType::BFLOAT16, dy_bf16 = dY.dtype() == DataType::BFLOAT16;
    HALFCAF_ENFORCE(y_bf16 == dy_bf16, "ReluGradient on CUDA takes bfloat16 Y and dY together, got Y ",
                    Y.DebugString(), " and dY ", dY.DebugString());
    Tensor* dX = Output(0, Y.dims());
    if (y_bf16) {
      gpu::ReluGradient(Y.numel(), Y.data<BFloat16>(), dY.data<BFloat16>(),
                        dX->mutable_data<BFloat16>(), context_.stream());
      return;
    }
    const bool y16 = Y.dtype() == DataType::FLOAT16;
    const int64_t n = Y.numel();
    cudaStream_t s = context_.stream();
    if (dY.dtype() == DataType::FLOAT) {
      const float* dy = dY.data<float>();
      float* dx = dX->mutable_data<float>();
      y16 ? gpu::ReluGradient(n, Y.data<Half>(), dy, dx, s)
          : gpu::ReluGradient(n, Y.data<float>(), dy, dx, s);
    } else {
      const Half* dy = dY.data<Half>();
      Half* dx = dX->mutable_data<Half>();
      y16 ? gpu::ReluGradient(n, Y.data<Half>(), dy, dx, s)
          : gpu::ReluGradient(n, Y.data<float>(), dy, dx, s);
    }
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(Relu, ReluCUDAOp);
REGISTER_CUDA_OPERATOR(ReluGradient, ReluGradientCUDAOp);

}  // namespace halfcaf
