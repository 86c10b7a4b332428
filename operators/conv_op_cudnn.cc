// Conv / Conv1D / Conv2D / Conv3D and their gradients on cuDNN (engine CUDNN, also the plain CUDA
// implementation). Same inputs, outputs, shapes and errors as the CPU operators in conv_op.cc
// (which hold the schemas and the gradient maker); float and float16 data, NCHW for 1-D to 3-D
// (1-D runs as 2-D with a unit leading dim: cuDNN convolves 4-D and 5-D tensors) and NHWC for
// 2-D, group, stride, dilation, symmetric pads, optional bias.
//
// Precision: accumulation is always FP32 (compute type CUDNN_DATA_FLOAT). With float16 data and
// enable_tensor_core=1 (default) the convolution descriptor allows CUDNN_TENSOR_OP_MATH (the chosen
// algorithm's own math type is then used); float data uses CUDNN_FMA_MATH, so FP32 really is FP32
// (no TF32); float16 with enable_tensor_core=0 uses CUDNN_DEFAULT_MATH and skips tensor-op
// algorithms, as Caffe2 does.
//
// cuDNN-only arguments (Caffe2's): exhaustive_search (0: heuristics, cudnnGet*_v7; 1: timed
// cudnnFind*Ex), deterministic (0), ws_nbytes_limit (64 MiB), force_algo ([fwd, dgrad, wgrad],
// -1 = choose) or force_algo_fwd / force_algo_dgrad / force_algo_wgrad, enable_tensor_core (1).
// The algorithms are chosen once per input shape and logged (LOG(INFO), "cuDNN conv algo: ...").
#include <glog/logging.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/float_io.h"
#include "gpu/cuda_context.h"
#include "gpu/cudnn_wrappers.h"
#include "gpu/math_gpu.h"
#include "operators/conv_op.h"
#include "operators/conv_pool_op_base.h"

