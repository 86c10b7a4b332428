// Conv / Conv1D / Conv2D / Conv3D and their gradients on cuDNN (engine CUDNN, also the plain CUDA
// implementation). Same inputs, outputs, shapes and errors as the CPU operators in conv_op.cc
// (which hold the schemas and the gradient maker); float, float16 and bfloat16 data (bfloat16 on
// compute capability 8.0 or newer), NCHW for 1-D to 3-D
// (1-D runs as 2-D with a unit leading dim: cuDNN convolves 4-D and 5-D tensors) and NHWC for
// 2-D, group, stride, dilation, symmetric pads, optional bias.
//
// Precision: accumulation is always FP32 (compute type CUDNN_DATA_FLOAT). cuDNN is asked for
// candidates with the descriptor's math type set to CUDNN_TENSOR_OP_MATH for float16 and bfloat16
// with enable_tensor_core=1 (default), CUDNN_FMA_MATH for float (FP32 really is FP32: no TF32) and
// CUDNN_DEFAULT_MATH for 16-bit data with enable_tensor_core=0 (Caffe2's). The candidates are tried in
// cuDNN's order and the first one that succeeds for this shape, dtype, layout and group count
// under a math type allowed here is kept (PickCudnnAlgo in gpu/cudnn_wrappers.h: float only
// CUDNN_FMA_MATH, float16 without tensor cores never tensor-op math); it always runs with the math
// type cuDNN reported for it.
//
// cuDNN-only arguments (Caffe2's): exhaustive_search (0: heuristics, cudnnGet*_v7; 1: timed
// cudnnFind*Ex within ws_nbytes_limit), deterministic (0), ws_nbytes_limit (64 MiB), force_algo
// ([fwd, dgrad, wgrad], -1 = choose) or force_algo_fwd / force_algo_dgrad / force_algo_wgrad,
// enable_tensor_core (1). The algorithms are chosen once per input shape and logged (LOG(INFO),
// "cuDNN conv algo: <shape> fwd|bwd filter|bwd data <algo> math <the math type cuDNN reported
// for it> workspace <bytes> bytes (heuristic|exhaustive|forced)").
#include <glog/logging.h>

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/float_io.h"
#include "gpu/cuda_context.h"
#include "gpu/cudnn_wrappers.h"
#include "gpu/math_gpu.h"
#include "operators/nn/channel_block.h"
#include "operators/nn/conv_op.h"
#include "operators/nn/conv_pool_op_base.h"

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
    RefuseChannelBlock(*this);
    HALFCAF_ENFORCE(cp_.filter_order == cp_.order, cp_.op_label, ": filter_order ",
                    StorageOrderName(cp_.filter_order), " with order ", StorageOrderName(cp_.order),
                    " runs on the CPU only; on CUDA the filter is in the convolution's order");
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
  // Zeros in t's dtype (float, float16 and bfloat16 zero are all-zero bits).
  void ZeroTensor(Tensor* t) {
    if (t->numel() == 0) return;
    HALFCAF_CUDA_CHECK(cudaMemsetAsync(t->raw_mutable_data(), 0, t->nbytes(), context_.stream()));
  }

  // Validates X and the filter and computes the geometry. Returns the key of this shape (dims
  // and dtype) for the descriptor and algorithm caches.
  std::vector<int64_t> Prepare(const Tensor& X, const Tensor& W, const char* x_what,
                               const char* w_what, ConvPoolGeometry* g, int64_t* M) {
    EnforceFloatType(X, x_what, true);
    EnforceFloatType(W, w_what, true);
    HALFCAF_ENFORCE(X.dtype() == W.dtype(), cp_.op_label,
                    ": cuDNN needs X and the filter of one dtype (float, float16 or bfloat16), "
                    "got X ",
                    X.DebugString(), " and filter ", W.DebugString());
    if (X.dtype() == DataType::BFLOAT16) EnforceBFloat16Device(context_.device_id(), cp_.op_label.c_str());
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
    conv_desc_.SetMathType(QueryMath());
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

  // The math type the descriptor carries while cuDNN is asked for candidates.
  cudnnMathType_t QueryMath() const {
    return CudnnQueryMath(CudnnDataType(dtype_), enable_tensor_core_);
  }

  // Chooses the algorithm of one direction (`dir`: "fwd", "bwd filter", "bwd data") for this
  // shape and logs the choice with the math type cuDNN reported for it, which it then runs with.
  // The candidates (best first) come from `find(count, &n, perf, workspace, limit)`, the
  // direction's timed cudnnFind*Ex (exhaustive_search=1 and no forced algorithm), or else from
  // `get(count, &n, perf)`, its cudnnGet*_v7 heuristics, both asked with the descriptor at
  // QueryMath(); `ws_size(algo, &bytes)` is its workspace query; `name` names algorithm ids.
  template <typename Perf, int kCount, typename Find, typename Get, typename WsSize>
  CudnnAlgoChoice ChooseAlgo(const char* dir, int forced, Find find, Get get, WsSize ws_size,
                             const std::function<const char*(int)>& name,
                             const std::string& shape) {
    conv_desc_.SetMathType(QueryMath());
    Perf perf[kCount];
    int n = 0;
    const bool search = exhaustive_search_ && forced < 0;
    if (search) {
      const size_t limit = static_cast<size_t>(ws_limit_);
      find(kCount, &n, perf, WorkspaceFor(limit), limit);
    } else {
      get(kCount, &n, perf);
    }
    auto query = [&](int algo, cudnnMathType_t math, size_t* bytes) {
      const cudnnStatus_t st = cudnnSetConvolutionMathType(conv_desc_.get(), math);
      return st != CUDNN_STATUS_SUCCESS ? st : ws_size(algo, bytes);
    };
    CudnnAlgoRules rules;
    rules.data = CudnnDataType(dtype_);
    rules.tensor_cores = enable_tensor_core_;
    rules.deterministic = deterministic_;
    rules.workspace_limit = static_cast<size_t>(ws_limit_);
    rules.forced_algo = forced;
    const CudnnAlgoChoice c =
        PickCudnnAlgo(CudnnAlgoPerfs(perf, n), rules, query, shape + " " + dir, name);
    LOG(INFO) << "cuDNN conv algo: " << shape << " " << dir << " " << name(c.algo) << " math "
              << CudnnMathTypeName(c.math) << " workspace " << c.workspace << " bytes ("
              << SearchName(search, forced >= 0) << ")";
    return c;
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
      EnforceFloatType(*B, "Conv bias", true);
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
  void Forward(const std::vector<int64_t>& key, const Tensor& X, const Tensor& W, void* y) {
    auto it = algos_.find(key);
    if (it == algos_.end()) it = algos_.emplace(key, Choose(X, W, y)).first;
    const CudnnAlgoChoice& c = it->second;
    conv_desc_.SetMathType(c.math);
    void* ws = WorkspaceFor(c.workspace);
    const float one = 1.f, zero = 0.f;
    HALFCAF_CUDNN_CHECK(cudnnConvolutionForward(
        context_.cudnn_handle(), &one, x_desc_.get(), X.raw_data(), w_desc_.get(), W.raw_data(),
        conv_desc_.get(), static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), ws, c.workspace, &zero,
        y_desc_.get(), y));
  }

  CudnnAlgoChoice Choose(const Tensor& X, const Tensor& W, void* y) {
    cudnnHandle_t h = context_.cudnn_handle();
    auto find = [&](int count, int* n, cudnnConvolutionFwdAlgoPerf_t* perf, void* ws,
                    size_t limit) {
      HALFCAF_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
          h, x_desc_.get(), X.raw_data(), w_desc_.get(), W.raw_data(), conv_desc_.get(),
          y_desc_.get(), y, count, n, perf, ws, limit));
    };
    auto get = [&](int count, int* n, cudnnConvolutionFwdAlgoPerf_t* perf) {
      HALFCAF_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          h, x_desc_.get(), w_desc_.get(), conv_desc_.get(), y_desc_.get(), count, n, perf));
    };
    auto ws_size = [&](int algo, size_t* bytes) {
      return cudnnGetConvolutionForwardWorkspaceSize(
          h, x_desc_.get(), w_desc_.get(), conv_desc_.get(), y_desc_.get(),
          static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
    };
    return ChooseAlgo<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
        "fwd", force_fwd_, find, get, ws_size,
        [](int a) { return CudnnFwdAlgoName(static_cast<cudnnConvolutionFwdAlgo_t>(a)); },
        ShapeString(X, W));
  }

  void SetZero(Tensor* Y) { ZeroTensor(Y); }

  // Y += bias per output channel: float or float16 bias on float or float16 Y, float or bfloat16
  // bias on bfloat16 Y.
  void AddBias(const Tensor& B, const ConvPoolGeometry& g, int64_t M, Tensor* Y) {
    const bool nchw = cp_.order == StorageOrder::NCHW;
    const int64_t P = g.out_size();
    const int64_t outer = nchw ? g.N : g.N * P, inner = nchw ? P : 1;
    cudaStream_t s = context_.stream();
    const bool b16 = B.dtype() == DataType::FLOAT16;
    if (Y->dtype() == DataType::BFLOAT16) {
      BFloat16* y = Y->mutable_data<BFloat16>();
      if (B.dtype() == DataType::FLOAT) {
        gpu::ChannelBias(outer, M, inner, B.data<float>(), y, true, s);
      } else {
        HALFCAF_ENFORCE(B.dtype() == DataType::BFLOAT16, cp_.op_label,
                        ": bfloat16 X takes a float or bfloat16 bias, got ", B.DebugString());
        gpu::ChannelBias(outer, M, inner, B.data<BFloat16>(), y, true, s);
      }
    } else if (Y->dtype() == DataType::FLOAT) {
      float* y = Y->mutable_data<float>();
      b16 ? gpu::ChannelBias(outer, M, inner, B.data<Half>(), y, true, s)
          : gpu::ChannelBias(outer, M, inner, B.data<float>(), y, true, s);
    } else {
      Half* y = Y->mutable_data<Half>();
      b16 ? gpu::ChannelBias(outer, M, inner, B.data<Half>(), y, true, s)
          : gpu::ChannelBias(outer, M, inner, B.data<float>(), y, true, s);
    }
  }

  std::map<std::vector<int64_t>, CudnnAlgoChoice> algos_;
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
    EnforceFloatType(dY, "ConvGradient dY", true);
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
    void* ws = WorkspaceFor(std::max(c.filter.workspace, c.data.workspace));

    conv_desc_.SetMathType(c.filter.math);
    HALFCAF_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        handle, &one, x_desc_.get(), X.raw_data(), y_desc_.get(), dY.raw_data(), conv_desc_.get(),
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.filter.algo), ws, c.filter.workspace, &zero,
        w_desc_.get(), dw));
    if (db) {
      HALFCAF_CUDNN_CHECK(cudnnConvolutionBackwardBias(handle, &one, y_desc_.get(), dY.raw_data(),
                                                       &zero, bias_desc_.get(), db));
    }
    if (dx) {
      conv_desc_.SetMathType(c.data.math);
      HALFCAF_CUDNN_CHECK(cudnnConvolutionBackwardData(
          handle, &one, w_desc_.get(), W.raw_data(), y_desc_.get(), dY.raw_data(), conv_desc_.get(),
          static_cast<cudnnConvolutionBwdDataAlgo_t>(c.data.algo), ws, c.data.workspace, &zero,
          x_desc_.get(), dx));
    }
  }

 private:
  struct Choice {
    CudnnAlgoChoice filter, data;  // data: only when dX is computed
  };

  Choice Choose(const Tensor& X, const Tensor& W, const Tensor& dY, void* dw, void* dx) {
    cudnnHandle_t h = context_.cudnn_handle();
    const std::string shape = ShapeString(X, W);
    Choice c;
    using FilterPerf = cudnnConvolutionBwdFilterAlgoPerf_t;
    auto find_filter = [&](int count, int* n, FilterPerf* perf, void* ws, size_t limit) {
      HALFCAF_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
          h, x_desc_.get(), X.raw_data(), y_desc_.get(), dY.raw_data(), conv_desc_.get(),
          w_desc_.get(), dw, count, n, perf, ws, limit));
    };
    auto get_filter = [&](int count, int* n, FilterPerf* perf) {
      HALFCAF_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          h, x_desc_.get(), y_desc_.get(), conv_desc_.get(), w_desc_.get(), count, n, perf));
    };
    auto filter_ws = [&](int algo, size_t* bytes) {
      return cudnnGetConvolutionBackwardFilterWorkspaceSize(
          h, x_desc_.get(), y_desc_.get(), conv_desc_.get(), w_desc_.get(),
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
    };
    c.filter = ChooseAlgo<FilterPerf, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
        "bwd filter", force_wgrad_, find_filter, get_filter, filter_ws,
        [](int a) {
          return CudnnBwdFilterAlgoName(static_cast<cudnnConvolutionBwdFilterAlgo_t>(a));
        },
        shape);
    if (!dx) return c;

    using DataPerf = cudnnConvolutionBwdDataAlgoPerf_t;
    auto find_data = [&](int count, int* n, DataPerf* perf, void* ws, size_t limit) {
      HALFCAF_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
          h, w_desc_.get(), W.raw_data(), y_desc_.get(), dY.raw_data(), conv_desc_.get(),
          x_desc_.get(), dx, count, n, perf, ws, limit));
    };
    auto get_data = [&](int count, int* n, DataPerf* perf) {
      HALFCAF_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          h, w_desc_.get(), y_desc_.get(), conv_desc_.get(), x_desc_.get(), count, n, perf));
    };
    auto data_ws = [&](int algo, size_t* bytes) {
      return cudnnGetConvolutionBackwardDataWorkspaceSize(
          h, w_desc_.get(), y_desc_.get(), conv_desc_.get(), x_desc_.get(),
          static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
    };
    c.data = ChooseAlgo<DataPerf, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
        "bwd data", force_dgrad_, find_data, get_data, data_ws,
        [](int a) { return CudnnBwdDataAlgoName(static_cast<cudnnConvolutionBwdDataAlgo_t>(a)); },
        shape);
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

  void Zero(Tensor* t) { ZeroTensor(t); }

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
