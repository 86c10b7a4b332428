// ConvTranspose and ConvTransposeGradient on cuDNN (engine CUDNN, also the plain CUDA
// implementation). Same inputs, outputs, shapes and errors as the CPU operators in
// conv_transpose_op.cc (which hold the schemas and the gradient maker); float and float16, NCHW
// for 1-D to 3-D (1-D runs as 2-D with a unit leading dim) and NHWC for 2-D, groups, dilations,
// asymmetric pads and any adj.
//
// ConvTranspose is the data gradient of a convolution, so its forward is
// cudnnConvolutionBackwardData, its dX a forward convolution of dY and its dfilter the filter
// gradient of that convolution (X in the role of its output gradient). cuDNN takes symmetric pads
// and an output of exactly the size that convolves back to X's, so each shape is planned: the
// convolution runs on a buffer Y' with symmetric pads q <= min(pad_head, pad_tail) and Y is Y'
// cropped at (pad_head - q) (zeros where Y reaches past Y'); the gradient embeds dY into Y' the
// same way. Symmetric pads with adj < stride use Y directly.
//
// Precision as Conv's cuDNN engine: FP32 accumulation; the candidates come with the descriptor's
// math type at CUDNN_FMA_MATH for float (no TF32), CUDNN_TENSOR_OP_MATH for float16 with
// enable_tensor_core=1 (default), CUDNN_DEFAULT_MATH for float16 without, and PickCudnnAlgo (gpu/
// cudnn_wrappers.h) keeps the first allowed one. cuDNN arguments: exhaustive_search (0),
// deterministic (0), ws_nbytes_limit (64 MiB), enable_tensor_core (1). The algorithms are chosen
// once per input shape and logged.
#include <glog/logging.h>

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/float_io.h"
#include "gpu/conv_transpose_kernels.h"
#include "gpu/cuda_context.h"
#include "gpu/cudnn_wrappers.h"
#include "gpu/math_gpu.h"
#include "operators/nn/channel_block.h"
#include "operators/nn/conv_op.h"
#include "operators/nn/conv_transpose_op.h"