namespace halfcaf {

namespace {

constexpr int64_t kDefaultWorkspaceLimit = 64 * 1024 * 1024;

const char* SearchName(bool exhaustive, bool forced) {
  return forced ? "forced" : exhaustive ? "exhaustive" : "heuristic";
}

// Arguments and descriptors shared by the forward and gradient ops.
class CudnnConvOpBase : public ConvPoolOpBase<CUDAContext> {
 public:
  CudnnConvOpBase(const OperatorDef& def, Workspace* ws)
      : ConvPoolOpBase(def, ws, ConvPoolKind::kConv),
        enable_tensor_core_(GetSingleArgument<int>("enable_tensor_core", 1) != 0),
        exhaustive_search_(GetSingleArgument<int>("exhaustive_search", 0) != 0),
        deterministic_(GetSingleArgument<int>("deterministic", 0) != 0),
        ws_limit_(GetSingleArgument<int64_t>("ws_nbytes_limit", kDefaultWorkspaceLimit)) {
    const int nd = cp_.num_spatial_dims();
    // This is the only CUDA convolution, so what it cannot run is an error, not a decline.
    HALFCAF_ENFORCE(nd >= 1 && nd <= 3, cp_.op_label,
                    ": the CUDA convolution handles 1-D to 3-D kernels, got kernels ",
                    DimsString(cp_.kernel));
    CheckConvLayout(cp_);
    if (cp_.legacy_pad == LegacyPadding::NOTSET) {
      for (int d = 0; d < nd; ++d) {
        if (cp_.pads[d] != cp_.pads[nd + d]) {
          HALFCAF_UNSUPPORTED(cp_.op_label, ": cuDNN takes symmetric pads only, got pads ",
                              DimsString(cp_.pads), nd == 2 ? " (t, l, b, r)" : " (heads, tails)");
        }
      }
    }
    HALFCAF_ENFORCE(ws_limit_ >= 0, cp_.op_label, ": ws_nbytes_limit must be >= 0, got ",
                    ws_limit_);
    HALFCAF_ENFORCE(!(deterministic_ && exhaustive_search_), cp_.op_label,
                    ": deterministic=1 cannot be combined with exhaustive_search=1");
    std::vector<int> force = GetRepeatedArgument<int>("force_algo", {-1, -1, -1});
    HALFCAF_ENFORCE(force.size() == 3, cp_.op_label,
                    ": force_algo takes 3 ints [fwd, dgrad, wgrad], got ", force.size());
    force_fwd_ = GetSingleArgument<int>("force_algo_fwd", force[0]);
    force_dgrad_ = GetSingleArgument<int>("force_algo_dgrad", force[1]);
    force_wgrad_ = GetSingleArgument<int>("force_algo_wgrad", force[2]);
    CheckForced("force_algo_fwd", force_fwd_, CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    CheckForced("force_algo_dgrad", force_dgrad_, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
    CheckForced("force_algo_wgrad", force_wgrad_, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
  }

 protected:
  // Validates X and the filter and computes the geometry. Returns the key of this shape (dims
  // and dtype) for the descriptor and algorithm caches.
  std::vector<int64_t> Prepare(const Tensor& X, const Tensor& W, const char* x_what,
                               const char* w_what, ConvPoolGeometry* g, int64_t* M) {
    EnforceFloatType(X, x_what);
    EnforceFloatType(W, w_what);
    HALFCAF_ENFORCE(X.dtype() == W.dtype(), cp_.op_label,
                    ": cuDNN needs X and the filter of one dtype (both float or both float16), "
                    "got X ",
                    X.DebugString(), " and filter ", W.DebugString());
    *g = Geometry(X.dims());
    *M = CheckConvFilter(cp_, *g, W.dims());
    for (int d = 0; d < g->num_spatial_dims(); ++d) {
      HALFCAF_ENFORCE(g->pad_head(d) == g->pad_tail(d), cp_.op_label,
                      ": cuDNN takes symmetric pads only, but legacy_pad ",
                      LegacyPaddingName(cp_.legacy_pad), " gives pads ", DimsString(g->pads),
                      " for X ", DimsString(X.dims()),
                      " (run the op on CPU or give explicit symmetric pads)");
    }
    std::vector<int64_t> key = X.dims();
    key.insert(key.end(), W.dims().begin(), W.dims().end());
    key.push_back(static_cast<int64_t>(X.dtype()));
    return key;
  }

  // Sets the descriptors for the shape `key` (from Prepare) unless they already describe it.
  // Only for non-empty tensors: cuDNN rejects zero-sized dims.
  void SetDescriptors(const std::vector<int64_t>& key, const ConvPoolGeometry& g, int64_t M,
                      DataType dtype) {
    if (key == desc_key_) return;
    desc_key_.clear();  // stays empty if a descriptor call below throws
    dtype_ = dtype;
    const cudnnDataType_t type = CudnnDataType(dtype);
    const cudnnTensorFormat_t format = Format();
    const ConvPoolGeometry c = CudnnGeometry(g);
    x_desc_.SetNd(format, type, Dims(g.N, g.C, c.in));
    const std::vector<int64_t> y_dims = Dims(g.N, M, c.out);
    y_desc_.SetNd(format, type, y_dims);
    bias_desc_.SetNd(format, type, BiasDims(M, c));
    w_desc_.SetNd(format, type, Dims(M, g.C / cp_.group, c.kernel));
    // FP32 accumulation for float and float16 data alike.
    const int nd = c.num_spatial_dims();
    conv_desc_.SetNd(std::vector<int64_t>(c.pads.begin(), c.pads.begin() + nd), c.stride,
                     c.dilation, CUDNN_DATA_FLOAT, cp_.group);
    conv_desc_.SetMathType(BaseMath());
    // cuDNN must see the output shape the CPU geometry gives (and Y was allocated with).
    std::vector<int> out(y_dims.size(), 0);
    if (nd == 2) {
      HALFCAF_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(
          conv_desc_.get(), x_desc_.get(), w_desc_.get(), &out[0], &out[1], &out[2], &out[3]));
    } else {
      HALFCAF_CUDNN_CHECK(cudnnGetConvolutionNdForwardOutputDim(
          conv_desc_.get(), x_desc_.get(), w_desc_.get(), static_cast<int>(out.size()),
          out.data()));
    }
    HALFCAF_ENFORCE(std::vector<int64_t>(out.begin(), out.end()) == y_dims, cp_.op_label,
                    ": cuDNN's output ", DimsString(std::vector<int64_t>(out.begin(), out.end())),
                    " differs from ", DimsString(y_dims), " (N, M, spatial...)");
    desc_key_ = key;
  }

  cudnnTensorFormat_t Format() const {
    return cp_.order == StorageOrder::NCHW ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
  }

  // cuDNN convolves 2-D and 3-D: a 1-D convolution runs as 2-D with a leading unit dim.
  static ConvPoolGeometry CudnnGeometry(const ConvPoolGeometry& g) {
    return g.num_spatial_dims() == 1 ? WithLeadingUnitDims(g, 1) : g;
  }
  // (a, b, spatial...), the dims order of every cuDNN descriptor here.
  static std::vector<int64_t> Dims(int64_t a, int64_t b, const std::vector<int64_t>& spatial) {
    std::vector<int64_t> d{a, b};
    d.insert(d.end(), spatial.begin(), spatial.end());
    return d;
  }
  // The bias as a (1, M, 1...) tensor of Y's rank.
  static std::vector<int64_t> BiasDims(int64_t M, const ConvPoolGeometry& c) {
    return Dims(1, M, std::vector<int64_t>(c.num_spatial_dims(), 1));
  }

  // The math type the descriptor starts from, before an algorithm is chosen: tensor ops for
  // float16 when enabled; FMA only (no TF32) for float; Caffe2's default math for float16 with
  // enable_tensor_core=0 (algorithms that report tensor-op math are skipped then).
  cudnnMathType_t BaseMath() const {
    if (dtype_ == DataType::FLOAT) return CUDNN_FMA_MATH;
    return enable_tensor_core_ ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH;
  }

  // The first acceptable result of a cuDNN algorithm query (results come best first): it
  // succeeded, fits the workspace limit, is deterministic when asked, and uses tensor cores only
  // when allowed. Returns the math type to run it with in *math, or nullptr when none fits.
  template <typename Perf>
  const Perf* Pick(const Perf* perf, int count, cudnnMathType_t* math) const {
    const bool tensor_ok = BaseMath() == CUDNN_TENSOR_OP_MATH;
    auto usable = [&](const Perf& p) {
      return p.status == CUDNN_STATUS_SUCCESS && p.memory <= static_cast<size_t>(ws_limit_) &&
             (!deterministic_ || p.determinism == CUDNN_DETERMINISTIC);
    };
    for (int i = 0; i < count; ++i) {
      const Perf& p = perf[i];
      if (!usable(p)) continue;
      const bool tensor =
          p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
      if (tensor && !tensor_ok) continue;
      if (p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;  // no down-conversion
      *math = tensor_ok ? p.mathType : BaseMath();
      return &p;
    }
    // Every fitting candidate was reported with tensor-op math while tensor cores are off (FP32,
    // or enable_tensor_core=0): run the fastest of them with the base math type (FMA for FP32:
    // no TF32), which the algorithms accept; the math type is logged with the choice.
    for (int i = 0; i < count; ++i) {
      if (!usable(perf[i]) || tensor_ok) continue;
      *math = BaseMath();
      return &perf[i];
    }
    return nullptr;
  }

  // Device scratch for cuDNN, shared by the convolutions on this op's stream.
  void* WorkspaceFor(size_t nbytes) { return CudnnWorkspace(&context_, nbytes); }

  std::string ShapeString(const Tensor& X, const Tensor& W) const {
    std::ostringstream ss;
    ss << cp_.op_label << " " << StorageOrderName(cp_.order) << " X " << X.DebugString()
       << " filter " << W.DebugString() << " group " << cp_.group;
    return ss.str();
  }

  bool enable_tensor_core_, exhaustive_search_, deterministic_;
  int64_t ws_limit_;
  int force_fwd_ = -1, force_dgrad_ = -1, force_wgrad_ = -1;
  DataType dtype_ = DataType::UNDEFINED;
  TensorDescriptor x_desc_, y_desc_, bias_desc_;
  FilterDescriptor w_desc_;
  ConvolutionDescriptor conv_desc_;
  std::vector<int64_t> desc_key_;

 private:
  void CheckForced(const char* name, int v, int count) const {
    HALFCAF_ENFORCE(v >= -1 && v < count, cp_.op_label, ": ", name, " must be -1 (choose) or a ",
                    "cuDNN algorithm id in [0, ", count - 1, "], got ", v);
  }
};

class CudnnConvOp final : public CudnnConvOpBase {
 public:
  using CudnnConvOpBase::CudnnConvOpBase;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& W = Input(1);
    ConvPoolGeometry g;
    int64_t M = 0;
    const std::vector<int64_t> key = Prepare(X, W, "Conv input X", "Conv filter", &g, &M);
    const Tensor* B = nullptr;
    if (InputSize() == 3) {
      B = &Input(2);
      EnforceFloatType(*B, "Conv bias");
      HALFCAF_ENFORCE(B->ndim() == 1 && B->dim(0) == M, cp_.op_label, ": bias must have dims [", M,
                      "] (one per output channel of filter ", DimsString(W.dims()), "), got ",
                      DimsString(B->dims()));
    }
    Tensor* Y = Output(0, g.OutputDims(M, cp_.order));
    void* y = Y->raw_mutable_data(X.dtype());
    if (Y->numel() == 0) return;
    if (X.numel() == 0) {  // no input channels: the convolution sums nothing
      SetZero(Y);
    } else {
      SetDescriptors(key, g, M, X.dtype());
      Forward(key, X, W, y);
    }
    if (B) AddBias(*B, g, M, Y);
  }

 private:
  struct Choice {
    cudnnConvolutionFwdAlgo_t algo;
    cudnnMathType_t math;
    size_t workspace;
  };

  void Forward(const std::vector<int64_t>& key, const Tensor& X, const Tensor& W, void* y) {
    auto it = algos_.find(key);
    if (it == algos_.end()) it = algos_.emplace(key, Choose(X, W, y)).first;
    const Choice& c = it->second;
    conv_desc_.SetMathType(c.math);
    void* ws = WorkspaceFor(c.workspace);
    const float one = 1.f, zero = 0.f;
    HALFCAF_CUDNN_CHECK(cudnnConvolutionForward(
        context_.cudnn_handle(), &one, x_desc_.get(), X.raw_data(), w_desc_.get(), W.raw_data(),
        conv_desc_.get(), c.algo, ws, c.workspace, &zero, y_desc_.get(), y));
  }

  Choice Choose(const Tensor& X, const Tensor& W, void* y) {
    cudnnHandle_t handle = context_.cudnn_handle();
    Choice c{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, BaseMath(), 0};
    conv_desc_.SetMathType(BaseMath());
    if (force_fwd_ >= 0) {
      c.algo = static_cast<cudnnConvolutionFwdAlgo_t>(force_fwd_);
    } else {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int n = 0;
      if (exhaustive_search_) {
        void* ws = WorkspaceFor(static_cast<size_t>(ws_limit_));
        HALFCAF_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
            handle, x_desc_.get(), X.raw_data(), w_desc_.get(), W.raw_data(), conv_desc_.get(),
            y_desc_.get(), y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf, ws,
            static_cast<size_t>(ws_limit_)));
      } else {
        HALFCAF_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
            handle, x_desc_.get(), w_desc_.get(), conv_desc_.get(), y_desc_.get(),
            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf));
      }
      const cudnnConvolutionFwdAlgoPerf_t* p = Pick(perf, n, &c.math);
      HALFCAF_ENFORCE(p != nullptr, ShapeString(X, W),
                      ": no cuDNN forward algorithm fits (ws_nbytes_limit ", ws_limit_,
                      deterministic_ ? ", deterministic" : "", ")");
      c.algo = p->algo;
    }
    conv_desc_.SetMathType(c.math);
    HALFCAF_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
        handle, x_desc_.get(), w_desc_.get(), conv_desc_.get(), y_desc_.get(), c.algo,
        &c.workspace));
    LOG(INFO) << "cuDNN conv algo: " << ShapeString(X, W) << " fwd " << CudnnFwdAlgoName(c.algo)
              << " math " << CudnnMathTypeName(c.math) << " workspace " << c.workspace << " bytes ("
              << SearchName(exhaustive_search_, force_fwd_ >= 0) << ")";
    return c;
  }

  void SetZero(Tensor* Y) {
    if (Y->dtype() == DataType::FLOAT) {
      gpu::Set(Y->numel(), 0.f, Y->mutable_data<float>(), context_.stream());
    } else {
      gpu::Set(Y->numel(), 0.f, Y->mutable_data<Half>(), context_.stream());
    }
  }

  // Y += bias per output channel (float or float16 bias on float or float16 Y).
  void AddBias(const Tensor& B, const ConvPoolGeometry& g, int64_t M, Tensor* Y) {
    const bool nchw = cp_.order == StorageOrder::NCHW;
    const int64_t P = g.out_size();
    const int64_t outer = nchw ? g.N : g.N * P, inner = nchw ? P : 1;
    cudaStream_t s = context_.stream();
    const bool b16 = B.dtype() == DataType::FLOAT16;
    if (Y->dtype() == DataType::FLOAT) {
      float* y = Y->mutable_data<float>();
      b16 ? gpu::ChannelBias(outer, M, inner, B.data<Half>(), y, true, s)
          : gpu::ChannelBias(outer, M, inner, B.data<float>(), y, true, s);
    } else {
      Half* y = Y->mutable_data<Half>();
      b16 ? gpu::ChannelBias(outer, M, inner, B.data<Half>(), y, true, s)
          : gpu::ChannelBias(outer, M, inner, B.data<float>(), y, true, s);
    }
  }

  std::map<std::vector<int64_t>, Choice> algos_;
};

