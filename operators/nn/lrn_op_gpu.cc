// LRN and LRNGradient on CUDA (gpu/lrn_kernels.h), float and float16, NCHW and NHWC, both
// gradient forms. Same arguments, shapes, arithmetic and errors as the CPU operators in
// lrn_op.cc, which hold the schemas and the gradient maker.
#include "core/float_io.h"
#include "gpu/cuda_context.h"
#include "gpu/lrn_kernels.h"
#include "operators/nn/lrn_op.h"

namespace halfcaf {

namespace {

gpu::LrnKernelArgs KernelArgs(const LrnArgs& a, const LrnView& v) {
  return gpu::LrnKernelArgs{v.outer, v.C, v.inner, a.size, a.alpha, a.beta, a.bias};
}

class LRNCUDAOp final : public Operator<CUDAContext> {
 public:
  LRNCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), a_(ParseLrnArgs(args_, DebugName())) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFloatType(X, "LRN input X");
    const LrnView v = LrnViewOf(a_, X.dims(), "X");
    const DataType t = X.dtype();
    void* y = Output(0, X.dims())->raw_mutable_data(t);
    void* scale = OutputSize() > 1 ? Output(1, X.dims())->raw_mutable_data(t) : nullptr;
    gpu::LrnForward(KernelArgs(a_, v), t, X.raw_data(), y, scale, context_.stream());
  }

 private:
  LrnArgs a_;
};

class LRNGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  LRNGradientCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), a_(ParseLrnArgs(args_, DebugName())) {}

  void RunOnDevice() override {
    const bool given_scale = InputSize() == 4;
    const Tensor& X = Input(0);
    const Tensor& Y = Input(1);
    const Tensor& dY = Input(given_scale ? 3 : 2);
    const Tensor* scale = given_scale ? &Input(2) : nullptr;
    if (scale) {
      CheckLrnGradientInputs(a_, X, {&Y, scale, &dY}, {"Y", "scale", "dY"});
    } else {
      CheckLrnGradientInputs(a_, X, {&Y, &dY}, {"Y", "dY"});
    }
    const LrnView v = LrnViewOf(a_, X.dims(), "X");
    Tensor* dX = Output(0, X.dims());
    gpu::LrnBackward(KernelArgs(a_, v), X.dtype(), X.raw_data(), Y.dtype(), Y.raw_data(),
                     scale ? scale->dtype() : X.dtype(), scale ? scale->raw_data() : nullptr,
                     dY.dtype(), dY.raw_data(), X.dtype(), dX->raw_mutable_data(X.dtype()),
                     context_.stream());
  }

 private:
  LrnArgs a_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(LRN, LRNCUDAOp);
REGISTER_CUDA_OPERATOR(LRNGradient, LRNGradientCUDAOp);

}  // namespace halfcaf
