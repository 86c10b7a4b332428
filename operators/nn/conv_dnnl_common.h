// What the oneDNN engines of Conv (conv_op_dnnl.cc) and ConvTranspose (conv_transpose_op_dnnl.cc)
// share: the thread policy for tiny problems, the input types they compute in, dense strides, and
// the gradient's two primitives (weights and bias; data), which convolution and deconvolution
// build and run the same way.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/enforce.h"
#include "core/operator.h"
#include "operators/dnnl_util.h"

namespace halfcaf {
namespace dnnl_conv {

using dnnl::memory;

// Caffe2's `conv_algorithm` argument (its ideep operators' ConvAlgorithm): 0, the default, runs
// oneDNN's direct kernels; 1 (CONV_ALGORITHM_WINOGRAD) its Winograd kernels where it has them for
// the geometry and type. True for 1; another value is an error naming the op.
inline bool ReadConvAlgorithm(const OperatorBase& op, const std::string& label) {
  const int algo = op.GetSingleArgument<int>("conv_algorithm", 0);
  HALFCAF_ENFORCE(algo == 0 || algo == 1, label,
                  ": argument conv_algorithm must be 0 (direct) or 1 (Winograd), got ", algo);
  return algo == 1;
}

// Tiny problems (fewer multiply-adds than this) run single-threaded: waking and joining the
// thread team would cost more than it saves, badly so on a loaded machine.
constexpr double kSmallMacs = 1 << 22;

// Limits oneDNN (OpenMP) to one thread on this thread while in scope (creation and execution
// alike, so the primitive is made for the thread count it runs with).
class SingleThreadScope {
 public:
  explicit SingleThreadScope(bool active) {
#ifdef _OPENMP
    if (active && omp_get_max_threads() > 1) {
      saved_ = omp_get_max_threads();
      omp_set_num_threads(1);
    }
#endif
  }
  ~SingleThreadScope() {
#ifdef _OPENMP
    if (saved_ > 0) omp_set_num_threads(saved_);
#endif
  }
  SingleThreadScope(const SingleThreadScope&) = delete;
  SingleThreadScope& operator=(const SingleThreadScope&) = delete;

