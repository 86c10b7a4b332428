// cuDNN helpers: RAII descriptor wrappers (tensor, filter, convolution, pooling, activation), the
// cuDNN data type of a halfcaf element type, a per-stream workspace, and names of cuDNN enums for
// logs and errors.
// Every cuDNN call here is checked and throws EnforceNotMet naming the call.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "core/types.h"
#include "gpu/cuda_check.h"

namespace halfcaf {

// float -> CUDNN_DATA_FLOAT, float16 -> CUDNN_DATA_HALF; anything else throws naming `what`.
cudnnDataType_t CudnnDataType(DataType t, const char* what = "tensor");

template <typename T>
struct CudnnTypeWrapper;
template <>
struct CudnnTypeWrapper<float> {
  static constexpr cudnnDataType_t type = CUDNN_DATA_FLOAT;
};
template <>
struct CudnnTypeWrapper<Half> {
  static constexpr cudnnDataType_t type = CUDNN_DATA_HALF;
};

const char* CudnnDataTypeName(cudnnDataType_t t);
const char* CudnnMathTypeName(cudnnMathType_t t);
const char* CudnnFwdAlgoName(cudnnConvolutionFwdAlgo_t a);
const char* CudnnBwdDataAlgoName(cudnnConvolutionBwdDataAlgo_t a);
const char* CudnnBwdFilterAlgoName(cudnnConvolutionBwdFilterAlgo_t a);

class CUDAContext;

// Device scratch memory for cuDNN calls on ctx's (device, stream): one buffer per stream from the
// caching allocator, grown when a call needs more (waiting for the stream first, so no queued
// kernel still uses the old one) and kept for later calls. Valid until the next call for the same
// stream; nullptr for 0 bytes.
void* CudnnWorkspace(CUDAContext* ctx, size_t nbytes);

// Narrows a dimension to the int cuDNN takes; throws naming `what` when it does not fit.
int CudnnDim(int64_t v, const char* what);

namespace detail {
// Owns one cuDNN descriptor: created in the constructor, destroyed in the destructor; not
// copyable, movable.
template <typename H, cudnnStatus_t (*kCreate)(H*), cudnnStatus_t (*kDestroy)(H)>
class CudnnDescriptor {
 public:
  CudnnDescriptor() { HALFCAF_CUDNN_CHECK(kCreate(&desc_)); }
  ~CudnnDescriptor() {
    if (desc_) (void)kDestroy(desc_);
  }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  CudnnDescriptor(CudnnDescriptor&& o) noexcept : desc_(o.desc_) { o.desc_ = nullptr; }
  CudnnDescriptor& operator=(CudnnDescriptor&& o) noexcept {
    std::swap(desc_, o.desc_);
    return *this;
  }
  H get() const { return desc_; }

 private:
  H desc_ = nullptr;
};
}  // namespace detail

// A 4-D tensor in NCHW or NHWC layout (fully packed). Dims are always given as (n, c, h, w).
class TensorDescriptor
    : public detail::CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                                     cudnnDestroyTensorDescriptor> {
 public:
  TensorDescriptor() = default;
  void Set4d(cudnnTensorFormat_t format, cudnnDataType_t type, int64_t n, int64_t c, int64_t h,
             int64_t w);
  // A fully packed tensor of dims (n, c, spatial...) (4 to CUDNN_DIM_MAX entries; 4 uses Set4d),
  // NCHW-style (channels second) or NHWC-style (channels last) in memory.
  void SetNd(cudnnTensorFormat_t format, cudnnDataType_t type, const std::vector<int64_t>& dims);
};

// Filter (k output channels, c input channels per group, h, w); NCHW means (k, c, h, w) in
// memory, NHWC means (k, h, w, c).
class FilterDescriptor
    : public detail::CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
                                     cudnnDestroyFilterDescriptor> {
 public:
  FilterDescriptor() = default;
  void Set4d(cudnnTensorFormat_t format, cudnnDataType_t type, int64_t k, int64_t c, int64_t h,
             int64_t w);
  // Dims (k, c, spatial...) (4 to CUDNN_DIM_MAX entries; 4 uses Set4d).
  void SetNd(cudnnTensorFormat_t format, cudnnDataType_t type, const std::vector<int64_t>& dims);
};

// Cross-correlation (what deep-learning frameworks call convolution) with symmetric pads, over
// 2 (Set2d) or more (SetNd: one pad / stride / dilation per spatial dim) spatial dims.
class ConvolutionDescriptor
    : public detail::CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                                     cudnnDestroyConvolutionDescriptor> {
 public:
  ConvolutionDescriptor() = default;
  void Set2d(int64_t pad_h, int64_t pad_w, int64_t stride_h, int64_t stride_w, int64_t dilation_h,
             int64_t dilation_w, cudnnDataType_t compute_type, int group);
  // 2 spatial dims use Set2d.
  void SetNd(const std::vector<int64_t>& pads, const std::vector<int64_t>& strides,
             const std::vector<int64_t>& dilations, cudnnDataType_t compute_type, int group);
  void SetMathType(cudnnMathType_t math);
  cudnnMathType_t math_type() const;
};

class PoolingDescriptor
    : public detail::CudnnDescriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor,
                                     cudnnDestroyPoolingDescriptor> {
 public:
  PoolingDescriptor() = default;
  void Set2d(cudnnPoolingMode_t mode, int64_t window_h, int64_t window_w, int64_t pad_h,
             int64_t pad_w, int64_t stride_h, int64_t stride_w,
             cudnnNanPropagation_t nan = CUDNN_PROPAGATE_NAN);
  // One window / pad / stride entry per spatial dim (2 uses Set2d).
  void SetNd(cudnnPoolingMode_t mode, const std::vector<int64_t>& window,
             const std::vector<int64_t>& pads, const std::vector<int64_t>& strides,
             cudnnNanPropagation_t nan = CUDNN_PROPAGATE_NAN);
};

class ActivationDescriptor
    : public detail::CudnnDescriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
                                     cudnnDestroyActivationDescriptor> {
 public:
  ActivationDescriptor() = default;
  void Set(cudnnActivationMode_t mode, double coef = 0.0,
           cudnnNanPropagation_t nan = CUDNN_PROPAGATE_NAN);
};

}  // namespace halfcaf
