#include "gpu/cudnn_wrappers.h"

#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "gpu/cuda_context.h"

namespace halfcaf {

cudnnDataType_t CudnnDataType(DataType t, const char* what) {
  switch (t) {
    case DataType::FLOAT: return CUDNN_DATA_FLOAT;
    case DataType::FLOAT16: return CUDNN_DATA_HALF;
    case DataType::BFLOAT16: return CUDNN_DATA_BFLOAT16;
    default: break;
  }
  HALFCAF_THROW(what, " has data type ", DataTypeName(t),
                "; cuDNN operators take float, float16 or bfloat16");
}

const char* CudnnDataTypeName(cudnnDataType_t t) {
  switch (t) {
    case CUDNN_DATA_FLOAT: return "float";
    case CUDNN_DATA_HALF: return "float16";
    case CUDNN_DATA_BFLOAT16: return "bfloat16";
    case CUDNN_DATA_DOUBLE: return "double";
    default: return "other";
  }
}

const char* CudnnMathTypeName(cudnnMathType_t t) {
  switch (t) {
    case CUDNN_DEFAULT_MATH: return "CUDNN_DEFAULT_MATH";
    case CUDNN_TENSOR_OP_MATH: return "CUDNN_TENSOR_OP_MATH";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION";
    case CUDNN_FMA_MATH: return "CUDNN_FMA_MATH";
  }
  return "unknown math type";
}

const char* CudnnFwdAlgoName(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "unknown forward algorithm";
  }
}

const char* CudnnBwdDataAlgoName(cudnnConvolutionBwdDataAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "unknown backward-data algorithm";
  }
}

const char* CudnnBwdFilterAlgoName(cudnnConvolutionBwdFilterAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return "ALGO_3";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return "FFT_TILING";
    default: return "unknown backward-filter algorithm";
  }
}

bool CudnnMathAllowed(cudnnDataType_t data, bool tensor_cores, cudnnMathType_t math) {
  const bool sixteen = data == CUDNN_DATA_HALF || data == CUDNN_DATA_BFLOAT16;
  switch (math) {
    case CUDNN_FMA_MATH: return true;
    case CUDNN_DEFAULT_MATH: return sixteen;
    case CUDNN_TENSOR_OP_MATH: return sixteen && tensor_cores;
    default: return false;  // CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION and anything newer
  }
}

cudnnMathType_t CudnnQueryMath(cudnnDataType_t data, bool tensor_cores) {
  if (data != CUDNN_DATA_HALF && data != CUDNN_DATA_BFLOAT16) return CUDNN_FMA_MATH;
  return tensor_cores ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH;
}

CudnnAlgoChoice PickCudnnAlgo(const std::vector<CudnnAlgoPerf>& candidates,
                              const CudnnAlgoRules& rules, const CudnnWorkspaceQuery& workspace,
                              const std::string& what,
                              const std::function<const char*(int)>& algo_name) {
  std::ostringstream passed;  // why each candidate was passed over
  for (const CudnnAlgoPerf& p : candidates) {
    if (rules.forced_algo >= 0 && p.algo != rules.forced_algo) continue;
    passed << "\n  " << algo_name(p.algo) << " (" << CudnnMathTypeName(p.math) << "): ";
    if (p.status != CUDNN_STATUS_SUCCESS) {
      passed << cudnnGetErrorString(p.status);
      continue;
    }
    if (rules.deterministic && p.determinism != CUDNN_DETERMINISTIC) {
      passed << "not deterministic";
      continue;
    }
    if (!CudnnMathAllowed(rules.data, rules.tensor_cores, p.math)) {
      passed << "math type not allowed for " << CudnnDataTypeName(rules.data)
             << (rules.tensor_cores ? "" : " without tensor cores");
      continue;
    }
    size_t bytes = 0;
    const cudnnStatus_t st = workspace(p.algo, p.math, &bytes);
    if (st != CUDNN_STATUS_SUCCESS) {
      passed << "workspace query: " << cudnnGetErrorString(st);
      continue;
    }
    if (bytes > rules.workspace_limit) {
      passed << "workspace " << bytes << " bytes over ws_nbytes_limit " << rules.workspace_limit;
      continue;
    }
    return CudnnAlgoChoice{p.algo, p.math, bytes};
  }
  HALFCAF_THROW(what, ": no cuDNN algorithm fits",
                rules.forced_algo >= 0
                    ? MakeString(" (forced algorithm ", algo_name(rules.forced_algo), ")")
                    : std::string(),
                " among ", candidates.size(), " candidates:", passed.str());
}

