// FC, FCTransposed and their gradients on CUDA: cuBLAS GEMMs (gpu/cublas_gemm.h: float16 and
// bfloat16 on tensor cores with FP32 accumulation, float as real FP32 math; bfloat16 needs compute
// capability 8.0 or newer). Same shapes, arguments and errors as the CPU operators in fc_op.cc,
// which also hold the schemas and the gradient maker. X, W (and dY) must share one dtype on CUDA;
// the bias may be float or of X's dtype (float16 also with float X).
#include <type_traits>

#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cublas_gemm.h"
#include "gpu/cuda_context.h"
#include "gpu/math_gpu.h"
#include "operators/nn/fc_op.h"

namespace halfcaf {

namespace {

using math::Trans;

void EnforceSameDtype(const Tensor& a, const char* a_name, const Tensor& b, const char* b_name,
                      const std::string& op) {
  HALFCAF_ENFORCE(a.dtype() == b.dtype(), op, " on CUDA needs ", a_name, " and ", b_name,
                  " of one dtype (float, float16 or bfloat16), got ", a_name, " ", a.DebugString(),
                  " and ", b_name, " ", b.DebugString(), " (insert a Cast)");
}

// kTransposed = false: FC (W is (N, K)); true: FCTransposed (W is (K, N)).
template <bool kTransposed>
class FCCUDAOp final : public Operator<CUDAContext> {
 public:
  FCCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        axis_(GetSingleArgument<int>("axis", 1)),
        axis_w_(GetSingleArgument<int>("axis_w", 1)) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& W = Input(1);
    const Tensor& B = Input(2);
    const FCShape s = CheckFCInputs(X, W, B, axis_, axis_w_, kTransposed);
    EnforceSameDtype(X, "X", W, "W", DebugName());
    Tensor* Y = Output(0, FCOutputDims(X.dims(), s));
    if (X.dtype() == DataType::FLOAT) {
      Run<float>(s, X, W, B, Y);
    } else if (X.dtype() == DataType::BFLOAT16) {
      Run<BFloat16>(s, X, W, B, Y);
    } else {
      Run<Half>(s, X, W, B, Y);
    }
  }

 private:
  template <typename T>
  void Run(const FCShape& s, const Tensor& X, const Tensor& W, const Tensor& B, Tensor* Y) {
    T* y = Y->mutable_data<T>();
    // Y = b (broadcast over rows), then Y = X W^T + Y (FCTransposed: X W + Y) in one GEMM with an
    // FP32 epilogue. With float16 Y the bias is rounded to float16 first (CPU rounds once, at the
    // end): a difference of at most half a float16 ulp of b.
    if (B.dtype() == DataType::FLOAT) {
      gpu::ChannelBias(s.M, s.N, 1, B.data<float>(), y, false, context_.stream());
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      HALFCAF_ENFORCE(B.dtype() == DataType::BFLOAT16, DebugName(),
                      " on CUDA with bfloat16 X needs a float or bfloat16 bias, got b ",
                      B.DebugString());
      gpu::ChannelBias(s.M, s.N, 1, B.data<BFloat16>(), y, false, context_.stream());
    } else {
      gpu::ChannelBias(s.M, s.N, 1, B.data<Half>(), y, false, context_.stream());
    }
    if (s.K == 0) return;
    gpu::Gemm(&context_, Trans::kNo, kTransposed ? Trans::kNo : Trans::kYes, s.M, s.N, s.K, 1.f,
              X.data<T>(), W.data<T>(), 1.f, y);
  }

  int axis_, axis_w_;
};

template <bool kTransposed>
class FCGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  FCGradientCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        axis_(GetSingleArgument<int>("axis", 1)),
        axis_w_(GetSingleArgument<int>("axis_w", 1)) {
    ones_.SetDevice(context_.device());
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& W = Input(1);
    const Tensor& dY = Input(2);
    const FCShape s = CheckFCGradientInputs(X, W, dY, axis_, axis_w_, kTransposed);
    EnforceSameDtype(X, "X", W, "W", DebugName());
    EnforceSameDtype(X, "X", dY, "dY", DebugName());
    if (X.dtype() == DataType::FLOAT) {
      Run<float>(s, X, W, dY);
    } else if (X.dtype() == DataType::BFLOAT16) {
      Run<BFloat16>(s, X, W, dY);
    } else {
      Run<Half>(s, X, W, dY);
    }
  }

 private:
  template <typename T>
  void Run(const FCShape& s, const Tensor& X, const Tensor& W, const Tensor& dY) {
    cudaStream_t stream = context_.stream();
    const T* x = X.data<T>();
    const T* w = W.data<T>();
    const T* dy = dY.data<T>();
    T* dw = Output(0, W.dims())->mutable_data<T>();
    T* db = Output(1, {s.N})->mutable_data<T>();
    if (s.M == 0) {  // empty batch: the sums over rows are zero
      gpu::Set(s.N * s.K, 0.f, dw, stream);
      gpu::Set(s.N, 0.f, db, stream);
    } else {
      if (kTransposed) {
        // dW (K x N) = X^T dY
        gpu::Gemm(&context_, Trans::kYes, Trans::kNo, s.K, s.N, s.M, 1.f, x, dy, 0.f, dw);
      } else {
        // dW (N x K) = dY^T X
        gpu::Gemm(&context_, Trans::kYes, Trans::kNo, s.N, s.K, s.M, 1.f, dy, x, 0.f, dw);
      }
      // db (1 x N) = ones (1 x M) * dY: a GEMM, so the column sums accumulate in FP32 too.
      gpu::Gemm(&context_, Trans::kNo, Trans::kNo, 1, s.N, s.M, 1.f, Ones<T>(s.M), dy, 0.f, db);
    }
    if (OutputSize() == 3) {
      T* dx = Output(2, X.dims())->mutable_data<T>();
      if (s.N == 0) {
        gpu::Set(s.M * s.K, 0.f, dx, stream);
      } else {
        // dX (M x K) = dY W (FCTransposed: dY W^T)
        gpu::Gemm(&context_, Trans::kNo, kTransposed ? Trans::kYes : Trans::kNo, s.M, s.K, s.N,
                  1.f, dy, w, 0.f, dx);
      }
    }
  }

  // A device vector of at least n ones of type T, kept between runs.
  template <typename T>
  const T* Ones(int64_t n) {
    if (ones_.dtype() != DataTypeOf<T>() || ones_.numel() < n) {
      ones_.Resize({n});
      gpu::Set(n, 1.f, ones_.mutable_data<T>(), context_.stream());
    }
    return ones_.data<T>();
  }

  int axis_, axis_w_;
  Tensor ones_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(FC, FCCUDAOp<false>);
REGISTER_CUDA_OPERATOR(FCGradient, FCGradientCUDAOp<false>);
REGISTER_CUDA_OPERATOR(FCTransposed, FCCUDAOp<true>);
REGISTER_CUDA_OPERATOR(FCTransposedGradient, FCGradientCUDAOp<true>);

}  // namespace halfcaf
