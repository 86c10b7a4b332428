// SpatialBN and SpatialBNGradient on cuDNN batch normalisation (CUDNN_BATCHNORM_SPATIAL), the
// plain CUDA implementation and engine CUDNN alike. Same inputs, outputs, arguments, shapes and
// errors as the CPU operators in spatial_bn_op.cc (which hold the schemas and the gradient
// maker): X float, float16 or bfloat16 (3-D to 5-D, NCHW or NHWC; the spatial dims are folded into
// one, so cuDNN sees (N, C, S, 1)), scale / bias / mean / var and every statistic FP32. bfloat16
// (compute capability 8.0 or newer) takes bfloat16 dY with it, and not the test-mode gradient.
//
// Training forward: cudnnBatchNormalizationForwardTraining normalises with the biased batch
// variance and writes saved_mean and saved_inv_std (outputs 3, 4: 1 / sqrt(var + epsilon), as on
// CPU). cuDNN's own running average would use the unbiased variance; halfcaf's uses the biased
// one (as the CPU op does), so cuDNN is asked for the plain batch statistics (factor 1, into
// scratch) and gpu::BNUpdateRunningStats applies running = running * momentum + batch *
// (1 - momentum) with the variance rescaled by (M - 1) / M. CPU and CUDA therefore agree.
// Test forward: cudnnBatchNormalizationForwardInference.
// Gradient: training uses cudnnBatchNormalizationBackward with the saved mean and inverse std
// (dY is converted to X's dtype first when they differ); test mode (statistics constant) uses
// gpu::BNTestModeGradient.
#include <cuda_runtime.h>

#include <vector>

#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/bn_kernels.h"
#include "gpu/cuda_context.h"
#include "gpu/cudnn_wrappers.h"
#include "gpu/math_gpu.h"
#include "operators/nn/channel_block.h"
#include "operators/nn/spatial_bn_op.h"

namespace halfcaf {

namespace {

// The X descriptor ((N, C, S, 1) in the op's order) and the derived parameter descriptor, reset
// only when the shape or dtype changes.
class BNDescriptors {
 public:
  void Set(const BNShape& s, BNOrder order, DataType dtype) {
    const std::vector<int64_t> key{s.N, s.C, s.S, static_cast<int64_t>(dtype)};
    if (key == key_) return;
    key_.clear();  // stays empty if a descriptor call throws
    x_.Set4d(order == BNOrder::NCHW ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC,
             CudnnDataType(dtype, "SpatialBN input X"), s.N, s.C, s.S, 1);
    HALFCAF_CUDNN_CHECK(
        cudnnDeriveBNTensorDescriptor(param_.get(), x_.get(), CUDNN_BATCHNORM_SPATIAL));
    key_ = key;
  }
  cudnnTensorDescriptor_t x() const { return x_.get(); }
  cudnnTensorDescriptor_t param() const { return param_.get(); }

 private:
  TensorDescriptor x_, param_;
  std::vector<int64_t> key_;
};

void* DeviceScratch(Tensor* t, Device device, int64_t numel, DataType dtype) {
  t->SetDevice(device);
  t->Resize({numel});
  return t->raw_mutable_data(dtype);
}

class SpatialBNCudnnOp final : public Operator<CUDAContext> {
 public:
  SpatialBNCudnnOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        is_test_(GetSingleArgument<int>("is_test", 0) != 0),
        epsilon_(ReadBNEpsilon(*this)),
        momentum_(GetSingleArgument<float>("momentum", 0.9f)),
        order_(ParseBNOrder(GetSingleArgument<std::string>("order", "NCHW"))) {
    EnforceSpatialBNForwardArgs(*this, is_test_, momentum_);
    RefuseChannelBlock(*this);
    RefuseBNFuseRelu(*this);
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFloatType(X, "X", true);
    if (X.dtype() == DataType::BFLOAT16) EnforceBFloat16Device(context_.device_id(), "SpatialBN");
    const std::vector<int64_t> dims = X.dims();
    const DataType dtype = X.dtype();
    const BNShape s = ComputeBNShape(dims, order_);
    const int64_t C = s.C;
    const Tensor& scale_t = Input(1);
    const Tensor& bias_t = Input(2);
    EnforceBNChannelParam(scale_t, "scale", s, dims, order_);
    EnforceBNChannelParam(bias_t, "bias", s, dims, order_);
    cudnnHandle_t handle = context_.cudnn_handle();
    const float one = 1.f, zero = 0.f;
    const double eps = static_cast<double>(epsilon_);

    if (is_test_) {
      const Tensor& mean_t = Input(3);
      const Tensor& var_t = Input(4);
      EnforceBNChannelParam(mean_t, "mean", s, dims, order_);
      EnforceBNChannelParam(var_t, "var", s, dims, order_);
      Tensor* Y = Output(0, dims);
      void* y = Y->raw_mutable_data(dtype);
      if (X.numel() == 0) return;
      desc_.Set(s, order_, dtype);
      // Element-wise, so Y may alias X.
      HALFCAF_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
          handle, CUDNN_BATCHNORM_SPATIAL, &one, &zero, desc_.x(), X.raw_data(), desc_.x(), y,
          desc_.param(), scale_t.data<float>(), bias_t.data<float>(), mean_t.data<float>(),
          var_t.data<float>(), eps));
      return;
    }