class CudnnConvGradientOp final : public CudnnConvOpBase {
 public:
  CudnnConvGradientOp(const OperatorDef& def, Workspace* ws)
      : CudnnConvOpBase(def, ws), no_bias_(GetSingleArgument<int>("no_bias", 0) != 0) {
    if (no_bias_) {
      HALFCAF_ENFORCE(OutputSize() <= 2, cp_.op_label,
                      ": with no_bias=1 the outputs are (dfilter[, dX]), got ", OutputSize(),
                      " outputs");
    } else {
      HALFCAF_ENFORCE(OutputSize() >= 2, cp_.op_label,
                      ": without no_bias the outputs are (dfilter, dbias[, dX]), got ",
                      OutputSize(), " output(s); set no_bias=1 for a convolution without bias");
    }
    compute_dx_ = OutputSize() == (no_bias_ ? 2 : 3);
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& W = Input(1);
    const Tensor& dY = Input(2);
    ConvPoolGeometry g;
    int64_t M = 0;
    const std::vector<int64_t> key =
        Prepare(X, W, "ConvGradient input X", "ConvGradient filter", &g, &M);
    EnforceFloatType(dY, "ConvGradient dY");
    const std::vector<int64_t> y_dims = g.OutputDims(M, cp_.order);
    HALFCAF_ENFORCE(dY.dims() == y_dims, cp_.op_label, ": dY has dims ", DimsString(dY.dims()),
                    " but the convolution of X ", DimsString(X.dims()), " with filter ",
                    DimsString(W.dims()), " gives ", DimsString(y_dims));
    HALFCAF_ENFORCE(dY.dtype() == X.dtype(), cp_.op_label, ": cuDNN needs dY of X's dtype, got X ",
                    X.DebugString(), " and dY ", dY.DebugString());
    const DataType dt = X.dtype();
    Tensor* dW = Output(0, W.dims());
    void* dw = dW->raw_mutable_data(dt);
    Tensor* dB = no_bias_ ? nullptr : Output(1, {M});
    void* db = dB ? dB->raw_mutable_data(dt) : nullptr;
    Tensor* dX = compute_dx_ ? Output(no_bias_ ? 1 : 2, X.dims()) : nullptr;
    void* dx = dX ? dX->raw_mutable_data(dt) : nullptr;

    if (dY.numel() == 0 || X.numel() == 0) {
      // Empty batch, channels or image: the sums over X are zero. dbias only needs dY, which is
      // not empty when X has no channels (Y was the bias alone): sum it as on CPU.
      Zero(dW);
      if (dX) Zero(dX);
      if (dB && dY.numel() > 0) {
        BiasGradientOnly(g, M, dY, db);
      } else if (dB) {
        Zero(dB);
      }
      return;
    }
    SetDescriptors(key, g, M, dt);
    auto it = algos_.find(key);
    if (it == algos_.end()) it = algos_.emplace(key, Choose(X, W, dY, dw, dx)).first;
    const Choice& c = it->second;
    cudnnHandle_t handle = context_.cudnn_handle();
    const float one = 1.f, zero = 0.f;
    void* ws = WorkspaceFor(std::max(c.filter_ws, c.data_ws));

    conv_desc_.SetMathType(c.filter_math);
    HALFCAF_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        handle, &one, x_desc_.get(), X.raw_data(), y_desc_.get(), dY.raw_data(), conv_desc_.get(),
        c.filter_algo, ws, c.filter_ws, &zero, w_desc_.get(), dw));
    if (db) {
      HALFCAF_CUDNN_CHECK(cudnnConvolutionBackwardBias(handle, &one, y_desc_.get(), dY.raw_data(),
                                                       &zero, bias_desc_.get(), db));
    }
    if (dx) {
      conv_desc_.SetMathType(c.data_math);
      HALFCAF_CUDNN_CHECK(cudnnConvolutionBackwardData(
          handle, &one, w_desc_.get(), W.raw_data(), y_desc_.get(), dY.raw_data(), conv_desc_.get(),
          c.data_algo, ws, c.data_ws, &zero, x_desc_.get(), dx));
    }
  }

 private:
  struct Choice {
    cudnnConvolutionBwdFilterAlgo_t filter_algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
    cudnnMathType_t filter_math = CUDNN_DEFAULT_MATH;
    size_t filter_ws = 0;
    cudnnConvolutionBwdDataAlgo_t data_algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
    cudnnMathType_t data_math = CUDNN_DEFAULT_MATH;
    size_t data_ws = 0;
  };

  Choice Choose(const Tensor& X, const Tensor& W, const Tensor& dY, void* dw, void* dx) {
    cudnnHandle_t handle = context_.cudnn_handle();
    Choice c;
    const std::string shape = ShapeString(X, W);
    const size_t limit = static_cast<size_t>(ws_limit_);
    void* ws = exhaustive_search_ ? WorkspaceFor(limit) : nullptr;

    // dfilter
    c.filter_math = BaseMath();
    conv_desc_.SetMathType(BaseMath());
    if (force_wgrad_ >= 0) {
      c.filter_algo = static_cast<cudnnConvolutionBwdFilterAlgo_t>(force_wgrad_);
    } else {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      int n = 0;
      if (exhaustive_search_) {
        HALFCAF_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
            handle, x_desc_.get(), X.raw_data(), y_desc_.get(), dY.raw_data(), conv_desc_.get(),
            w_desc_.get(), dw, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf, ws, limit));
      } else {
        HALFCAF_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            handle, x_desc_.get(), y_desc_.get(), conv_desc_.get(), w_desc_.get(),
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf));
      }
      const cudnnConvolutionBwdFilterAlgoPerf_t* p = Pick(perf, n, &c.filter_math);
      HALFCAF_ENFORCE(p != nullptr, shape,
                      ": no cuDNN backward-filter algorithm fits (ws_nbytes_limit ", ws_limit_,
                      deterministic_ ? ", deterministic" : "", ")");
      c.filter_algo = p->algo;
    }
    conv_desc_.SetMathType(c.filter_math);
    HALFCAF_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        handle, x_desc_.get(), y_desc_.get(), conv_desc_.get(), w_desc_.get(), c.filter_algo,
        &c.filter_ws));
    LOG(INFO) << "cuDNN conv algo: " << shape << " bwd filter "
              << CudnnBwdFilterAlgoName(c.filter_algo) << " math "
              << CudnnMathTypeName(c.filter_math) << " workspace " << c.filter_ws << " bytes ("
              << SearchName(exhaustive_search_, force_wgrad_ >= 0) << ")";

    if (!dx) return c;
    // dX
    c.data_math = BaseMath();
    conv_desc_.SetMathType(BaseMath());
    if (force_dgrad_ >= 0) {
      c.data_algo = static_cast<cudnnConvolutionBwdDataAlgo_t>(force_dgrad_);
    } else {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      int n = 0;
      if (exhaustive_search_) {
        HALFCAF_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
            handle, w_desc_.get(), W.raw_data(), y_desc_.get(), dY.raw_data(), conv_desc_.get(),
            x_desc_.get(), dx, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf, ws, limit));
      } else {
        HALFCAF_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            handle, w_desc_.get(), y_desc_.get(), conv_desc_.get(), x_desc_.get(),
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf));
      }
      const cudnnConvolutionBwdDataAlgoPerf_t* p = Pick(perf, n, &c.data_math);
      HALFCAF_ENFORCE(p != nullptr, shape,
                      ": no cuDNN backward-data algorithm fits (ws_nbytes_limit ", ws_limit_,
                      deterministic_ ? ", deterministic" : "", ")");
      c.data_algo = p->algo;
    }
    conv_desc_.SetMathType(c.data_math);
    HALFCAF_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
        handle, w_desc_.get(), y_desc_.get(), conv_desc_.get(), x_desc_.get(), c.data_algo,
        &c.data_ws));
    LOG(INFO) << "cuDNN conv algo: " << shape << " bwd data " << CudnnBwdDataAlgoName(c.data_algo)
              << " math " << CudnnMathTypeName(c.data_math) << " workspace " << c.data_ws
              << " bytes (" << SearchName(exhaustive_search_, force_dgrad_ >= 0) << ")";
    return c;
  }

  // dbias = per-channel sums of dY, without the X / filter / convolution descriptors (cuDNN
  // rejects their zero-sized dims). Invalidates the cached descriptors.
  void BiasGradientOnly(const ConvPoolGeometry& g, int64_t M, const Tensor& dY, void* db) {
    desc_key_.clear();
    const cudnnDataType_t type = CudnnDataType(dY.dtype());
    const ConvPoolGeometry c = CudnnGeometry(g);
    y_desc_.SetNd(Format(), type, Dims(g.N, M, c.out));
    bias_desc_.SetNd(Format(), type, BiasDims(M, c));
    const float one = 1.f, zero = 0.f;
    HALFCAF_CUDNN_CHECK(cudnnConvolutionBackwardBias(context_.cudnn_handle(), &one, y_desc_.get(),
                                                     dY.raw_data(), &zero, bias_desc_.get(), db));
  }

  void Zero(Tensor* t) {
    if (t->dtype() == DataType::FLOAT) {
      gpu::Set(t->numel(), 0.f, t->mutable_data<float>(), context_.stream());
    } else {
      gpu::Set(t->numel(), 0.f, t->mutable_data<Half>(), context_.stream());
    }
  }

  bool no_bias_;
  bool compute_dx_ = false;
  std::map<std::vector<int64_t>, Choice> algos_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Conv, CudnnConvOp);
