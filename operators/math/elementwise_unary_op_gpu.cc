// One-input element-wise operators on CUDA: Negative, Sigmoid(+Gradient), Tanh(+Gradient),
// Clip(+ClipGradient), Sqr, Scale, Exp, Log, Sqrt, Abs(+Gradient), Reciprocal(+Gradient),
// LeakyRelu(+Gradient), Elu(+Gradient), HardSigmoid(+Gradient), Floor, Ceil and Pow (both
// forms), with the kernels of gpu/elementwise_kernels.cu. Same semantics, dtypes, in-place pairs
// and errors as the CPU operators (the <name>_op.cc files hold the schemas and gradient makers).
#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/elementwise_kernels.h"
#include "gpu/tensor_copy.h"
#include "operators/nn/clip_op.h"
#include "operators/nn/elu_op.h"
#include "operators/nn/hard_sigmoid_op.h"
#include "operators/nn/leaky_relu_op.h"
#include "operators/math/pow_op.h"

namespace halfcaf {

namespace {

class NegativeCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const DataType dtype = X.dtype();
    HALFCAF_ENFORCE(IsCudaFloatType(dtype) || dtype == DataType::DOUBLE ||
                        dtype == DataType::INT32 || dtype == DataType::INT64,
                    "Negative supports float, float16, double, int32 and int64 tensors, got ",
                    X.DebugString());
    const void* x = X.raw_data();
    Tensor* Y = Output(0, X.dims());
    gpu::Negative(X.numel(), dtype, x, Y->raw_mutable_data(dtype), context_.stream());
  }
};

// Y = f(X) for float / float16 X; Y has X's dtype. The parameters come from the arguments.
template <gpu::UnaryOp kOp>
class UnaryCUDAOp final : public Operator<CUDAContext> {
 public:
  UnaryCUDAOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws) {
    if (kOp == gpu::UnaryOp::kScale) p0_ = GetSingleArgument<float>("scale", 1.f);
    if (kOp == gpu::UnaryOp::kClip) ParseClipBounds(*this, &p0_, &p1_);
    if (kOp == gpu::UnaryOp::kLeakyRelu) p0_ = ParseLeakyReluAlpha(*this, false);
    if (kOp == gpu::UnaryOp::kElu) p0_ = ParseEluAlpha(*this, false);
    if (kOp == gpu::UnaryOp::kHardSigmoid) {
      const HardSigmoidParams p = ParseHardSigmoidParams(*this);
      p0_ = p.alpha;
      p1_ = p.beta;
    }
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFloatType(X, "X");
    const DataType dtype = X.dtype();
    const void* x = X.raw_data();
    Tensor* Y = Output(0, X.dims());
    gpu::Unary(kOp, X.numel(), dtype, x, dtype, Y->raw_mutable_data(dtype), p0_, p1_,
               context_.stream());
  }

 private:
  float p0_ = 0.f, p1_ = 0.f;
};

// dX = g(Y, dY) (AbsGradient: g(X, dY)); dX has dY's dtype.
template <gpu::UnaryGradientOp kOp>
class UnaryGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  UnaryGradientCUDAOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws) {
    if (kOp == gpu::UnaryGradientOp::kClip) ParseClipBounds(*this, &p0_, &p1_);
    if (kOp == gpu::UnaryGradientOp::kLeakyRelu) p0_ = ParseLeakyReluAlpha(*this, true);
    if (kOp == gpu::UnaryGradientOp::kElu) p0_ = ParseEluAlpha(*this, true);
    if (kOp == gpu::UnaryGradientOp::kHardSigmoid) p0_ = ParseHardSigmoidParams(*this).alpha;
  }

  void RunOnDevice() override {
    const char* t_name = kOp == gpu::UnaryGradientOp::kAbs ? "X" : "Y";
    const Tensor& Y = Input(0);
    const Tensor& dY = Input(1);
    EnforceFloatType(Y, t_name);
    EnforceFloatType(dY, "dY");
    HALFCAF_ENFORCE(Y.dims() == dY.dims(), t_name, " and dY must have the same shape, got ",
                    DimsString(Y.dims()), " and ", DimsString(dY.dims()));
    const DataType dtype = dY.dtype();
    const void* y = Y.raw_data();
    const void* dy = dY.raw_data();
    const DataType y_type = Y.dtype();
    Tensor* dX = Output(0, Y.dims());
    gpu::UnaryGradient(kOp, Y.numel(), y_type, y, dtype, dy, dtype, dX->raw_mutable_data(dtype),
                       p0_, p1_, context_.stream());
  }

 private:
  float p0_ = 0.f, p1_ = 0.f;
};