    const int64_t M = s.N * s.S;
    HALFCAF_ENFORCE(M > 0,
                    "SpatialBN in training mode needs at least one value per channel, X has dims ",
                    DimsString(dims));
    float* running_mean = RunningStat(3, 1, C, "running mean");
    float* running_var = RunningStat(4, 2, C, "running var");
    float* saved_mean = Output(3, {C})->mutable_data<float>();
    float* saved_inv_std = Output(4, {C})->mutable_data<float>();
    const void* x = X.raw_data();
    if (IsInputOutputAlias(0, 0) && X.numel() > 0) {
      // In place: cuDNN reads X for the statistics and writes Y; keep an unaliased copy.
      void* copy = DeviceScratch(&x_copy_, context_.device(), X.numel(), dtype);
      HALFCAF_CUDA_CHECK(
          cudaMemcpyAsync(copy, x, X.nbytes(), cudaMemcpyDeviceToDevice, context_.stream()));
      x = copy;
    }
    Tensor* Y = Output(0, dims);
    void* y = Y->raw_mutable_data(dtype);
    if (X.numel() == 0) return;  // C == 0
    desc_.Set(s, order_, dtype);
    float* batch_mean =
        static_cast<float*>(DeviceScratch(&batch_mean_, context_.device(), C, DataType::FLOAT));
    float* batch_var =
        static_cast<float*>(DeviceScratch(&batch_var_, context_.device(), C, DataType::FLOAT));
    // Factor 1: the "running" outputs receive this batch's mean and unbiased variance. cuDNN
    // blends them as old * (1 - factor) + batch * factor, and 0 * NaN is NaN: the scratch comes
    // from the caching allocator and may hold anything, so start it at zero.
    gpu::Set(C, 0.f, batch_mean, context_.stream());
    gpu::Set(C, 0.f, batch_var, context_.stream());
    HALFCAF_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
        handle, CUDNN_BATCHNORM_SPATIAL, &one, &zero, desc_.x(), x, desc_.x(), y, desc_.param(),
        scale_t.data<float>(), bias_t.data<float>(), 1.0, batch_mean, batch_var, eps, saved_mean,
        saved_inv_std));
    gpu::BNUpdateRunningStats(C, M, momentum_, BNRunningVarFactor(*this, M) != 1.0, batch_mean,
                              batch_var, running_mean, running_var, context_.stream());
  }

 private:
  // Running statistic in output `out` (aliasing input `in`), zero-initialised when empty.
  float* RunningStat(int in, int out, int64_t C, const char* what) {
    if (HasRunningStat(*this, in, what)) {
      CheckRunningStat(*this, in, Input(in), C, what);  // Input checks the device
      return Output(out)->mutable_data<float>();
    }
    float* p = Output(out, {C})->mutable_data<float>();
    gpu::Set(C, 0.f, p, context_.stream());
    return p;
  }

  bool is_test_;
  float epsilon_, momentum_;
  BNOrder order_;
  BNDescriptors desc_;
  Tensor batch_mean_, batch_var_, x_copy_;  // device scratch, kept between runs
};