namespace halfcaf {

namespace {

constexpr int64_t kDefaultWorkspaceLimit = 64 * 1024 * 1024;

// How cuDNN computes one shape (see the file comment). Spatial vectors have cuDNN's rank (a
// leading unit dim for 1-D).
struct CudnnPlan {
  ConvTransposeGeometry tg;
  std::vector<int64_t> x_spatial, buf_spatial, y_spatial, kernel, stride, dilation, q;
  std::vector<int64_t> offset;  // Y[p] = Y'[p + offset]
  bool direct = true;
};

CudnnPlan MakePlan(const ConvTransposeArgs& a, const ConvTransposeGeometry& tg) {
  const ConvPoolGeometry& g = tg.conv;
  CudnnPlan p;
  p.tg = tg;
  const int nd = g.num_spatial_dims();
  for (int d = 0; d < nd; ++d) {
    const int64_t head = g.pad_head(d), tail = g.pad_tail(d), s = g.stride[d], adj = a.adj[d];
    const int64_t full = (g.out[d] - 1) * s + g.dilation[d] * (g.kernel[d] - 1) + 1;
    int64_t q = head, extra = adj;  // Y' = full - 2q + extra, extra < s for cuDNN
    if (head != tail || adj >= s) {
      // Y' must reach the last element of Y that any tap reaches: full - max(tail - adj, 0).
      extra = s - 1;
      q = std::min({head, tail, std::max<int64_t>(tail - adj, 0) + s - 1});
    }
    int64_t buf = full - 2 * q + extra;
    while (buf < 1) {  // large pads: pad less, crop more
      --q;
      buf += 2;
    }
    p.direct = p.direct && q == head && buf == g.in[d];
    p.x_spatial.push_back(g.out[d]);
    p.buf_spatial.push_back(buf);
    p.y_spatial.push_back(g.in[d]);
    p.kernel.push_back(g.kernel[d]);
    p.stride.push_back(s);
    p.dilation.push_back(g.dilation[d]);
    p.q.push_back(q);
    p.offset.push_back(head - q);
  }
  if (nd == 1) {
    for (auto* v :
         {&p.x_spatial, &p.buf_spatial, &p.y_spatial, &p.kernel, &p.stride, &p.dilation}) {
      v->insert(v->begin(), 1);
    }
    p.q.insert(p.q.begin(), 0);
    p.offset.insert(p.offset.begin(), 0);
  }
  return p;
}

std::vector<int64_t> Dims(int64_t a, int64_t b, const std::vector<int64_t>& spatial) {
  std::vector<int64_t> d{a, b};
  d.insert(d.end(), spatial.begin(), spatial.end());
  return d;
}

class CudnnConvTransposeBase : public Operator<CUDAContext> {
 public:
  CudnnConvTransposeBase(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        a_(ParseConvTransposeArgs(args_, DebugName())),
        enable_tensor_core_(GetSingleArgument<int>("enable_tensor_core", 1) != 0),
        exhaustive_search_(GetSingleArgument<int>("exhaustive_search", 0) != 0),
        deterministic_(GetSingleArgument<int>("deterministic", 0) != 0),
        ws_limit_(GetSingleArgument<int64_t>("ws_nbytes_limit", kDefaultWorkspaceLimit)),
        buf_(context_.device()) {
    const int nd = a_.cp.num_spatial_dims();
    HALFCAF_ENFORCE(nd >= 1 && nd <= 3, a_.cp.op_label,
                    ": the CUDA transposed convolution handles 1-D to 3-D kernels, got kernels ",
                    DimsString(a_.cp.kernel));
    HALFCAF_ENFORCE(ws_limit_ >= 0, a_.cp.op_label, ": ws_nbytes_limit must be >= 0, got ",
                    ws_limit_);
    HALFCAF_ENFORCE(!(deterministic_ && exhaustive_search_), a_.cp.op_label,
                    ": deterministic=1 cannot be combined with exhaustive_search=1");
    RefuseChannelBlock(*this);  // the channel-blocked layout is the CPU's
  }

 protected:
  // Validates X and the filter, plans the shape and sets the descriptors (when X and Y have
  // channels: cuDNN rejects zero-sized dims). Returns the plan.
  const CudnnPlan& Prepare(const Tensor& X, const Tensor& W, const char* x_what,
                           const char* w_what) {
    EnforceFloatType(X, x_what);
    EnforceFloatType(W, w_what);
    HALFCAF_ENFORCE(X.dtype() == W.dtype(), a_.cp.op_label,
                    ": cuDNN needs X and the filter of one dtype (both float or both float16), "
                    "got X ",
                    X.DebugString(), " and filter ", W.DebugString());
    key_ = X.dims();
    key_.insert(key_.end(), W.dims().begin(), W.dims().end());
    key_.push_back(static_cast<int64_t>(X.dtype()));
    if (key_ == plan_key_) return plan_;
    plan_key_.clear();  // stays empty if anything below throws
    plan_ = MakePlan(a_, ComputeConvTransposeGeometry(a_, X.dims(), W.dims()));
    dtype_ = X.dtype();
    if (X.numel() > 0 && plan_.tg.conv.C > 0) {
      const cudnnDataType_t type = CudnnDataType(dtype_);
      const cudnnTensorFormat_t format =
          a_.cp.order == StorageOrder::NCHW ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
      const ConvPoolGeometry& g = plan_.tg.conv;
      x_desc_.SetNd(format, type, Dims(g.N, plan_.tg.M, plan_.x_spatial));
      buf_desc_.SetNd(format, type, Dims(g.N, g.C, plan_.buf_spatial));
      w_desc_.SetNd(format, type, Dims(plan_.tg.M, g.C / a_.cp.group, plan_.kernel));
      conv_desc_.SetNd(plan_.q, plan_.stride, plan_.dilation, CUDNN_DATA_FLOAT, a_.cp.group);
      conv_desc_.SetMathType(QueryMath());
      SetBiasDescriptors(g.N, g.C);
    }
    plan_key_ = key_;
    return plan_;
  }

  // Descriptors of Y and of the bias (1, C, 1...), for cudnnConvolutionBackwardBias.
  void SetBiasDescriptors(int64_t N, int64_t C) {
    const cudnnDataType_t type = CudnnDataType(dtype_);
    const cudnnTensorFormat_t format =
        a_.cp.order == StorageOrder::NCHW ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
    y_desc_.SetNd(format, type, Dims(N, C, plan_.y_spatial));
    bias_desc_.SetNd(format, type, Dims(1, C, std::vector<int64_t>(plan_.y_spatial.size(), 1)));
  }

  cudnnMathType_t QueryMath() const {
    return CudnnQueryMath(CudnnDataType(dtype_), enable_tensor_core_);
  }

  // The shift between Y and the buffer Y' (`to_buffer`: dY into Y', else Y' into Y).
  gpu::ShiftCopyShape ShiftShape(bool to_buffer) const {
    const ConvPoolGeometry& g = plan_.tg.conv;
    gpu::ShiftCopyShape s;
    s.N = g.N;
    s.C = g.C;
    s.nd = static_cast<int>(plan_.y_spatial.size());
    s.channels_last = a_.cp.order == StorageOrder::NHWC;
    for (int d = 0; d < s.nd; ++d) {
      s.src_size[d] = to_buffer ? plan_.y_spatial[d] : plan_.buf_spatial[d];
      s.dst_size[d] = to_buffer ? plan_.buf_spatial[d] : plan_.y_spatial[d];
      s.offset[d] = to_buffer ? -plan_.offset[d] : plan_.offset[d];
    }
    return s;
  }

  // The buffer Y' (device memory kept between runs).
  void* Buffer() {
    const ConvPoolGeometry& g = plan_.tg.conv;
    buf_.Resize(Dims(g.N, g.C, plan_.buf_spatial));
    return buf_.raw_mutable_data(dtype_);
  }

  // Chooses the algorithm of one direction for this shape (as Conv's cuDNN engine does): the
  // candidates from the timed `find` (exhaustive_search=1) or the heuristics `get`, asked with the
  // descriptor at QueryMath(); PickCudnnAlgo keeps the first allowed one.
  template <typename Perf, int kCount, typename Find, typename Get, typename WsSize>
  CudnnAlgoChoice ChooseAlgo(const char* dir, Find find, Get get, WsSize ws_size,
                             const std::function<const char*(int)>& name,
                             const std::string& shape) {
    conv_desc_.SetMathType(QueryMath());
    Perf perf[kCount];
    int n = 0;
    if (exhaustive_search_) {
      const size_t limit = static_cast<size_t>(ws_limit_);
      find(kCount, &n, perf, CudnnWorkspace(&context_, limit), limit);
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
    const CudnnAlgoChoice c =
        PickCudnnAlgo(CudnnAlgoPerfs(perf, n), rules, query, shape + " " + dir, name);
    LOG(INFO) << "cuDNN conv transpose algo: " << shape << " " << dir << " " << name(c.algo)
              << " math " << CudnnMathTypeName(c.math) << " workspace " << c.workspace << " bytes ("
              << (exhaustive_search_ ? "exhaustive" : "heuristic") << ")";
    return c;
  }

  std::string ShapeString(const Tensor& X, const Tensor& W) const {
    std::ostringstream ss;
    ss << a_.cp.op_label << " " << StorageOrderName(a_.cp.order) << " X " << X.DebugString()
       << " filter " << W.DebugString() << " group " << a_.cp.group;
    return ss.str();
  }

  void Zero(Tensor* t) {
    if (t->dtype() == DataType::FLOAT) {
      gpu::Set(t->numel(), 0.f, t->mutable_data<float>(), context_.stream());
    } else {
      gpu::Set(t->numel(), 0.f, t->mutable_data<Half>(), context_.stream());
    }
  }

  ConvTransposeArgs a_;
  bool enable_tensor_core_, exhaustive_search_, deterministic_;
  int64_t ws_limit_;
  Tensor buf_;
  DataType dtype_ = DataType::UNDEFINED;
  std::vector<int64_t> key_, plan_key_;
  CudnnPlan plan_;
  TensorDescriptor x_desc_, buf_desc_, y_desc_, bias_desc_;
  FilterDescriptor w_desc_;
  ConvolutionDescriptor conv_desc_;
};

class CudnnConvTransposeOp final : public CudnnConvTransposeBase {
 public:
  using CudnnConvTransposeBase::CudnnConvTransposeBase;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& W = Input(1);
    const CudnnPlan& p = Prepare(X, W, "ConvTranspose input X", "ConvTranspose filter");
    const ConvPoolGeometry& g = p.tg.conv;
    const Tensor* B = nullptr;
    if (InputSize() == 3) {
      B = &Input(2);
      EnforceFloatType(*B, "ConvTranspose bias");
      CheckConvTransposeBias(a_, p.tg, B->dims());
    }
    Tensor* Y = Output(0, p.tg.y_dims);
    void* y = Y->raw_mutable_data(X.dtype());
    if (Y->numel() == 0) return;
    if (X.numel() == 0) {  // no input channels: only the bias
      Zero(Y);
    } else {
      auto it = algos_.find(key_);
      if (it == algos_.end()) it = algos_.emplace(key_, Choose(X, W)).first;
      const CudnnAlgoChoice& c = it->second;
      conv_desc_.SetMathType(c.math);
      void* target = p.direct ? y : Buffer();
      const float one = 1.f, zero = 0.f;
      HALFCAF_CUDNN_CHECK(cudnnConvolutionBackwardData(
          context_.cudnn_handle(), &one, w_desc_.get(), W.raw_data(), x_desc_.get(), X.raw_data(),
          conv_desc_.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo),
          CudnnWorkspace(&context_, c.workspace), c.workspace, &zero, buf_desc_.get(), target));
      if (!p.direct) {
        gpu::ShiftCopy(ShiftShape(false), DataTypeSize(X.dtype()), target, y, context_.stream());
      }
    }
    if (B) {
      const bool nchw = a_.cp.order == StorageOrder::NCHW;
      const int64_t Q = g.in_size();
      const int64_t outer = nchw ? g.N : g.N * Q, inner = nchw ? Q : 1;
      cudaStream_t s = context_.stream();
      const bool b16 = B->dtype() == DataType::FLOAT16;
      if (Y->dtype() == DataType::FLOAT) {
        float* yf = Y->mutable_data<float>();
        b16 ? gpu::ChannelBias(outer, g.C, inner, B->data<Half>(), yf, true, s)
            : gpu::ChannelBias(outer, g.C, inner, B->data<float>(), yf, true, s);
      } else {
        Half* yh = Y->mutable_data<Half>();
        b16 ? gpu::ChannelBias(outer, g.C, inner, B->data<Half>(), yh, true, s)
            : gpu::ChannelBias(outer, g.C, inner, B->data<float>(), yh, true, s);
      }
    }
  }

