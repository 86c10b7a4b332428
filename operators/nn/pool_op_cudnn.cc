// MaxPool / AveragePool (+ the 1D/2D/3D aliases) and their gradients on CUDA. Same inputs, outputs,
// arguments, shapes and errors as the CPU operators in pool_op.cc (which hold the schemas and the
// gradient maker); float, float16 and bfloat16 (X, Y, dY all bfloat16; compute capability 8.0 or
// newer), 1-D to 3-D NCHW and 2-D NHWC, global_pooling, every legacy_pad. 1-D runs as 2-D with a leading unit dim in cuDNN (which pools 4-D and 5-D tensors).
//
// Two registrations:
// - the plain CUDA implementation (engine ""): own kernels (gpu/pool_kernels.cu) that reproduce
//   the CPU semantics exactly, for every case (asymmetric pads, Caffe legacy pooling, mixed
//   dtypes of X and dY);
// - engine CUDNN (tried first on CUDA): cudnnPoolingForward / cudnnPoolingBackward (max:
//   CUDNN_POOLING_MAX_DETERMINISTIC; average: CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, i.e.
//   padding excluded from the divisor as on CPU). It declines explicit asymmetric pads (the
//   plain CUDA implementation is then created), and at run time uses the own kernels for the
//   shapes cuDNN cannot express (dilated windows, asymmetric pads from legacy_pad, an output size
//   other than cuDNN's, X / Y / dY of different dtypes, empty tensors).
// Max-pool gradient with ties: the CPU op and the own kernels send the gradient to the first
// maximum in scan order; cuDNN's deterministic mode picks one maximum too, which on exact ties may
// be another element.
#include <string>
#include <vector>

#include "core/float_io.h"
#include "gpu/cuda_context.h"
#include "gpu/cudnn_wrappers.h"
#include "gpu/math_gpu.h"
#include "gpu/pool_kernels.h"
#include "operators/nn/channel_block.h"
#include "operators/nn/conv_pool_op_base.h"
#include "operators/nn/pool_op.h"

namespace halfcaf {

namespace {

// The own kernels' shape: 1-D to 3-D, fewer dims padded with leading unit dims.
gpu::PoolShape ShapeOf(const ConvPoolGeometry& g, StorageOrder order, const std::string& label) {
  const int nd = g.num_spatial_dims();
  HALFCAF_ENFORCE(nd >= 1 && nd <= 3, label, ": CUDA pooling handles 1 to 3 spatial dims, got ",
                  nd, " (input spatial sizes ", DimsString(g.in), ")");
  const ConvPoolGeometry c = WithLeadingUnitDims(g, 3 - nd);
  gpu::PoolShape s;
  s.N = c.N;
  s.C = c.C;
  s.D = c.in[0];
  s.H = c.in[1];
  s.W = c.in[2];
  s.OD = c.out[0];
  s.OH = c.out[1];
  s.OW = c.out[2];
  s.kd = c.kernel[0];
  s.kh = c.kernel[1];
  s.kw = c.kernel[2];
  s.sd = c.stride[0];
  s.sh = c.stride[1];
  s.sw = c.stride[2];
  s.pd = c.pad_head(0);
  s.ph = c.pad_head(1);
  s.pw = c.pad_head(2);
  s.dd = c.dilation[0];
  s.dh = c.dilation[1];
  s.dw = c.dilation[2];
  s.nhwc = order == StorageOrder::NHWC;
  return s;
}

// cuDNN pools 4-D and 5-D tensors: a 1-D window runs as 2-D with a leading unit dim.
ConvPoolGeometry CudnnGeometry(const ConvPoolGeometry& g) {
  return g.num_spatial_dims() == 1 ? WithLeadingUnitDims(g, 1) : g;
}

std::vector<int64_t> Dims(int64_t n, int64_t c, const std::vector<int64_t>& spatial) {
  std::vector<int64_t> d{n, c};
  d.insert(d.end(), spatial.begin(), spatial.end());
  return d;
}

// Arguments, checks and the cuDNN descriptors shared by the forward and gradient ops.
template <PoolType kType, bool kCudnn>
class PoolCUDAOpBase : public ConvPoolOpBase<CUDAContext> {
 public:
  PoolCUDAOpBase(const OperatorDef& def, Workspace* ws)
      : ConvPoolOpBase(def, ws, ConvPoolKind::kPool) {
    CheckPoolLayout(cp_);
    RefuseChannelBlock(*this);
    // Global pooling takes its rank from X (checked at run time, in ShapeOf).
    const int nd = cp_.num_spatial_dims();
    HALFCAF_ENFORCE(cp_.global_pooling || (nd >= 1 && nd <= 3), cp_.op_label,
                    ": CUDA pooling handles 1-D to 3-D windows, got kernels ",
                    DimsString(cp_.kernel));
    if (kCudnn && cp_.legacy_pad == LegacyPadding::NOTSET) {
      for (int d = 0; d < nd; ++d) {
        if (cp_.pads[d] != cp_.pads[nd + d]) {
          HALFCAF_UNSUPPORTED(cp_.op_label, ": cuDNN pooling takes symmetric pads only, got pads ",
                              DimsString(cp_.pads), nd == 2 ? " (t, l, b, r)" : " (heads, tails)");
        }
      }
    }
  }