void* CudnnWorkspace(CUDAContext* ctx, size_t nbytes) {
  if (nbytes == 0) return nullptr;
  static std::mutex mu;
  static auto* buffers = new std::map<std::pair<int, cudaStream_t>, Tensor>();  // never destroyed
  std::lock_guard<std::mutex> lk(mu);
  Tensor& t = (*buffers)[{ctx->device_id(), ctx->stream()}];
  if (t.nbytes() < nbytes) {
    // The old buffer goes back to the allocator's cache of this stream, whose later kernels run
    // after the queued ones that still use it; waiting here as well keeps a grown buffer from
    // ever overlapping in time with the old one (growth is rare: the first runs only).
    if (t.numel() > 0) ctx->FinishDevice();
    t.Reset();
    t.SetDevice(ctx->device());
    t.Resize({static_cast<int64_t>(nbytes)});
  }
  return t.mutable_data<uint8_t>();
}

int CudnnDim(int64_t v, const char* what) {
  HALFCAF_ENFORCE(v >= 0 && v <= std::numeric_limits<int>::max(), what, " = ", v,
                  " does not fit the 32-bit int cuDNN takes");
  return static_cast<int>(v);
}

void TensorDescriptor::Set4d(cudnnTensorFormat_t format, cudnnDataType_t type, int64_t n, int64_t c,
                             int64_t h, int64_t w) {
  HALFCAF_CUDNN_CHECK(cudnnSetTensor4dDescriptor(
      get(), format, type, CudnnDim(n, "N"), CudnnDim(c, "C"), CudnnDim(h, "H"), CudnnDim(w, "W")));
}

namespace {

// cuDNN's int dims, each checked; `what` names the array in errors.
std::vector<int> CudnnDims(const std::vector<int64_t>& v, const char* what) {
  std::vector<int> out;
  out.reserve(v.size());
  for (int64_t x : v) out.push_back(CudnnDim(x, what));
  return out;
}

void CheckNdRank(size_t rank, const char* what) {
  HALFCAF_ENFORCE(rank >= 4 && rank <= CUDNN_DIM_MAX, what, " needs 4 to ", CUDNN_DIM_MAX,
                  " dims for cuDNN, got ", rank);
}

}  // namespace

void TensorDescriptor::SetNd(cudnnTensorFormat_t format, cudnnDataType_t type,
                             const std::vector<int64_t>& dims) {
  CheckNdRank(dims.size(), "tensor descriptor");
  if (dims.size() == 4) return Set4d(format, type, dims[0], dims[1], dims[2], dims[3]);
  const std::vector<int> d = CudnnDims(dims, "tensor dim");
  HALFCAF_CUDNN_CHECK(
      cudnnSetTensorNdDescriptorEx(get(), format, type, static_cast<int>(d.size()), d.data()));
}

void FilterDescriptor::SetNd(cudnnTensorFormat_t format, cudnnDataType_t type,
                             const std::vector<int64_t>& dims) {
  CheckNdRank(dims.size(), "filter descriptor");
  if (dims.size() == 4) return Set4d(format, type, dims[0], dims[1], dims[2], dims[3]);
  const std::vector<int> d = CudnnDims(dims, "filter dim");
  HALFCAF_CUDNN_CHECK(
      cudnnSetFilterNdDescriptor(get(), type, format, static_cast<int>(d.size()), d.data()));
}

void FilterDescriptor::Set4d(cudnnTensorFormat_t format, cudnnDataType_t type, int64_t k, int64_t c,
                             int64_t h, int64_t w) {
  HALFCAF_CUDNN_CHECK(cudnnSetFilter4dDescriptor(get(), type, format, CudnnDim(k, "filter K"),
                                                 CudnnDim(c, "filter C"), CudnnDim(h, "filter H"),
                                                 CudnnDim(w, "filter W")));
}