 private:
  CudnnAlgoChoice Choose(const Tensor& X, const Tensor& W) {
    cudnnHandle_t h = context_.cudnn_handle();
    using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
    // The timed search writes into Y' (the buffer, or Y's storage: the run overwrites it).
    void* out = plan_.direct ? Output(0)->raw_mutable_data(X.dtype()) : Buffer();
    auto find = [&](int count, int* n, Perf* perf, void* ws, size_t limit) {
      HALFCAF_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
          h, w_desc_.get(), W.raw_data(), x_desc_.get(), X.raw_data(), conv_desc_.get(),
          buf_desc_.get(), out, count, n, perf, ws, limit));
    };
    auto get = [&](int count, int* n, Perf* perf) {
      HALFCAF_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          h, w_desc_.get(), x_desc_.get(), conv_desc_.get(), buf_desc_.get(), count, n, perf));
    };
    auto ws_size = [&](int algo, size_t* bytes) {
      return cudnnGetConvolutionBackwardDataWorkspaceSize(
          h, w_desc_.get(), x_desc_.get(), conv_desc_.get(), buf_desc_.get(),
          static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
    };
    return ChooseAlgo<Perf, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
        "fwd (bwd data)", find, get, ws_size,
        [](int a) { return CudnnBwdDataAlgoName(static_cast<cudnnConvolutionBwdDataAlgo_t>(a)); },
        ShapeString(X, W));
  }

  std::map<std::vector<int64_t>, CudnnAlgoChoice> algos_;
};