 protected:
  // Whether cuDNN computes exactly this geometry: no dilation (cuDNN has no dilated pooling),
  // symmetric pads and cuDNN's output size, on non-empty tensors.
  static bool CudnnFits(const ConvPoolGeometry& g) {
    const int nd = g.num_spatial_dims();
    if (!kCudnn || g.N == 0 || g.C == 0 || nd < 1 || nd > 3) return false;
    for (int d = 0; d < nd; ++d) {
      if (g.dilation[d] != 1) return false;
      if (g.pad_head(d) != g.pad_tail(d)) return false;
      if (g.in[d] + 2 * g.pad_head(d) < g.kernel[d]) return false;
      if (g.out[d] != (g.in[d] + 2 * g.pad_head(d) - g.kernel[d]) / g.stride[d] + 1) return false;
      if (g.out[d] <= 0) return false;
    }
    return true;
  }

  // Sets the descriptors for X of `x_dims` and `dtype` unless they already describe it.
  void SetDescriptors(const ConvPoolGeometry& g, const std::vector<int64_t>& x_dims,
                      DataType dtype) {
    std::vector<int64_t> key = x_dims;
    key.push_back(static_cast<int64_t>(dtype));
    if (key == desc_key_) return;
    desc_key_.clear();  // stays empty if a descriptor call throws
    const cudnnDataType_t type = CudnnDataType(dtype, "pooling input X");
    const cudnnTensorFormat_t format =
        cp_.order == StorageOrder::NCHW ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
    const ConvPoolGeometry c = CudnnGeometry(g);
    x_desc_.SetNd(format, type, Dims(c.N, c.C, c.in));
    y_desc_.SetNd(format, type, Dims(c.N, c.C, c.out));
    pool_desc_.SetNd(kType == PoolType::kMax ? CUDNN_POOLING_MAX_DETERMINISTIC
                                             : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
                     c.kernel, std::vector<int64_t>(c.pads.begin(), c.pads.begin() + c.in.size()),
                     c.stride, CUDNN_PROPAGATE_NAN);
    desc_key_ = key;
  }

  TensorDescriptor x_desc_, y_desc_;
  PoolingDescriptor pool_desc_;
  std::vector<int64_t> desc_key_;
};

template <PoolType kType, bool kCudnn>
class PoolCUDAOp final : public PoolCUDAOpBase<kType, kCudnn> {
 public:
  using Base = PoolCUDAOpBase<kType, kCudnn>;
  using Base::Base;

  void RunOnDevice() override {
    const Tensor& X = this->Input(0);
    EnforceFloatType(X, "pooling input X", true);
    if (X.dtype() == DataType::BFLOAT16) {
      EnforceBFloat16Device(this->context_.device_id(), this->cp_.op_label.c_str());
    }
    const ConvPoolGeometry g = this->Geometry(X.dims());
    Tensor* Y = this->Output(0, g.OutputDims(g.C, this->cp_.order));
    void* y = Y->raw_mutable_data(X.dtype());
    if (Y->numel() == 0) return;
    if (Base::CudnnFits(g)) {
      this->SetDescriptors(g, X.dims(), X.dtype());
      const float one = 1.f, zero = 0.f;
      HALFCAF_CUDNN_CHECK(cudnnPoolingForward(this->context_.cudnn_handle(), this->pool_desc_.get(),
                                              &one, this->x_desc_.get(), X.raw_data(), &zero,
                                              this->y_desc_.get(), y));
      return;
    }
    const gpu::PoolShape s = ShapeOf(g, this->cp_.order, this->cp_.op_label);
    cudaStream_t stream = this->context_.stream();
    if (X.dtype() == DataType::FLOAT) {
      Run(s, X.data<float>(), Y->mutable_data<float>(), stream);
    } else if (X.dtype() == DataType::BFLOAT16) {
      Run(s, X.data<BFloat16>(), Y->mutable_data<BFloat16>(), stream);
    } else {
      Run(s, X.data<Half>(), Y->mutable_data<Half>(), stream);
    }
  }

