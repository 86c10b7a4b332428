// Sum, WeightedSum and WeightedSumGradient on CUDA. Same shapes, dtypes, in-place pairs and errors
// as the CPU operators (sum_op.cc, weighted_sum_op.cc hold the schemas and gradient makers).
// float16 and bfloat16 results are accumulated in an FP32 device buffer and rounded once, like the
// CPU; the
// one-element weights of WeightedSum are read by the kernels on the device (no host sync).
#include <string>

#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/elementwise_kernels.h"
#include "gpu/reduce_kernels.h"
#include "gpu/tensor_copy.h"

namespace halfcaf {

namespace {

class SumCUDAOp final : public Operator<CUDAContext> {
 public:
  SumCUDAOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws) {
    acc_.SetDevice(context_.device());
  }

  void RunOnDevice() override {
    const Tensor& X0 = Input(0);
    for (int i = 1; i < InputSize(); ++i) {
      const Tensor& Xi = Input(i);
      HALFCAF_ENFORCE(Xi.dims() == X0.dims() && Xi.dtype() == X0.dtype(), "input ", i, " '",
                      input_name(i), "' is ", Xi.DebugString(), " but input 0 '", input_name(0),
                      "' is ", X0.DebugString(), ": all inputs must match");
    }
    const DataType dtype = X0.dtype();
    HALFCAF_ENFORCE(IsCudaFloatType(dtype) || dtype == DataType::BFLOAT16 ||
                        dtype == DataType::INT32 || dtype == DataType::INT64 ||
                        dtype == DataType::DOUBLE,
                    "Sum supports float, float16, bfloat16, double, int32 and int64, got ",
                    X0.DebugString());
    const int64_t n = X0.numel();
    cudaStream_t stream = context_.stream();
    if (dtype == DataType::FLOAT16 || dtype == DataType::BFLOAT16) {
      // Accumulate in float, round once (input 0 may be the output: it is read first).
      acc_.Resize(X0.dims());
      float* acc = acc_.mutable_data<float>();
      gpu::Convert(n, dtype, X0.raw_data(), DataType::FLOAT, acc, stream);
      for (int i = 1; i < InputSize(); ++i) {
        gpu::AddTo(n, dtype, Input(i).raw_data(), DataType::FLOAT, acc, stream);
      }
      Tensor* Y = Output(0, X0.dims());
      gpu::Convert(n, DataType::FLOAT, acc, dtype, Y->raw_mutable_data(dtype), stream);
      return;
    }
    Tensor* Y = Output(0);
    gpu::CopyTensorAsync(X0, Y, stream);  // no-op in place
    for (int i = 1; i < InputSize(); ++i) {
      gpu::AddTo(n, dtype, Input(i).raw_data(), dtype, Y->raw_mutable_data(dtype), stream);
    }
  }

 private:
  Tensor acc_;
};

// The value check of a one-element weight tensor (its value stays on the device).
void CheckWeight(const Tensor& w, int index) {
  HALFCAF_ENFORCE(w.numel() == 1, "weight w", index, " must have exactly one element, got dims ",
                  DimsString(w.dims()));
  HALFCAF_ENFORCE(IsCudaFloatType(w.dtype()), "weight w", index, " must be float, got ",
                  w.DebugString());
}

class WeightedSumCUDAOp final : public Operator<CUDAContext> {
 public:
  WeightedSumCUDAOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws) {
    acc_.SetDevice(context_.device());
  }

  void RunOnDevice() override {
    const int n = InputSize() / 2;
    const Tensor& X0 = Input(0);
    const DataType dtype = X0.dtype();
    for (int i = 0; i < n; ++i) {
      const Tensor& X = Input(2 * i);
      EnforceFloatType(X, ("X" + std::to_string(i)).c_str());
      HALFCAF_ENFORCE(X.dims() == X0.dims(), "X", i, " has dims ", DimsString(X.dims()),
                      " but X0 has dims ", DimsString(X0.dims()), ": all X_i must have one shape");
      CheckWeight(Input(2 * i + 1), i);
    }
    const int64_t size = X0.numel();
    const std::vector<int64_t> dims = X0.dims();
    cudaStream_t stream = context_.stream();
    Tensor* Y = Output(0, dims);
    void* y = Y->raw_mutable_data(dtype);
    // Sum straight into a float Y unless a later X_i is Y's storage; otherwise into FP32 scratch.
    bool scratch = dtype == DataType::FLOAT16;
    for (int i = 1; i < n; ++i) scratch |= Input(2 * i).raw_data() == y;
    void* out = y;
    if (scratch) {
      acc_.Resize(dims);
      out = acc_.mutable_data<float>();
    }
    for (int i = 0; i < n; ++i) {
      const Tensor& X = Input(2 * i);
      const Tensor& W = Input(2 * i + 1);
      gpu::ScaleByDeviceScalar(size, W.dtype(), W.raw_data(), X.dtype(), X.raw_data(),
                               DataType::FLOAT, out, i > 0, stream);
    }
    if (scratch) gpu::Convert(size, DataType::FLOAT, out, dtype, y, stream);
  }

 private:
  Tensor acc_;
};

class WeightedSumGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const int n = (InputSize() - 1) / 2;
    HALFCAF_ENFORCE(OutputSize() == n || OutputSize() == 2 * n, "WeightedSumGradient with ", n,
                    " (X, w) pairs has ", n, " outputs (dX_i) or ", 2 * n,
                    " (dX_i then dw_i), got ", OutputSize());
    const bool grad_on_w = OutputSize() == 2 * n;
    const Tensor& dY = Input(0);
    EnforceFloatType(dY, "dY");
    const int64_t size = dY.numel();
    cudaStream_t stream = context_.stream();
    for (int i = 0; i < n; ++i) {
      const Tensor& X = Input(1 + 2 * i);
      const Tensor& W = Input(2 + 2 * i);
      EnforceFloatType(X, ("X" + std::to_string(i)).c_str());
      HALFCAF_ENFORCE(X.dims() == dY.dims(), "X", i, " has dims ", DimsString(X.dims()),
                      " but dY has dims ", DimsString(dY.dims()));
      CheckWeight(W, i);
      if (grad_on_w) {
        Tensor* dW = Output(n + i, W.dims());
        gpu::Dot(size, dY.dtype(), dY.raw_data(), X.dtype(), X.raw_data(), W.dtype(),
                 dW->raw_mutable_data(W.dtype()), stream);
      }
      Tensor* dX = Output(i, X.dims());
      gpu::ScaleByDeviceScalar(size, W.dtype(), W.raw_data(), dY.dtype(), dY.raw_data(),
                               X.dtype(), dX->raw_mutable_data(X.dtype()), false, stream);
    }
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(Sum, SumCUDAOp);
REGISTER_CUDA_OPERATOR(WeightedSum, WeightedSumCUDAOp);
REGISTER_CUDA_OPERATOR(WeightedSumGradient, WeightedSumGradientCUDAOp);

}  // namespace halfcaf