 private:
  int saved_ = 0;
};

// With channel_block B (operators/nn/channel_block.h): Y (and X when `x_blocked`) are
// (N, C / B, H, W, B) tensors, oneDNN's nChw<B>c. `Descs`: ConvDescs or DeconvDescs.
template <typename Descs>
void BlockActivations(int64_t block, bool x_blocked, Descs* d) {
  if (x_blocked) d->src = memory::desc(d->src.dims(), d->src.data_type(), ChannelBlockedTag(block));
  d->dst = memory::desc(d->dst.dims(), d->dst.data_type(), ChannelBlockedTag(block));
}

// Blocked tensors have no default op to fall back to: with channel_block, what oneDNN cannot run
// (another type, an empty tensor) is this error naming the op, X's type and dims.
inline void EnforceNoBlockedFallback(int64_t block, const std::string& label, const Tensor& X) {
  HALFCAF_ENFORCE(block == 0, label, ": the channel-blocked layout (channel_block ", block,
                  ") runs on oneDNN's kernels only, and they take float32 (or bfloat16 with BF16 "
                  "kernels) non-empty tensors; got ",
                  DataTypeName(X.dtype()), " X ", DimsString(X.dims()));
}

// Declines (HALFCAF_UNSUPPORTED) when an input already holds a type the engines do not compute
// in: they take float, and bfloat16 where DnnlBFloat16Enabled().
inline void DeclineOtherInputTypes(const OperatorBase& op, const std::string& label) {
  for (int i = 0; i < op.InputSize(); ++i) {
    const Blob& b = op.InputBlob(i);
    if (!b.IsTensor()) continue;
    const DataType t = b.GetTensor().dtype();
    if (t == DataType::UNDEFINED || t == DataType::FLOAT) continue;
    if (t == DataType::BFLOAT16 && DnnlBFloat16Enabled()) continue;
    HALFCAF_UNSUPPORTED(label, ": the DNNL engine computes in float (and bfloat16 on CPUs with ",
                        "BF16 instructions) only, input ", i, " is ", DataTypeName(t));
  }
}

// Strides of a dense (outer, inner, spatial...) tensor whose `inner` dim is stored last when
// `inner_last` (NHWC image, NHWC filter), second otherwise (NCHW).
inline memory::dims DenseStrides(int64_t inner, const std::vector<int64_t>& spatial,
                                 bool inner_last) {
  const int nd = static_cast<int>(spatial.size());
  memory::dims st(nd + 2);
  int64_t step = inner_last ? inner : 1;
  for (int d = nd - 1; d >= 0; --d) {
    st[2 + d] = step;
    step *= spatial[d];
  }
  if (inner_last) {
    st[1] = 1;
  } else {
    st[1] = step;
    step *= inner;
  }
  st[0] = step;
  return st;
}

// Layout left to the primitive; in type `t` when given (else d's).
inline memory::desc Any(const memory::desc& d,
                        memory::data_type t = memory::data_type::undef) {
  return memory::desc(d.dims(), t == memory::data_type::undef ? d.data_type() : t,
                      memory::format_tag::any);
}

// The type a primitive of `d` computes in: `d.compute` when set (a bfloat16 convolution on FP32
// kernels, bf16_kernels.h), else its tensors'. Its bias in that type, plain.
template <typename Descs>
memory::data_type ComputeType(const Descs& d) {
  return d.compute == memory::data_type::undef ? d.src.data_type() : d.compute;
}
template <typename Descs>
memory::desc ComputeBias(const Descs& d) {
  if (d.bias.is_zero() || d.bias.data_type() == ComputeType(d)) return d.bias;
  return memory::desc(d.bias.dims(), ComputeType(d), memory::dims{1});
}

// The gradient of a convolution (BwdWeights, BwdData = oneDNN's convolution_backward_weights /
// _data) or a deconvolution (deconvolution_backward_*): dW and db from X and dY, and dX from dY
// and W. `Descs` has the plain layouts src, weights, bias (zero desc without bias), dst and the
// strides, dilates, pad_l, pad_r.
template <typename BwdWeights, typename BwdData>
class BackwardPrimitives {
 public:
  // Builds them for `d` (computing in ComputeType(d)) and the forward primitive `fwd`; false when
  // oneDNN has only reference code in bfloat16 (the default op is better then). Throws
  // dnnl::error when it has none. Without `compute_dw` only the data gradient's primitive is
  // built (the weights gradient is computed elsewhere; no bias then).
  template <typename Descs, typename ForwardPd>
  bool Build(const Descs& d, const ForwardPd& fwd, dnnl::algorithm algo, bool bias, bool compute_dx,
             bool compute_dw = true) {
    const memory::data_type t = ComputeType(d);
    const bool f32 = t == memory::data_type::f32;
    compute_dw_ = compute_dw;
    std::optional<typename BwdWeights::primitive_desc> wpd;
    if (compute_dw) {
      const typename BwdWeights::desc wdesc(algo, Any(d.src, t), Any(d.weights, t), ComputeBias(d),
                                            Any(d.dst, t), d.strides, d.dilates, d.pad_l, d.pad_r);
      wpd.emplace(wdesc, DnnlAttr(), DnnlEngine(), fwd);
      if (!f32 && IsReferenceImpl(*wpd)) return false;
      src_ = DnnlArg(d.src, wpd->src_desc(), DnnlArg::kInput);
      dst_w_ = DnnlArg(d.dst, wpd->diff_dst_desc(), DnnlArg::kInput);
      dweights_ = DnnlArg(d.weights, wpd->diff_weights_desc(), DnnlArg::kOutput);
      args_w_ = {{DNNL_ARG_SRC, src_.memory()},
                 {DNNL_ARG_DIFF_DST, dst_w_.memory()},
                 {DNNL_ARG_DIFF_WEIGHTS, dweights_.memory()}};
      if (bias) {
        dbias_ = DnnlArg(d.bias, wpd->diff_bias_desc(), DnnlArg::kOutput);
        args_w_[DNNL_ARG_DIFF_BIAS] = dbias_.memory();
      }
      prim_w_ = DnnlPrimitive(BwdWeights(*wpd), *wpd);
    }
    if (compute_dx) {
      const typename BwdData::desc ddesc(algo, Any(d.src, t), Any(d.weights, t), Any(d.dst, t),
                                         d.strides, d.dilates, d.pad_l, d.pad_r);
      const typename BwdData::primitive_desc dpd(ddesc, DnnlAttr(), DnnlEngine(), fwd);
      if (!f32 && IsReferenceImpl(dpd)) return false;
      // dY is reordered once when both primitives want the same layout.
      share_dst_ = wpd && dpd.diff_dst_desc() == wpd->diff_dst_desc();
      if (!share_dst_) dst_d_ = DnnlArg(d.dst, dpd.diff_dst_desc(), DnnlArg::kInput);
      weights_ = DnnlArg(d.weights, dpd.weights_desc(), DnnlArg::kInput);
      dsrc_ = DnnlArg(d.src, dpd.diff_src_desc(), DnnlArg::kOutput);
      args_d_ = {{DNNL_ARG_DIFF_DST, share_dst_ ? dst_w_.memory() : dst_d_.memory()},
                 {DNNL_ARG_WEIGHTS, weights_.memory()},
                 {DNNL_ARG_DIFF_SRC, dsrc_.memory()}};
      prim_d_ = DnnlPrimitive(BwdData(dpd), dpd);
    }
    return true;
  }

  // dW (and db when not null) from x and dy where built with compute_dw; dx (when not null)
  // from dy and w.
  void Run(const void* x, const void* dy, const void* w, void* dw, void* db, void* dx) {
    if (compute_dw_) {
      src_.Load(x);
      dst_w_.Load(dy);
      dweights_.Bind(dw);
      if (db) dbias_.Bind(db);
      prim_w_.Execute(args_w_);
      dweights_.Store();
      if (db) dbias_.Store();
    }
    if (dx) {
      if (!share_dst_) dst_d_.Load(dy);
      weights_.Load(w);
      dsrc_.Bind(dx);
      prim_d_.Execute(args_d_);
      dsrc_.Store();
    }
  }

 private:
  bool share_dst_ = false, compute_dw_ = true;
  DnnlArg src_, dst_w_, dweights_, dbias_;  // weights gradient
  DnnlArg dst_d_, weights_, dsrc_;          // data gradient
  DnnlPrimitive prim_w_, prim_d_;
  std::unordered_map<int, memory> args_w_, args_d_;
};

}  // namespace dnnl_conv
}  // namespace halfcaf