 private:
  template <typename T>
  static void Run(const gpu::PoolShape& s, const T* x, T* y, cudaStream_t stream) {
    if (kType == PoolType::kMax) {
      gpu::MaxPoolForward(s, x, y, stream);
    } else {
      gpu::AveragePoolForward(s, x, y, stream);
    }
  }
};

template <PoolType kType, bool kCudnn>
class PoolGradientCUDAOp final : public PoolCUDAOpBase<kType, kCudnn> {
 public:
  using Base = PoolCUDAOpBase<kType, kCudnn>;

  PoolGradientCUDAOp(const OperatorDef& def, Workspace* ws) : Base(def, ws) {
    argmax_.SetDevice(this->context_.device());
  }

  void RunOnDevice() override {
    const Tensor& X = this->Input(0);
    const Tensor& Yt = this->Input(1);
    const Tensor& dY = this->Input(2);
    EnforceFloatType(X, "pooling gradient input X", true);
    EnforceFloatType(Yt, "pooling gradient input Y", true);
    EnforceFloatType(dY, "pooling gradient input dY", true);
    const bool bf16 = X.dtype() == DataType::BFLOAT16;
    HALFCAF_ENFORCE(bf16 == (Yt.dtype() == DataType::BFLOAT16) &&
                        bf16 == (dY.dtype() == DataType::BFLOAT16),
                    this->cp_.op_label, " on CUDA takes bfloat16 X, Y and dY together, got X ",
                    X.DebugString(), ", Y ", Yt.DebugString(), " and dY ", dY.DebugString());
    if (bf16) EnforceBFloat16Device(this->context_.device_id(), this->cp_.op_label.c_str());
    const ConvPoolGeometry g = this->Geometry(X.dims());
    const std::vector<int64_t> y_dims = g.OutputDims(g.C, this->cp_.order);
    HALFCAF_ENFORCE(Yt.dims() == y_dims && dY.dims() == y_dims, this->cp_.op_label,
                    ": Y and dY must have the pooled shape ", DimsString(y_dims), " of X ",
                    DimsString(X.dims()), ", got Y ", DimsString(Yt.dims()), " and dY ",
                    DimsString(dY.dims()));
    Tensor* dX = this->Output(0, X.dims());
    void* dx = dX->raw_mutable_data(X.dtype());
    if (dX->numel() == 0) return;
    if (Base::CudnnFits(g) && Yt.dtype() == X.dtype() && dY.dtype() == X.dtype()) {
      this->SetDescriptors(g, X.dims(), X.dtype());
      const float one = 1.f, zero = 0.f;
      HALFCAF_CUDNN_CHECK(cudnnPoolingBackward(
          this->context_.cudnn_handle(), this->pool_desc_.get(), &one, this->y_desc_.get(),
          Yt.raw_data(), this->y_desc_.get(), dY.raw_data(), this->x_desc_.get(), X.raw_data(),
          &zero, this->x_desc_.get(), dx));
      return;
    }
    const gpu::PoolShape s = ShapeOf(g, this->cp_.order, this->cp_.op_label);
    const bool dy16 = dY.dtype() == DataType::FLOAT16;
    if (bf16) {
      Run(s, X.data<BFloat16>(), dY.data<BFloat16>(), dX->mutable_data<BFloat16>());
    } else if (X.dtype() == DataType::FLOAT) {
      dy16 ? Run(s, X.data<float>(), dY.data<Half>(), dX->mutable_data<float>())
           : Run(s, X.data<float>(), dY.data<float>(), dX->mutable_data<float>());
    } else {
      dy16 ? Run(s, X.data<Half>(), dY.data<Half>(), dX->mutable_data<Half>())
           : Run(s, X.data<Half>(), dY.data<float>(), dX->mutable_data<Half>());
    }
  }

 private:
  template <typename T, typename TD>
  void Run(const gpu::PoolShape& s, const T* x, const TD* dy, T* dx) {
    cudaStream_t stream = this->context_.stream();
    if (kType == PoolType::kMax) {
      argmax_.Resize({s.out_numel()});
      int32_t* argmax = argmax_.mutable_data<int32_t>();
      gpu::MaxPoolArgmax(s, x, argmax, stream);
      gpu::MaxPoolBackward(s, argmax, dy, dx, stream);
    } else {
      gpu::AveragePoolBackward(s, dy, dx, stream);
    }
  }