class CudnnConvTransposeGradientOp final : public CudnnConvTransposeBase {
 public:
  CudnnConvTransposeGradientOp(const OperatorDef& def, Workspace* ws)
      : CudnnConvTransposeBase(def, ws), no_bias_(GetSingleArgument<int>("no_bias", 0) != 0) {
    CheckConvGradientOutputs(a_.cp, no_bias_, OutputSize());
    compute_dx_ = OutputSize() == (no_bias_ ? 2 : 3);
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& W = Input(1);
    const Tensor& dY = Input(2);
    const CudnnPlan& p =
        Prepare(X, W, "ConvTransposeGradient input X", "ConvTransposeGradient filter");
    EnforceFloatType(dY, "ConvTransposeGradient dY");
    CheckConvTransposeGradientDY(a_, p.tg, dY.dims());
    HALFCAF_ENFORCE(dY.dtype() == X.dtype(), a_.cp.op_label,
                    ": cuDNN needs dY of X's dtype, got X ", X.DebugString(), " and dY ",
                    dY.DebugString());
    const DataType dt = X.dtype();
    Tensor* dW = Output(0, W.dims());
    void* dw = dW->raw_mutable_data(dt);
    Tensor* dB = no_bias_ ? nullptr : Output(1, {p.tg.conv.C});
    void* db = dB ? dB->raw_mutable_data(dt) : nullptr;
    Tensor* dX = compute_dx_ ? Output(no_bias_ ? 1 : 2, X.dims()) : nullptr;
    void* dx = dX ? dX->raw_mutable_data(dt) : nullptr;
    cudnnHandle_t h = context_.cudnn_handle();
    const float one = 1.f, zero = 0.f;

    if (db && dY.numel() > 0) {
      if (X.numel() == 0) SetBiasDescriptors(p.tg.conv.N, p.tg.conv.C);
      HALFCAF_CUDNN_CHECK(cudnnConvolutionBackwardBias(h, &one, y_desc_.get(), dY.raw_data(), &zero,
                                                       bias_desc_.get(), db));
    } else if (dB) {
      Zero(dB);
    }
    if (X.numel() == 0 || dY.numel() == 0) {  // the sums over X or dY are empty
      Zero(dW);
      if (dX) Zero(dX);
      return;
    }
    // The convolution's input: dY, or dY embedded in Y'.
    const void* src = dY.raw_data();
    if (!p.direct) {
      void* buf = Buffer();
      gpu::ShiftCopy(ShiftShape(true), DataTypeSize(dt), dY.raw_data(), buf, context_.stream());
      src = buf;
    }
    auto it = algos_.find(key_);
    if (it == algos_.end()) it = algos_.emplace(key_, Choose(X, W, src, dw, dx)).first;
    const Choice& c = it->second;
    void* ws = CudnnWorkspace(&context_, std::max(c.filter.workspace, c.data.workspace));
    conv_desc_.SetMathType(c.filter.math);
    HALFCAF_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        h, &one, buf_desc_.get(), src, x_desc_.get(), X.raw_data(), conv_desc_.get(),
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.filter.algo), ws, c.filter.workspace, &zero,
        w_desc_.get(), dw));
    if (dx) {
      conv_desc_.SetMathType(c.data.math);
      HALFCAF_CUDNN_CHECK(cudnnConvolutionForward(
          h, &one, buf_desc_.get(), src, w_desc_.get(), W.raw_data(), conv_desc_.get(),
          static_cast<cudnnConvolutionFwdAlgo_t>(c.data.algo), ws, c.data.workspace, &zero,
          x_desc_.get(), dx));
    }
  }

 private:
  struct Choice {
    CudnnAlgoChoice filter, data;  // data (dX, a forward convolution): only when computed
  };

  Choice Choose(const Tensor& X, const Tensor& W, const void* src, void* dw, void* dx) {
    cudnnHandle_t h = context_.cudnn_handle();
    const std::string shape = ShapeString(X, W);
    Choice c;
    using FilterPerf = cudnnConvolutionBwdFilterAlgoPerf_t;
    auto find_filter = [&](int count, int* n, FilterPerf* perf, void* ws, size_t limit) {
      HALFCAF_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
          h, buf_desc_.get(), src, x_desc_.get(), X.raw_data(), conv_desc_.get(), w_desc_.get(), dw,
          count, n, perf, ws, limit));
    };
    auto get_filter = [&](int count, int* n, FilterPerf* perf) {
      HALFCAF_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          h, buf_desc_.get(), x_desc_.get(), conv_desc_.get(), w_desc_.get(), count, n, perf));
    };
    auto filter_ws = [&](int algo, size_t* bytes) {
      return cudnnGetConvolutionBackwardFilterWorkspaceSize(
          h, buf_desc_.get(), x_desc_.get(), conv_desc_.get(), w_desc_.get(),
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
    };
    c.filter = ChooseAlgo<FilterPerf, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
        "bwd filter", find_filter, get_filter, filter_ws,
        [](int a) {
          return CudnnBwdFilterAlgoName(static_cast<cudnnConvolutionBwdFilterAlgo_t>(a));
        },
        shape);
    if (!dx) return c;
    using FwdPerf = cudnnConvolutionFwdAlgoPerf_t;
    auto find_fwd = [&](int count, int* n, FwdPerf* perf, void* ws, size_t limit) {
      HALFCAF_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
          h, buf_desc_.get(), src, w_desc_.get(), W.raw_data(), conv_desc_.get(), x_desc_.get(), dx,
          count, n, perf, ws, limit));
    };
    auto get_fwd = [&](int count, int* n, FwdPerf* perf) {
      HALFCAF_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          h, buf_desc_.get(), w_desc_.get(), conv_desc_.get(), x_desc_.get(), count, n, perf));
    };
    auto fwd_ws = [&](int algo, size_t* bytes) {
      return cudnnGetConvolutionForwardWorkspaceSize(
          h, buf_desc_.get(), w_desc_.get(), conv_desc_.get(), x_desc_.get(),
          static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
    };
    c.data = ChooseAlgo<FwdPerf, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
        "bwd data (fwd)", find_fwd, get_fwd, fwd_ws,
        [](int a) { return CudnnFwdAlgoName(static_cast<cudnnConvolutionFwdAlgo_t>(a)); }, shape);
    return c;
  }

  bool no_bias_;
  bool compute_dx_ = false;
  std::map<std::vector<int64_t>, Choice> algos_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(ConvTranspose, CudnnConvTransposeOp);
REGISTER_CUDA_OPERATOR(ConvTransposeGradient, CudnnConvTransposeGradientOp);
REGISTER_CUDNN_OPERATOR(ConvTranspose, CudnnConvTransposeOp);
REGISTER_CUDNN_OPERATOR(ConvTransposeGradient, CudnnConvTransposeGradientOp);

}  // namespace halfcaf