class SpatialBNGradientCudnnOp final : public Operator<CUDAContext> {
 public:
  SpatialBNGradientCudnnOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        is_test_(GetSingleArgument<int>("is_test", 0) != 0),
        epsilon_(ReadBNEpsilon(*this)),
        order_(ParseBNOrder(GetSingleArgument<std::string>("order", "NCHW"))) {
    EnforceBNSingleBatch(*this);
    RefuseChannelBlock(*this);
    RefuseBNFuseRelu(*this);
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& scale_t = Input(1);
    const Tensor& dY = Input(2);
    const Tensor& mean_t = Input(3);
    const Tensor& var_t = Input(4);
    const std::vector<int64_t> dims = X.dims();
    const BNShape s = CheckBNGradientInputs(X, scale_t, dY, mean_t, var_t, is_test_, order_);
    const bool bf16 = X.dtype() == DataType::BFLOAT16;
    if (bf16 || dY.dtype() == DataType::BFLOAT16) {
      HALFCAF_ENFORCE(X.dtype() == dY.dtype(),
                      "SpatialBNGradient on CUDA takes bfloat16 X and dY together, got X ",
                      X.DebugString(), " and dY ", dY.DebugString());
      HALFCAF_ENFORCE(!is_test_,
                      "SpatialBNGradient on CUDA in test mode (is_test=1) takes float or float16, "
                      "not bfloat16 (run it on CPU, or cast X and dY)");
      EnforceBFloat16Device(context_.device_id(), "SpatialBNGradient");
    }
    const int64_t C = s.C;
    float* dscale = Output(1, {C})->mutable_data<float>();
    float* dbias = Output(2, {C})->mutable_data<float>();
    Tensor* dX = Output(0, dims);
    void* dx = dX->raw_mutable_data(X.dtype());
    cudaStream_t stream = context_.stream();

    if (is_test_) {
      const bool dy16 = dY.dtype() == DataType::FLOAT16;
      if (X.dtype() == DataType::FLOAT) {
        float* dxf = static_cast<float*>(dx);
        dy16 ? TestGradient(X.data<float>(), dY.data<Half>(), s, mean_t, var_t, scale_t, dxf,
                            dscale, dbias)
             : TestGradient(X.data<float>(), dY.data<float>(), s, mean_t, var_t, scale_t, dxf,
                            dscale, dbias);
      } else {
        Half* dxh = static_cast<Half*>(dx);
        dy16 ? TestGradient(X.data<Half>(), dY.data<Half>(), s, mean_t, var_t, scale_t, dxh, dscale,
                            dbias)
             : TestGradient(X.data<Half>(), dY.data<float>(), s, mean_t, var_t, scale_t, dxh,
                            dscale, dbias);
      }
      return;
    }

    if (X.numel() == 0) return;  // C == 0 (M > 0 was checked)
    // cuDNN takes one descriptor for X, dY and dX: convert dY to X's dtype when they differ.
    const void* dy = dY.raw_data();
    if (dY.dtype() != X.dtype()) {
      void* conv = DeviceScratch(&dy_conv_, context_.device(), dY.numel(), X.dtype());
      if (X.dtype() == DataType::FLOAT16) {
        gpu::FloatToHalf(dY.numel(), dY.data<float>(), static_cast<Half*>(conv), stream);
      } else {
        gpu::HalfToFloat(dY.numel(), dY.data<Half>(), static_cast<float*>(conv), stream);
      }
      dy = conv;
    }
    desc_.Set(s, order_, X.dtype());
    const float one = 1.f, zero = 0.f;
    HALFCAF_CUDNN_CHECK(cudnnBatchNormalizationBackward(
        context_.cudnn_handle(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, desc_.x(),
        X.raw_data(), desc_.x(), dy, desc_.x(), dx, desc_.param(), scale_t.data<float>(), dscale,
        dbias, static_cast<double>(epsilon_), mean_t.data<float>(), var_t.data<float>()));
  }

 private:
  template <typename T, typename TD>
  void TestGradient(const T* x, const TD* dy, const BNShape& s, const Tensor& mean,
                    const Tensor& var, const Tensor& scale, T* dx, float* dscale, float* dbias) {
    gpu::BNTestModeGradient(s.N, s.C, s.S, order_ == BNOrder::NHWC, x, dy, scale.data<float>(),
                            mean.data<float>(), var.data<float>(), epsilon_, dx, dscale, dbias,
                            context_.stream());
  }

  bool is_test_;
  float epsilon_;
  BNOrder order_;
  BNDescriptors desc_;
  Tensor dy_conv_;  // dY in X's dtype when they differ (device scratch, kept)
};

}  // namespace

REGISTER_CUDA_OPERATOR(SpatialBN, SpatialBNCudnnOp);
REGISTER_CUDA_OPERATOR(SpatialBNGradient, SpatialBNGradientCudnnOp);
REGISTER_CUDNN_OPERATOR(SpatialBN, SpatialBNCudnnOp);
REGISTER_CUDNN_OPERATOR(SpatialBNGradient, SpatialBNGradientCudnnOp);

}  // namespace halfcaf