  Tensor argmax_;  // max pooling: first-maximum index of each window (scratch, kept)
};

using MaxPoolCUDAOp = PoolCUDAOp<PoolType::kMax, false>;
using AveragePoolCUDAOp = PoolCUDAOp<PoolType::kAverage, false>;
using MaxPoolGradientCUDAOp = PoolGradientCUDAOp<PoolType::kMax, false>;
using AveragePoolGradientCUDAOp = PoolGradientCUDAOp<PoolType::kAverage, false>;
using MaxPoolCudnnOp = PoolCUDAOp<PoolType::kMax, true>;
using AveragePoolCudnnOp = PoolCUDAOp<PoolType::kAverage, true>;
using MaxPoolGradientCudnnOp = PoolGradientCUDAOp<PoolType::kMax, true>;
using AveragePoolGradientCudnnOp = PoolGradientCUDAOp<PoolType::kAverage, true>;

}  // namespace

REGISTER_CUDA_OPERATOR(MaxPool, MaxPoolCUDAOp);
REGISTER_CUDA_OPERATOR(AveragePool, AveragePoolCUDAOp);
REGISTER_CUDA_OPERATOR(MaxPool1D, MaxPoolCUDAOp);
REGISTER_CUDA_OPERATOR(AveragePool1D, AveragePoolCUDAOp);
REGISTER_CUDA_OPERATOR(MaxPool2D, MaxPoolCUDAOp);
REGISTER_CUDA_OPERATOR(AveragePool2D, AveragePoolCUDAOp);
REGISTER_CUDA_OPERATOR(MaxPool3D, MaxPoolCUDAOp);
REGISTER_CUDA_OPERATOR(AveragePool3D, AveragePoolCUDAOp);
REGISTER_CUDA_OPERATOR(MaxPoolGradient, MaxPoolGradientCUDAOp);
REGISTER_CUDA_OPERATOR(AveragePoolGradient, AveragePoolGradientCUDAOp);
REGISTER_CUDA_OPERATOR(MaxPool1DGradient, MaxPoolGradientCUDAOp);
REGISTER_CUDA_OPERATOR(AveragePool1DGradient, AveragePoolGradientCUDAOp);
REGISTER_CUDA_OPERATOR(MaxPool2DGradient, MaxPoolGradientCUDAOp);
REGISTER_CUDA_OPERATOR(AveragePool2DGradient, AveragePoolGradientCUDAOp);
REGISTER_CUDA_OPERATOR(MaxPool3DGradient, MaxPoolGradientCUDAOp);
REGISTER_CUDA_OPERATOR(AveragePool3DGradient, AveragePoolGradientCUDAOp);
REGISTER_CUDNN_OPERATOR(MaxPool, MaxPoolCudnnOp);
REGISTER_CUDNN_OPERATOR(AveragePool, AveragePoolCudnnOp);
REGISTER_CUDNN_OPERATOR(MaxPool1D, MaxPoolCudnnOp);
REGISTER_CUDNN_OPERATOR(AveragePool1D, AveragePoolCudnnOp);
REGISTER_CUDNN_OPERATOR(MaxPool2D, MaxPoolCudnnOp);
REGISTER_CUDNN_OPERATOR(AveragePool2D, AveragePoolCudnnOp);
REGISTER_CUDNN_OPERATOR(MaxPool3D, MaxPoolCudnnOp);
REGISTER_CUDNN_OPERATOR(AveragePool3D, AveragePoolCudnnOp);
REGISTER_CUDNN_OPERATOR(MaxPoolGradient, MaxPoolGradientCudnnOp);
REGISTER_CUDNN_OPERATOR(AveragePoolGradient, AveragePoolGradientCudnnOp);
REGISTER_CUDNN_OPERATOR(MaxPool1DGradient, MaxPoolGradientCudnnOp);
REGISTER_CUDNN_OPERATOR(AveragePool1DGradient, AveragePoolGradientCudnnOp);
REGISTER_CUDNN_OPERATOR(MaxPool2DGradient, MaxPoolGradientCudnnOp);
REGISTER_CUDNN_OPERATOR(AveragePool2DGradient, AveragePoolGradientCudnnOp);
REGISTER_CUDNN_OPERATOR(MaxPool3DGradient, MaxPoolGradientCudnnOp);
REGISTER_CUDNN_OPERATOR(AveragePool3DGradient, AveragePoolGradientCudnnOp);

}  // namespace halfcaf
