// MaxPool / AveragePool and their gradients (and the 2D aliases) with engine DNNL: oneDNN's
// pooling primitives on halfcaf's plain NCHW or NHWC tensors, in float, and in bfloat16 on
// oneDNN's BF16 kernels when DnnlBFloat16Enabled() (dnnl_util.h). 2-D windows only. CreateOperator
// prefers this engine on CPU.
//
// Same results as the default operators (pool_op.h): the maximum is exact and the gradient of a
// max window goes to its first maximum in scan order, as there; averages divide by the in-image
// taps (oneDNN's exclude-padding average) and may differ from the default op's sums in the last
// bit. Channel-blocked tensors (channel_block, pool_op.h) are pooled as the NHWC view the default
// op takes. The default op runs instead for:
//   - other dtypes (float16, mixed types, bfloat16 with the BF16 kernels off), empty tensors;
//   - geometries with a window wholly in the padding (Caffe's legacy pooling can make one: the
//     default op writes 0 there), or that oneDNN rejects or has only reference code for;
//   - max pooling over an input holding inf or nan (forward: a scan of X; gradient: of Y). The
//     default op's rules (nan wins, an all -inf window gives -inf) are not oneDNN's;
//   - the bfloat16 gradient on NHWC (and channel-blocked) tensors whose windows overlap: oneDNN
//     adds each window's share into the bfloat16 dX, rounding at every addition (ResNet's 3 x 3,
//     stride 2 pooling: up to 4 % off for max, 45 % where shares cancel for average), where the
//     default op and oneDNN's NCHW kernels add in float and round once;
//   - max pooling gradients below AVX-512 (the default op's are faster there, see Prepare).
// The max gradient recomputes the forward pass into scratch for oneDNN's workspace (the index of
// each window's maximum): Caffe2's gradient op takes X, Y and dY, not a workspace.
//
// oneDNN 2.6 has fast (jit) kernels for plain NCHW tensors on AVX-512 only; elsewhere (AVX2) it
// runs its 'simple_nchw' code, 15-25x slower (ResNet-50's 3 x 3 max pool at batch 8, 2 threads:
// 46 ms forward, 51 ms gradient). There an NCHW tensor whose channels fill blocks of 8 is pooled
// through its channel-blocked copy (nChw8c), as the NHWC view the blocked ops take (pool_op.h
// PoolLayoutOf): the jit kernels, and the results of the channel-blocked training's pools.
#include <cstring>
#include <optional>
#include <unordered_map>

#include "core/enforce.h"
#include "operators/dnnl_util.h"
#include "operators/nn/pool_op.h"
#include "operators/optimizer/finite_scan.h"

