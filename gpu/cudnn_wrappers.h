// cuDNN helpers: RAII descriptor wrappers (tensor, filter, convolution, pooling, activation), the
// cuDNN data type of a halfcaf element type, a per-stream workspace, the choice of a convolution
// algorithm among cuDNN's candidates, and names of cuDNN enums for logs and errors.
// Every cuDNN call here is checked and throws EnforceNotMet naming the call.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/bfloat16.h"
#include "core/half.h"
#include "core/types.h"
#include "gpu/cuda_check.h"

namespace halfcaf {

// float -> CUDNN_DATA_FLOAT, float16 -> CUDNN_DATA_HALF, bfloat16 -> CUDNN_DATA_BFLOAT16; anything
// else throws naming `what`.
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
template <>
struct CudnnTypeWrapper<BFloat16> {
  static constexpr cudnnDataType_t type = CUDNN_DATA_BFLOAT16;
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

// ---- convolution algorithm choice ---------------------------------------------------------------

// One result of a cuDNN convolution algorithm query (cudnnGet*Algorithm_v7 or cudnnFind*Ex), for
// any direction: the algorithm id as an int and the math type cuDNN reports for it.
struct CudnnAlgoPerf {
  int algo = 0;
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  size_t memory = 0;
  cudnnDeterminism_t determinism = CUDNN_NON_DETERMINISTIC;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

template <typename Perf>
std::vector<CudnnAlgoPerf> CudnnAlgoPerfs(const Perf* perf, int count) {
  std::vector<CudnnAlgoPerf> out;
  for (int i = 0; i < count; ++i) {
    out.push_back(CudnnAlgoPerf{static_cast<int>(perf[i].algo), perf[i].status, perf[i].memory,
                                perf[i].determinism, perf[i].mathType});
  }
  return out;
}

// What a convolution of one (data type, tensor-core setting) may run with:
// - float: CUDNN_FMA_MATH only. FP32 must be real FP32: CUDNN_DEFAULT_MATH lets cuDNN use TF32
//   tensor cores on Ampere and later, and tensor-op math is TF32 for float data.
// - float16 with tensor cores: CUDNN_TENSOR_OP_MATH, CUDNN_DEFAULT_MATH or CUDNN_FMA_MATH.
// - float16 without (enable_tensor_core=0): CUDNN_DEFAULT_MATH or CUDNN_FMA_MATH.
// - bfloat16: as float16 (its tensor ops need compute capability 8.0, checked by the operators).
// CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION (down-conversion of the data) never.
bool CudnnMathAllowed(cudnnDataType_t data, bool tensor_cores, cudnnMathType_t math);
// The math type the convolution descriptor carries for the algorithm query (so that cuDNN offers
// the algorithms of that math): CUDNN_FMA_MATH for float, CUDNN_TENSOR_OP_MATH for float16 and
// bfloat16 with tensor cores, CUDNN_DEFAULT_MATH (Caffe2's) for them without.
cudnnMathType_t CudnnQueryMath(cudnnDataType_t data, bool tensor_cores);

struct CudnnAlgoRules {
  cudnnDataType_t data = CUDNN_DATA_FLOAT;
  bool tensor_cores = true;
  bool deterministic = false;
  size_t workspace_limit = 0;
  int forced_algo = -1;  // >= 0: only this algorithm (force_algo*)
};

struct CudnnAlgoChoice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;  // as cuDNN reported it for `algo`
  size_t workspace = 0;
};

// Asks cuDNN for the workspace of `algo` with the convolution descriptor set to `math`; returns
// the status of cudnnSetConvolutionMathType or of the workspace query (not throwing).
using CudnnWorkspaceQuery =
    std::function<cudnnStatus_t(int algo, cudnnMathType_t math, size_t* bytes)>;

// Tries the candidates in cuDNN's order (best first) and keeps the first one that succeeded, is
// the forced algorithm when one is forced, is deterministic when asked, was reported with a math
// type the rules allow, and whose workspace query under that same math type succeeds (not
// CUDNN_STATUS_NOT_SUPPORTED: some algorithms do not support every dtype, layout, group count or
// math type) within the workspace limit. The algorithm then runs with exactly the math type cuDNN
// reported for it. Throws naming `what` and listing every candidate and why it was passed over
// when none fits; `algo_name` names algorithm ids.
CudnnAlgoChoice PickCudnnAlgo(const std::vector<CudnnAlgoPerf>& candidates,
                              const CudnnAlgoRules& rules, const CudnnWorkspaceQuery& workspace,
                              const std::string& what,
                              const std::function<const char*(int)>& algo_name);

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