void ConvolutionDescriptor::Set2d(int64_t pad_h, int64_t pad_w, int64_t stride_h, int64_t stride_w,
                                  int64_t dilation_h, int64_t dilation_w,
                                  cudnnDataType_t compute_type, int group) {
  HALFCAF_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      get(), CudnnDim(pad_h, "pad_h"), CudnnDim(pad_w, "pad_w"), CudnnDim(stride_h, "stride_h"),
      CudnnDim(stride_w, "stride_w"), CudnnDim(dilation_h, "dilation_h"),
      CudnnDim(dilation_w, "dilation_w"), CUDNN_CROSS_CORRELATION, compute_type));
  HALFCAF_CUDNN_CHECK(cudnnSetConvolutionGroupCount(get(), group));
}

void ConvolutionDescriptor::SetNd(const std::vector<int64_t>& pads,
                                  const std::vector<int64_t>& strides,
                                  const std::vector<int64_t>& dilations,
                                  cudnnDataType_t compute_type, int group) {
  const size_t nd = pads.size();
  HALFCAF_ENFORCE(strides.size() == nd && dilations.size() == nd && nd >= 2 &&
                      nd + 2 <= CUDNN_DIM_MAX,
                  "convolution descriptor: pads, strides and dilations need one entry per spatial "
                  "dim (2 to ", CUDNN_DIM_MAX - 2, "), got ", nd, ", ", strides.size(), ", ",
                  dilations.size());
  if (nd == 2) {
    return Set2d(pads[0], pads[1], strides[0], strides[1], dilations[0], dilations[1],
                 compute_type, group);
  }
  const std::vector<int> p = CudnnDims(pads, "pad"), s = CudnnDims(strides, "stride"),
                         d = CudnnDims(dilations, "dilation");
  HALFCAF_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(get(), static_cast<int>(nd), p.data(),
                                                      s.data(), d.data(), CUDNN_CROSS_CORRELATION,
                                                      compute_type));
  HALFCAF_CUDNN_CHECK(cudnnSetConvolutionGroupCount(get(), group));
}

void ConvolutionDescriptor::SetMathType(cudnnMathType_t math) {
  HALFCAF_CUDNN_CHECK(cudnnSetConvolutionMathType(get(), math));
}

cudnnMathType_t ConvolutionDescriptor::math_type() const {
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  HALFCAF_CUDNN_CHECK(cudnnGetConvolutionMathType(get(), &math));
  return math;
}

void PoolingDescriptor::Set2d(cudnnPoolingMode_t mode, int64_t window_h, int64_t window_w,
                              int64_t pad_h, int64_t pad_w, int64_t stride_h, int64_t stride_w,
                              cudnnNanPropagation_t nan) {
  HALFCAF_CUDNN_CHECK(cudnnSetPooling2dDescriptor(
      get(), mode, nan, CudnnDim(window_h, "window_h"), CudnnDim(window_w, "window_w"),
      CudnnDim(pad_h, "pad_h"), CudnnDim(pad_w, "pad_w"), CudnnDim(stride_h, "stride_h"),
      CudnnDim(stride_w, "stride_w")));
}

void PoolingDescriptor::SetNd(cudnnPoolingMode_t mode, const std::vector<int64_t>& window,
                              const std::vector<int64_t>& pads,
                              const std::vector<int64_t>& strides, cudnnNanPropagation_t nan) {
  const size_t nd = window.size();
  HALFCAF_ENFORCE(pads.size() == nd && strides.size() == nd && nd >= 2 && nd + 2 <= CUDNN_DIM_MAX,
                  "pooling descriptor: window, pads and strides need one entry per spatial dim "
                  "(2 to ", CUDNN_DIM_MAX - 2, "), got ", nd, ", ", pads.size(), ", ",
                  strides.size());
  if (nd == 2) return Set2d(mode, window[0], window[1], pads[0], pads[1], strides[0], strides[1], nan);
  const std::vector<int> w = CudnnDims(window, "window"), p = CudnnDims(pads, "pad"),
                         s = CudnnDims(strides, "stride");
  HALFCAF_CUDNN_CHECK(cudnnSetPoolingNdDescriptor(get(), mode, nan, static_cast<int>(nd), w.data(),
                                                  p.data(), s.data()));
}

void ActivationDescriptor::Set(cudnnActivationMode_t mode, double coef, cudnnNanPropagation_t nan) {
  HALFCAF_CUDNN_CHECK(cudnnSetActivationDescriptor(get(), mode, nan, coef));
}

}  // namespace halfcaf