namespace halfcaf {

namespace {

using dnnl::memory;

// The type the primitives run in for tensors of `type`: nullopt when the default op runs.
std::optional<memory::data_type> PoolKernelType(DataType type) {
  if (type == DataType::FLOAT) return memory::data_type::f32;
  if (type == DataType::BFLOAT16 && DnnlBFloat16Enabled()) return memory::data_type::bf16;
  return std::nullopt;
}

// One pooling geometry in oneDNN's terms, for plain 4-D tensors in halfcaf's order.
struct PoolDescs {
  memory::desc src, dst;
  memory::dims strides, kernel, dilation, pad_l, pad_r;
};

// Whether neighbouring windows share taps along some dim.
bool WindowsOverlap(const ConvPoolGeometry& g) {
  for (int d = 0; d < g.num_spatial_dims(); ++d) {
    if (g.stride[d] < (g.kernel[d] - 1) * g.dilation[d] + 1 && g.out[d] > 1) return true;
  }
  return false;
}

// Whether every window of dim d has at least one in-image tap.
bool EveryWindowTouchesImage(const ConvPoolGeometry& g, int d) {
  for (int64_t o = 0; o < g.out[d]; ++o) {
    const int64_t start = o * g.stride[d] - g.pad_head(d);
    bool inside = false;
    for (int64_t k = 0; k < g.kernel[d] && !inside; ++k) {
      const int64_t i = start + k * g.dilation[d];
      inside = i >= 0 && i < g.in[d];
    }
    if (!inside) return false;
  }
  return true;
}

// nullopt for the geometries the default op keeps (a window wholly in the padding).
std::optional<PoolDescs> MakePoolDescs(const ConvPoolGeometry& g, StorageOrder order,
                                       memory::data_type dt) {
  PoolDescs d;
  const auto tag = order == StorageOrder::NHWC ? memory::format_tag::nhwc : memory::format_tag::nchw;
  d.src = memory::desc({g.N, g.C, g.in[0], g.in[1]}, dt, tag);
  d.dst = memory::desc({g.N, g.C, g.out[0], g.out[1]}, dt, tag);
  for (int i = 0; i < 2; ++i) {
    if (!EveryWindowTouchesImage(g, i)) return std::nullopt;
    const int64_t extent = (g.kernel[i] - 1) * g.dilation[i] + 1;
    d.strides.push_back(g.stride[i]);
    d.kernel.push_back(g.kernel[i]);
    d.dilation.push_back(g.dilation[i] - 1);  // oneDNN counts the gaps
    d.pad_l.push_back(g.pad_head(i));
    // The tail padding that gives exactly g.out windows (the last one may stop short of the
    // image's end, or reach past it).
    d.pad_r.push_back((g.out[i] - 1) * g.stride[i] + extent - g.in[i] - g.pad_head(i));
  }
  return d;
}

dnnl::algorithm PoolAlgorithm(PoolType type) {
  return type == PoolType::kMax ? dnnl::algorithm::pooling_max
                                : dnnl::algorithm::pooling_avg_exclude_padding;
}

dnnl::pooling_v2_forward::primitive_desc ForwardPd(const PoolDescs& d, PoolType type,
                                                   dnnl::prop_kind prop) {
  const dnnl::pooling_v2_forward::desc desc(prop, PoolAlgorithm(type), d.src, d.dst, d.strides,
                                            d.kernel, d.dilation, d.pad_l, d.pad_r);
  return dnnl::pooling_v2_forward::primitive_desc(desc, DnnlAttr(), DnnlEngine());
}

memory Unbound(const memory::desc& desc) {
  return memory(desc, DnnlEngine(), DNNL_MEMORY_NONE);
}

// The block of the channel-blocked copies above.
constexpr int64_t kViewBlock = 8;

bool IsJitImpl(const dnnl::primitive_desc_base& pd) {
  const char* impl = pd.impl_info_str();
  return impl != nullptr && std::strncmp(impl, "jit", 3) == 0;
}

bool IsAvx512Impl(const dnnl::primitive_desc_base& pd) {
  const char* impl = pd.impl_info_str();
  return impl != nullptr && std::strstr(impl, "avx512") != nullptr;
}

// The geometry of an NCHW tensor's channel-blocked copy seen as NHWC images (N * C / B images of
// B channels), or nullopt when the channels do not fill the blocks.
std::optional<ConvPoolGeometry> BlockedViewGeometry(const ConvPoolGeometry& g) {
  if (g.C % kViewBlock != 0) return std::nullopt;
  ConvPoolGeometry v = g;
  v.N = g.N * (g.C / kViewBlock);
  v.C = kViewBlock;
  return v;
}

// One tensor the primitives read or write: the tensor itself, or (through a view) its nChw8c copy
// as the NHWC view of `view`, reordered in before (input) or out after (output) the primitive.
class PoolOperand {
 public:
  PoolOperand() = default;
  explicit PoolOperand(const memory::desc& d) : mem_(Unbound(d)) {}
  PoolOperand(const memory::desc& plain, const memory::desc& view, DnnlArg::Direction dir)
      : mem_(Unbound(view)) {
    arg_.emplace(plain, memory::desc(plain.dims(), plain.data_type(), memory::format_tag::nChw8c),
                 dir);
  }
  // Input `data`: what the primitive reads.
  const memory& In(const void* data) {
    if (!arg_) {
      mem_.set_data_handle(const_cast<void*>(data));
    } else {
      arg_->Load(data);
      mem_.set_data_handle(arg_->memory().get_data_handle());
    }
    return mem_;
  }
  // Output `data`: what the primitive writes (Store() puts it into `data` after).
  const memory& Out(void* data) {
    if (!arg_) {
      mem_.set_data_handle(data);
    } else {
      arg_->Bind(data);
      mem_.set_data_handle(arg_->memory().get_data_handle());
    }
    return mem_;
  }
  void Store() {
    if (arg_) arg_->Store();
  }