REGISTER_CUDA_OPERATOR(Conv1D, CudnnConvOp);
REGISTER_CUDA_OPERATOR(Conv2D, CudnnConvOp);
REGISTER_CUDA_OPERATOR(Conv3D, CudnnConvOp);
REGISTER_CUDA_OPERATOR(ConvGradient, CudnnConvGradientOp);
REGISTER_CUDA_OPERATOR(Conv1DGradient, CudnnConvGradientOp);
REGISTER_CUDA_OPERATOR(Conv2DGradient, CudnnConvGradientOp);
REGISTER_CUDA_OPERATOR(Conv3DGradient, CudnnConvGradientOp);
REGISTER_CUDNN_OPERATOR(Conv, CudnnConvOp);
REGISTER_CUDNN_OPERATOR(Conv1D, CudnnConvOp);
REGISTER_CUDNN_OPERATOR(Conv2D, CudnnConvOp);
REGISTER_CUDNN_OPERATOR(Conv3D, CudnnConvOp);
REGISTER_CUDNN_OPERATOR(ConvGradient, CudnnConvGradientOp);
REGISTER_CUDNN_OPERATOR(Conv1DGradient, CudnnConvGradientOp);
REGISTER_CUDNN_OPERATOR(Conv2DGradient, CudnnConvGradientOp);
REGISTER_CUDNN_OPERATOR(Conv3DGradient, CudnnConvGradientOp);

}  // namespace halfcaf
