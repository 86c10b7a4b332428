// Dropout and DropoutGrad on CUDA (gpu/dropout_kernels.cu). Same inputs, outputs, arguments and
// errors as the CPU operators in dropout_op.cc (schemas and gradient maker there); the mask is
// bool (one byte per element, true = kept). The random draws are a hash of (seed, element index);
// each run takes a fresh 64-bit seed from the op context's generator, which is seeded by
// device_option.random_seed when set: a net is repeatable on CUDA, but its masks differ from the
// CPU op's (a different generator).
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_context.h"
#include "gpu/dropout_kernels.h"
#include "operators/nn/channel_block.h"
#include "operators/nn/dropout_op.h"

namespace halfcaf {

namespace {

// dst = src (same dims and dtype) on the op's stream.
void CopyOnStream(const Tensor& src, Tensor* dst, cudaStream_t stream) {
  dst->Resize(src.dims());
  void* d = dst->raw_mutable_data(src.dtype());
  if (src.nbytes() == 0) return;
  HALFCAF_CUDA_CHECK(
      cudaMemcpyAsync(d, src.raw_data(), src.nbytes(), cudaMemcpyDeviceToDevice, stream));
}

class DropoutCUDAOp final : public Operator<CUDAContext> {
 public:
  DropoutCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        ratio_(ReadDropoutRatio(*this)),
        is_test_(GetSingleArgument<int>("is_test", 0) != 0) {
    HALFCAF_ENFORCE(is_test_ || OutputSize() == 2,
                    "Dropout in training mode (is_test=0) needs 2 outputs (Y, mask), got ",
                    OutputSize());
    RefuseChannelBlock(*this);  // the channel-blocked layout is the CPU's
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFloatType(X, "X");
    const std::vector<int64_t> dims = X.dims();
    const int64_t n = X.numel();
    cudaStream_t stream = context_.stream();
    if (is_test_) {
      if (OutputSize() == 2) {
        bool* mask = Output(1, dims)->mutable_data<bool>();
        if (n > 0) HALFCAF_CUDA_CHECK(cudaMemsetAsync(mask, 1, static_cast<size_t>(n), stream));
      }
      if (!IsInputOutputAlias(0, 0)) CopyOnStream(X, Output(0), stream);
      return;
    }
    auto& rng = context_.RandGenerator();
    const uint64_t hi = rng(), lo = rng();
    const uint64_t seed = (hi << 32) | lo;
    bool* mask = Output(1, dims)->mutable_data<bool>();
    Tensor* Y = Output(0, dims);
    if (X.dtype() == DataType::FLOAT) {
      gpu::Dropout(n, ratio_, seed, X.data<float>(), Y->mutable_data<float>(), mask, stream);
    } else {
      gpu::Dropout(n, ratio_, seed, X.data<Half>(), Y->mutable_data<Half>(), mask, stream);
    }
  }

 private:
  float ratio_;
  bool is_test_;
};

class DropoutGradCUDAOp final : public Operator<CUDAContext> {
 public:
  DropoutGradCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        ratio_(ReadDropoutRatio(*this)),
        is_test_(GetSingleArgument<int>("is_test", 0) != 0) {
    HALFCAF_ENFORCE(is_test_ || InputSize() == 2,
                    "DropoutGrad in training mode (is_test=0) needs 2 inputs (dY, mask), got ",
                    InputSize());
  }

  void RunOnDevice() override {
    const Tensor& dY = Input(0);
    EnforceFloatType(dY, "dY");
    cudaStream_t stream = context_.stream();
    if (is_test_) {
      if (!IsInputOutputAlias(0, 0)) CopyOnStream(dY, Output(0), stream);
      return;
    }
    const Tensor& mask_t = Input(1);
    HALFCAF_ENFORCE(mask_t.dtype() == DataType::BOOL, "mask must be bool, got ",
                    mask_t.DebugString());
    HALFCAF_ENFORCE(mask_t.dims() == dY.dims(), "mask and dY must have the same shape, got ",
                    DimsString(mask_t.dims()), " and ", DimsString(dY.dims()));
    const int64_t n = dY.numel();
    const bool* mask = mask_t.data<bool>();
    Tensor* dX = Output(0, dY.dims());
    if (dY.dtype() == DataType::FLOAT) {
      gpu::DropoutGrad(n, ratio_, dY.data<float>(), mask, dX->mutable_data<float>(), stream);
    } else {
      gpu::DropoutGrad(n, ratio_, dY.data<Half>(), mask, dX->mutable_data<Half>(), stream);
    }
  }

 private:
  float ratio_;
  bool is_test_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Dropout, DropoutCUDAOp);
REGISTER_CUDA_OPERATOR(DropoutGrad, DropoutGradCUDAOp);

}  // namespace halfcaf