 private:
  std::optional<DnnlArg> arg_;
  memory mem_;
};

// The descs the primitives run on for `layout`: its own, or (`view`) those of the blocked view
// where the plain NCHW kernels are not jit ones. nullopt for the geometries the default op keeps.
struct PoolPlan {
  PoolDescs d;      // what the primitives take
  PoolDescs plain;  // the tensors' own
  bool view = false;
};
template <typename MakePd>
std::optional<PoolPlan> PlanPool(const PoolLayout& layout, int64_t block, memory::data_type dt,
                                 MakePd&& make_pd) {
  const auto d = MakePoolDescs(layout.g, layout.order, dt);
  if (!d) return std::nullopt;
  PoolPlan plan{*d, *d, false};
  if (block != 0 || layout.order != StorageOrder::NCHW || IsJitImpl(make_pd(*d))) return plan;
  const auto vg = BlockedViewGeometry(layout.g);
  if (!vg) return plan;
  const auto vd = MakePoolDescs(*vg, StorageOrder::NHWC, dt);
  if (!vd || !IsJitImpl(make_pd(*vd))) return plan;
  plan.d = *vd;
  plan.view = true;
  return plan;
}

PoolOperand Operand(const PoolPlan& plan, bool dst, DnnlArg::Direction dir) {
  const memory::desc& plain = dst ? plan.plain.dst : plan.plain.src;
  const memory::desc& used = dst ? plan.d.dst : plan.d.src;
  return plan.view ? PoolOperand(plain, used, dir) : PoolOperand(used);
}

// Construction rules, the primitives' cache key and the default-op fallback.
class PoolDnnlBase : public ConvPoolOpBase<CPUContext> {
 protected:
  PoolDnnlBase(const OperatorDef& def, Workspace* ws)
      : ConvPoolOpBase(def, ws, ConvPoolKind::kPool), block_(ReadPoolChannelBlock(*this, cp_)) {
    CheckPoolLayout(cp_);
    const int nd = cp_.num_spatial_dims();
    if (!cp_.global_pooling && nd != 2) {
      HALFCAF_UNSUPPORTED(cp_.op_label, ": the DNNL engine pools 2-D windows only, got ", nd, "-D");
    }
  }

  // The kernel type when every input has X's type, and X is a 4-D tensor (5-D blocked) with
  // elements.
  std::optional<memory::data_type> KernelType() const {
    const Tensor& X = Input(0);
    for (int i = 1; i < InputSize(); ++i) {
      if (Input(i).dtype() != X.dtype()) return std::nullopt;
    }
    if (X.ndim() != (block_ == 0 ? 4 : 5) || X.numel() == 0) return std::nullopt;
    return PoolKernelType(X.dtype());
  }
  void RunFallback() { fallback_.Run(def_, ws_, cp_.op_label); }

  const int64_t block_;
  DnnlPrepared prepared_;

 private:
  DefaultOpFallback fallback_;
};

template <PoolType kType>
class PoolDnnlOp final : public PoolDnnlBase {
 public:
  PoolDnnlOp(const OperatorDef& def, Workspace* ws) : PoolDnnlBase(def, ws) {}