// Pow, one input with the `exponent` argument or two same-shape inputs; Y has X's dtype.
class PowCUDAOp final : public Operator<CUDAContext> {
 public:
  PowCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), exponent_(ParsePowExponent(*this)) {
    e_copy_.SetDevice(context_.device());
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFloatType(X, "X");
    const DataType dtype = X.dtype();
    const int64_t n = X.numel();
    const void* x = X.raw_data();
    cudaStream_t stream = context_.stream();
    if (InputSize() == 1) {
      Tensor* Y = Output(0, X.dims());
      gpu::Unary(gpu::UnaryOp::kPow, n, dtype, x, dtype, Y->raw_mutable_data(dtype), exponent_,
                 0.f, stream);
      return;
    }
    const Tensor& E = Input(1);
    EnforceFloatType(E, "exponent E");
    EnforcePowShapes(X, E);
    const DataType e_type = E.dtype();
    const void* e = E.raw_data();
    if (IsInputOutputAlias(1, 0) && e_type != dtype) {
      // Y takes E's blob with another dtype: E's storage is reused or freed, so read a copy.
      gpu::CopyTensorAsync(E, &e_copy_, stream);
      e = e_copy_.raw_data();
    }
    Tensor* Y = Output(0, X.dims());
    gpu::Pow(n, dtype, x, e_type, e, dtype, Y->raw_mutable_data(dtype), stream);
  }

 private:
  float exponent_;
  Tensor e_copy_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Negative, NegativeCUDAOp);
REGISTER_CUDA_OPERATOR(Sigmoid, UnaryCUDAOp<gpu::UnaryOp::kSigmoid>);
REGISTER_CUDA_OPERATOR(SigmoidGradient, UnaryGradientCUDAOp<gpu::UnaryGradientOp::kSigmoid>);
REGISTER_CUDA_OPERATOR(Tanh, UnaryCUDAOp<gpu::UnaryOp::kTanh>);
REGISTER_CUDA_OPERATOR(TanhGradient, UnaryGradientCUDAOp<gpu::UnaryGradientOp::kTanh>);
REGISTER_CUDA_OPERATOR(Clip, UnaryCUDAOp<gpu::UnaryOp::kClip>);
REGISTER_CUDA_OPERATOR(ClipGradient, UnaryGradientCUDAOp<gpu::UnaryGradientOp::kClip>);
REGISTER_CUDA_OPERATOR(Sqr, UnaryCUDAOp<gpu::UnaryOp::kSqr>);
REGISTER_CUDA_OPERATOR(Scale, UnaryCUDAOp<gpu::UnaryOp::kScale>);
REGISTER_CUDA_OPERATOR(Exp, UnaryCUDAOp<gpu::UnaryOp::kExp>);
REGISTER_CUDA_OPERATOR(Log, UnaryCUDAOp<gpu::UnaryOp::kLog>);
REGISTER_CUDA_OPERATOR(Sqrt, UnaryCUDAOp<gpu::UnaryOp::kSqrt>);
REGISTER_CUDA_OPERATOR(Abs, UnaryCUDAOp<gpu::UnaryOp::kAbs>);
REGISTER_CUDA_OPERATOR(AbsGradient, UnaryGradientCUDAOp<gpu::UnaryGradientOp::kAbs>);
REGISTER_CUDA_OPERATOR(Reciprocal, UnaryCUDAOp<gpu::UnaryOp::kReciprocal>);
REGISTER_CUDA_OPERATOR(ReciprocalGradient, UnaryGradientCUDAOp<gpu::UnaryGradientOp::kReciprocal>);
REGISTER_CUDA_OPERATOR(LeakyRelu, UnaryCUDAOp<gpu::UnaryOp::kLeakyRelu>);
REGISTER_CUDA_OPERATOR(LeakyReluGradient, UnaryGradientCUDAOp<gpu::UnaryGradientOp::kLeakyRelu>);
REGISTER_CUDA_OPERATOR(Elu, UnaryCUDAOp<gpu::UnaryOp::kElu>);
REGISTER_CUDA_OPERATOR(EluGradient, UnaryGradientCUDAOp<gpu::UnaryGradientOp::kElu>);
REGISTER_CUDA_OPERATOR(HardSigmoid, UnaryCUDAOp<gpu::UnaryOp::kHardSigmoid>);
REGISTER_CUDA_OPERATOR(HardSigmoidGradient,
                       UnaryGradientCUDAOp<gpu::UnaryGradientOp::kHardSigmoid>);
REGISTER_CUDA_OPERATOR(Floor, UnaryCUDAOp<gpu::UnaryOp::kFloor>);
REGISTER_CUDA_OPERATOR(Ceil, UnaryCUDAOp<gpu::UnaryOp::kCeil>);
REGISTER_CUDA_OPERATOR(Pow, PowCUDAOp);

}  // namespace halfcaf