  void RunOnDevice() override {
    const auto dt = KernelType();
    if (!dt) return RunFallback();
    const Tensor& X = Input(0);
    const PoolLayout layout = PoolLayoutOf(cp_, block_, X.dims());
    if (prepared_.Changed(X.dims(), *dt)) Prepare(layout, *dt);
    if (!prepared_.usable || (kType == PoolType::kMax && !AllFinite(X))) return RunFallback();
    Tensor* Y = Output(0, layout.y_dims);
    try {
      const memory& src = src_.In(X.raw_data());
      const memory& dst = dst_.Out(Y->raw_mutable_data(X.dtype()));
      prim_.Execute({{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
      dst_.Store();
      prepared_.CountRun();
    } catch (const dnnl::error& e) {
      HALFCAF_THROW(cp_.op_label, ": oneDNN pooling failed: ", e.what());
    }
  }

 private:
  void Prepare(const PoolLayout& layout, memory::data_type dt) {
    try {
      const auto make_pd = [&](const PoolDescs& d) {
        return ForwardPd(d, kType, dnnl::prop_kind::forward_inference);
      };
      const auto plan = PlanPool(layout, block_, dt, make_pd);
      if (!plan) return;
      const auto pd = make_pd(plan->d);
      if (IsReferenceImpl(pd)) return;
      src_ = Operand(*plan, false, DnnlArg::kInput);
      dst_ = Operand(*plan, true, DnnlArg::kOutput);
      prim_ = DnnlPrimitive(dnnl::pooling_v2_forward(pd), pd);
      prepared_.usable = true;
    } catch (const dnnl::error&) {
      // oneDNN has no implementation for this geometry: the default op runs it.
    }
  }

  PoolOperand src_, dst_;
  DnnlPrimitive prim_;
};

// (X, Y, dY) -> dX.
template <PoolType kType>
class PoolGradientDnnlOp final : public PoolDnnlBase {
 public:
  PoolGradientDnnlOp(const OperatorDef& def, Workspace* ws) : PoolDnnlBase(def, ws) {}

  void RunOnDevice() override {
    const auto dt = KernelType();
    if (!dt) return RunFallback();
    const Tensor& X = Input(0);
    const Tensor& Yt = Input(1);
    const Tensor& dY = Input(2);
    const PoolLayout layout = PoolLayoutOf(cp_, block_, X.dims());
    // Wrong shapes: the default op reports them.
    if (Yt.dims() != layout.y_dims || dY.dims() != layout.y_dims) return RunFallback();
    if (prepared_.Changed(X.dims(), *dt)) Prepare(layout, *dt);
    if (!prepared_.usable || (kType == PoolType::kMax && !AllFinite(Yt))) return RunFallback();
    void* dx = Output(0, X.dims())->raw_mutable_data(X.dtype());
    try {
      if (kType == PoolType::kMax) {
        // oneDNN's workspace (each window's argmax) from a forward pass into scratch.
        const memory& src = src_.In(X.raw_data());
        dst_.set_data_handle(ScratchBytes(dst_.get_desc().get_size(), &dst_fallback_));
        workspace_.set_data_handle(
            ScratchBytes(workspace_.get_desc().get_size(), &workspace_fallback_));
        fwd_.Execute({{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst_}, {DNNL_ARG_WORKSPACE, workspace_}});
      }
      std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, diff_dst_.In(dY.raw_data())},
                                           {DNNL_ARG_DIFF_SRC, diff_src_.Out(dx)}};
      if (kType == PoolType::kMax) args[DNNL_ARG_WORKSPACE] = workspace_;
      bwd_.Execute(args);
      diff_src_.Store();
      prepared_.CountRun();
    } catch (const dnnl::error& e) {
      HALFCAF_THROW(cp_.op_label, ": oneDNN pooling gradient failed: ", e.what());
    }
  }

 private:
  void Prepare(const PoolLayout& layout, memory::data_type dt) {
    if (dt == memory::data_type::bf16 && layout.order == StorageOrder::NHWC &&
        WindowsOverlap(layout.g)) {
      return;  // oneDNN would round dX at every addition (see the top of this file)
    }
    try {
      const auto backward_pd = [&](const PoolDescs& d) {
        const auto fwd = ForwardPd(d, kType, dnnl::prop_kind::forward_training);
        const dnnl::pooling_v2_backward::desc desc(PoolAlgorithm(kType), d.src, d.dst, d.strides,
                                                   d.kernel, d.dilation, d.pad_l, d.pad_r);
        return dnnl::pooling_v2_backward::primitive_desc(desc, DnnlAttr(), DnnlEngine(), fwd);
      };
      const auto plan = PlanPool(layout, block_, dt, backward_pd);
      if (!plan) return;
      const PoolDescs* d = &plan->d;
      const auto fwd = ForwardPd(*d, kType, dnnl::prop_kind::forward_training);
      const auto bwd = backward_pd(*d);
      if (IsReferenceImpl(fwd) || IsReferenceImpl(bwd)) return;
      // Below AVX-512 the default op's max gradient is the faster one (ResNet-50's 3 x 3 max pool
      // at batch 8 on AVX2, 2 threads: 6.7 ms on the blocked tensor, oneDNN's forward pass for
      // the workspace and gradient 12.8 ms), on NCHW and blocked tensors alike.
      if (kType == PoolType::kMax && !IsAvx512Impl(bwd)) return;
      src_ = Operand(*plan, false, DnnlArg::kInput);
      dst_ = Unbound(d->dst);
      diff_src_ = Operand(*plan, false, DnnlArg::kOutput);
      diff_dst_ = Operand(*plan, true, DnnlArg::kInput);
      if (kType == PoolType::kMax) {
        workspace_ = Unbound(fwd.workspace_desc());
        fwd_ = DnnlPrimitive(dnnl::pooling_v2_forward(fwd), fwd);
      }
      bwd_ = DnnlPrimitive(dnnl::pooling_v2_backward(bwd), bwd);
      prepared_.usable = true;
    } catch (const dnnl::error&) {
      // oneDNN has no implementation for this geometry: the default op runs it.
    }
  }

  PoolOperand src_, diff_src_, diff_dst_;
  memory dst_, workspace_;  // the forward pass's, in scratch
  DnnlPrimitive fwd_, bwd_;
  std::vector<float> dst_fallback_, workspace_fallback_;  // outside an operator run
};

using MaxPoolDnnlOp = PoolDnnlOp<PoolType::kMax>;
using AveragePoolDnnlOp = PoolDnnlOp<PoolType::kAverage>;
using MaxPoolGradientDnnlOp = PoolGradientDnnlOp<PoolType::kMax>;
using AveragePoolGradientDnnlOp = PoolGradientDnnlOp<PoolType::kAverage>;

}  // namespace

REGISTER_CPU_OPERATOR_WITH_ENGINE(MaxPool, DNNL, MaxPoolDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(MaxPool2D, DNNL, MaxPoolDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(AveragePool, DNNL, AveragePoolDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(AveragePool2D, DNNL, AveragePoolDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(MaxPoolGradient, DNNL, MaxPoolGradientDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(MaxPool2DGradient, DNNL, MaxPoolGradientDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(AveragePoolGradient, DNNL, AveragePoolGradientDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(AveragePool2DGradient, DNNL, AveragePoolGradientDnnlOp);

}  // namespace halfcaf
