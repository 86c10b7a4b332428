// ConvTranspose and ConvTransposeGradient with engine DNNL: oneDNN's deconvolution primitives
// (deconvolution_forward, deconvolution_backward_data, deconvolution_backward_weights), FP32 and
// BF16, 1-D to 3-D NCHW and 2-D NHWC, groups, strides, dilations, asymmetric pads, adj, optional
// bias. Same arguments, checks, outputs and error messages as the default CPU operators
// (conv_transpose_op.h); CreateOperator prefers this engine on CPU.
//
// The filter stays where it is: Caffe2's (M, C/group, kernel...) (NHWC: (M, kernel..., C/group))
// is oneDNN's (o = C, i = M) weights with strides that put i outermost, per group. adj becomes
// padding: oneDNN derives the output size from the pads as (Y - dk + pad_l + pad_r) / stride + 1
// = X, which any adj below the stride satisfies with the pads as given; adj >= stride (allowed
// up to the dilation) lowers pad_r by whole strides (oneDNN takes pad_r down to 1 - stride; beyond
// it the default op runs).
//
// As Conv's engine (conv_op_dnnl.cc): primitives made once per input shape, the layouts oneDNN
// prefers (but a plain Y under 16 channels: kBlockedChannels) with DnnlArg reorders around each
// run, one thread for tiny problems, bfloat16 (every
// input bfloat16) with FP32 accumulation and bfloat16 outputs when DnnlBFloat16Enabled(): the
// gradient on oneDNN's BF16 kernels, the forward on them with AMX and on its FP32 kernels (the
// bfloat16 tensors converted by the reorders) otherwise, which is faster there (ForwardKernelType).
// With the argument channel_block = B (operators/nn/channel_block.h; 2-D, NCHW) X and Y (dY and
// dX) are channel-blocked 5-D tensors (N, C / B, H, W, B) that the primitives read and write as
// they are (nChw<B>c): no reorders. There is no default op for them, so what oneDNN cannot run is
// then an error.
// Declines (HALFCAF_UNSUPPORTED, so the default op is created) for float16 inputs and more than
// 3 spatial dims; other dtypes arriving later (float16, mixed types, bfloat16 with the BF16
// kernels off), an empty tensor, or a shape oneDNN rejects (or has only reference code for, in
// BF16) run through a default op created on demand.
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/enforce.h"
#include "operators/dnnl_util.h"
#include "operators/nn/channel_block.h"
#include "operators/nn/conv_dnnl_common.h"
#include "operators/nn/conv_op.h"
#include "operators/nn/conv_transpose_op.h"

namespace halfcaf {

namespace {

using dnnl::memory;
using dnnl_conv::Any;
using dnnl_conv::kSmallMacs;
using dnnl_conv::SingleThreadScope;

// Leaves more than 3 spatial dims (no oneDNN layout) and inputs that already hold a type the
// engine does not compute in to the default op.
void DeclineUnsupported(const OperatorBase& op, const ConvPoolArgs& a) {
  const int nd = a.num_spatial_dims();
  if (nd < 1 || nd > 3) {
    HALFCAF_UNSUPPORTED(
        a.op_label, ": the DNNL engine handles 1-D to 3-D transposed convolution, got ", nd, "-D");
  }
  dnnl_conv::DeclineOtherInputTypes(op, a.op_label);
}

double Macs(const ConvTransposeGeometry& tg, int group) {
  const ConvPoolGeometry& g = tg.conv;
  return static_cast<double>(g.N) * tg.M * g.out_size() * (g.C / group) * g.kernel_size();
}

// Plain layouts of one transposed convolution (halfcaf's tensors) in oneDNN's deconvolution terms
// (src X, dst Y) and its geometry.
struct DeconvDescs {
  memory::desc src, weights, bias, dst;  // bias: zero desc without bias
  memory::dims strides, dilates, pad_l, pad_r;
  // Y keeps its plain layout in the forward primitive: see kBlockedChannels.
  bool plain_dst = false;
  memory::data_type compute = memory::data_type::undef;  // the tensors' type
};

// oneDNN's blocked layouts pad channels to blocks of 16 (AVX-512). An output with fewer channels
// than that (a generator's last layer: 1 or 3) then costs up to 16 times its work, so the forward
// primitive gets Y's plain layout and takes oneDNN's GEMM kernel: measured on the AC-GAN's
// 64 -> 1 channel layer (batch 64, 14x14 -> 28x28, Zen 4, 2 threads), 0.3-2 ms instead of 6-9 ms
// (FP32) and 1-2 ms instead of ~19 ms (BF16). Wider outputs are faster blocked (the 128 -> 64
// channel layer: about half the time of the plain layouts). The gradient primitives choose their
// layouts themselves (they keep a 1-channel dY plain).
constexpr int64_t kBlockedChannels = 16;

// `dt`: the type of every tensor (f32, or bf16 with FP32 accumulation inside the primitive).
DeconvDescs MakeDeconvDescs(const ConvTransposeArgs& a, const ConvTransposeGeometry& tg, bool bias,
                            memory::data_type dt) {
  const ConvPoolGeometry& g = tg.conv;  // g.out: X's spatial sizes, g.in: Y's
  const bool nhwc = a.cp.order == StorageOrder::NHWC;
  const int nd = g.num_spatial_dims();
  const int64_t G = a.cp.group, M = tg.M, C = g.C, Mg = M / G, Cg = C / G;
  // Dense (N, channels, spatial...) with channels second (NCHW) or last (NHWC).
  auto image = [&](int64_t ch, const std::vector<int64_t>& spatial) {
    memory::dims dims{g.N, ch};
    dims.insert(dims.end(), spatial.begin(), spatial.end());
    return memory::desc(dims, dt, dnnl_conv::DenseStrides(ch, spatial, nhwc));
  };
  DeconvDescs d;
  d.src = image(M, g.out);
  d.dst = image(C, g.in);
  // The filter's element (m, cg, k...) of (M, Cg, kernel...) (NHWC (M, kernel..., Cg)) is oneDNN's
  // (o = cg, i = m, k...), grouped (group, o = cg, i = m - group * Mg, k...).
  const int64_t K = g.kernel_size();
  memory::dims wdims{Cg, G == 1 ? M : Mg}, wst{nhwc ? 1 : K, Cg * K};
  int64_t step = nhwc ? Cg : 1;
  for (int i = nd - 1; i >= 0; --i) {
    wst.insert(wst.begin() + 2, step);
    step *= g.kernel[i];
  }
  wdims.insert(wdims.end(), g.kernel.begin(), g.kernel.end());
  if (G > 1) {
    wdims.insert(wdims.begin(), G);
    wst.insert(wst.begin(), Mg * Cg * K);
  }
  d.weights = memory::desc(wdims, dt, wst);
  if (bias) d.bias = memory::desc({C}, dt, memory::dims{1});
  d.plain_dst = C < kBlockedChannels;
  for (int i = 0; i < nd; ++i) {
    d.strides.push_back(g.stride[i]);
    d.dilates.push_back(g.dilation[i] - 1);  // oneDNN counts the gaps
    d.pad_l.push_back(g.pad_head(i));
    d.pad_r.push_back(g.pad_tail(i) - a.adj[i] / g.stride[i] * g.stride[i]);
  }
  return d;
}

// The type the forward primitive computes bfloat16 data in. oneDNN 2.6's deconvolution forward is
// a strided backward-data convolution, and its BF16 kernels for that are slower than its FP32
// ones on AVX512_BF16 CPUs without AMX: measured on Zen 4 (AC-GAN layers, batch 64, 1 thread),
// 128 -> 64 channels 7x7 -> 14x14 17 ms BF16 vs 9.3 ms FP32 with the conversions, 64 -> 1
// channel 1.1 ms vs 0.5 ms; the default op takes 15 and 0.5 ms. There the bfloat16 tensors are
// converted to float by the reorders DnnlArg does anyway (blocked layouts) and Y is rounded once
// on the way back, the default op's numerics. The gradient's BF16 kernels are the faster ones
// (on the 128 -> 64 layer: 2x for the data gradient, 1.1x for the filter gradient). With AMX,
// BF16 throughout.
memory::data_type ForwardKernelType(memory::data_type dt) {
  if (dt != memory::data_type::bf16) return dt;
  return DnnlIsaHasAmx() ? dt : memory::data_type::f32;
}

// With plain_dst, Y's plain layout unless oneDNN has only reference code for it (NHWC).
dnnl::deconvolution_forward::primitive_desc ForwardPd(const DeconvDescs& d) {
  auto make = [&d](const memory::desc& dst) {
    const dnnl::deconvolution_forward::desc desc(
        dnnl::prop_kind::forward_training, dnnl::algorithm::deconvolution_direct, Any(d.src),
        Any(d.weights), d.bias, dst, d.strides, d.dilates, d.pad_l, d.pad_r);
    return dnnl::deconvolution_forward::primitive_desc(desc, DnnlAttr(), DnnlEngine());
  };
  if (d.plain_dst) {
    try {
      auto pd = make(d.dst);
      if (!IsReferenceImpl(pd)) return pd;
    } catch (const dnnl::error&) {
      // No implementation for the plain layout: the blocked ones below.
    }
  }
  return make(Any(d.dst));
}

// Common part of the operators: arguments, construction rules and the default-op fallback.
class ConvTransposeDnnlBase : public Operator<CPUContext> {
 protected:
  ConvTransposeDnnlBase(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        a_(ParseConvTransposeArgs(args_, DebugName())),
        block_(ReadChannelBlock(*this)) {
    if (block_ == 0) {
      DeclineUnsupported(*this, a_.cp);
      return;
    }
    // Blocked tensors have no default op to decline to.
    HALFCAF_ENFORCE(a_.cp.num_spatial_dims() == 2 && a_.cp.order == StorageOrder::NCHW,
                    a_.cp.op_label,
                    ": channel_block needs a 2-D transposed convolution with order "
                    "NCHW");
  }

  // A tensor's dims as the NCHW ones the checks and the geometry take (X, dY).
  std::vector<int64_t> Nchw(const Tensor& t, const char* what) const {
    return block_ == 0 ? t.dims() : UnblockedDims(t.dims(), block_, a_.cp.op_label, what);
  }
  // The descriptors of the tensors as they are: with channel_block, X and Y blocked.
  DeconvDescs Descs(const ConvTransposeGeometry& tg, bool bias, memory::data_type dt) const {
    DeconvDescs d = MakeDeconvDescs(a_, tg, bias, dt);
    if (block_ != 0) {
      dnnl_conv::BlockActivations(block_, true, &d);
      d.plain_dst = false;
    }
    return d;
  }

  // The type the primitives run in: f32 when every input is float, bf16 when every input is
  // bfloat16 and the BF16 kernels are on; nullopt (the default op runs) otherwise.
  std::optional<memory::data_type> KernelType() const {
    const DataType t = Input(0).dtype();
    for (int i = 1; i < InputSize(); ++i) {
      if (Input(i).dtype() != t) return std::nullopt;
    }
    if (t == DataType::FLOAT) return memory::data_type::f32;
    if (t == DataType::BFLOAT16 && DnnlBFloat16Enabled()) return memory::data_type::bf16;
    return std::nullopt;
  }
  // Whether the primitives must be made again for this shape (X's dims, then W's; their ranks
  // are tied, so the key is unambiguous) and type.
  bool NeedsPrepare(const Tensor& X, const Tensor& W, memory::data_type dt) {
    std::vector<int64_t> key = X.dims();
    key.insert(key.end(), W.dims().begin(), W.dims().end());
    return prepared_.Changed(key, dt);
  }

  // Runs the default implementation (created once, on first use).
  void RunFallback() {
    dnnl_conv::EnforceNoBlockedFallback(block_, a_.cp.op_label, Input(0));
    fallback_.Run(def_, ws_, a_.cp.op_label);
  }

  ConvTransposeArgs a_;
  const int64_t block_;  // channel_block: 0, or X, Y, dY, dX are blocked
  DnnlPrepared prepared_;

 private:
  DefaultOpFallback fallback_;
};

class ConvTransposeDnnlOp final : public ConvTransposeDnnlBase {
 public:
  ConvTransposeDnnlOp(const OperatorDef& def, Workspace* ws) : ConvTransposeDnnlBase(def, ws) {}

  void RunOnDevice() override {
    const auto dt = KernelType();
    if (!dt) return RunFallback();  // float16, mixed types, or a dtype the default op reports
    const Tensor& X = Input(0);
    const Tensor& W = Input(1);
    const bool has_bias = InputSize() == 3;
    const ConvTransposeGeometry tg = ComputeConvTransposeGeometry(a_, Nchw(X, "X"), W.dims());
    if (has_bias) CheckConvTransposeBias(a_, tg, Input(2).dims());
    Tensor* Y =
        Output(0, block_ == 0 ? tg.y_dims : BlockedDimsOf(tg.y_dims, block_, a_.cp.op_label, "Y"));
    if (X.numel() == 0 || Y->numel() == 0) return RunFallback();
    SingleThreadScope threads(Macs(tg, a_.cp.group) < kSmallMacs);
    if (NeedsPrepare(X, W, *dt)) Prepare(tg, has_bias, *dt);
    if (!prepared_.usable) return RunFallback();

    try {
      src_.Load(X.raw_data());
      weights_.Load(W.raw_data());
      if (has_bias) bias_.Load(Input(2).raw_data());
      dst_.Bind(Y->raw_mutable_data(X.dtype()));
      prim_.Execute(args_);
      dst_.Store();
      prepared_.CountRun();
    } catch (const dnnl::error& e) {
      HALFCAF_THROW(a_.cp.op_label, ": oneDNN deconvolution failed: ", e.what());
    }
  }

 private:
  void Prepare(const ConvTransposeGeometry& tg, bool has_bias, memory::data_type dt) {
    try {
      // d: the tensors as they are; the primitive computes in ForwardKernelType(dt).
      const DeconvDescs d = Descs(tg, has_bias, dt);
      const memory::data_type kt = ForwardKernelType(dt);
      const auto pd = ForwardPd(kt == dt ? d : Descs(tg, has_bias, kt));
      if (dt != memory::data_type::f32 && IsReferenceImpl(pd)) return;
      src_ = DnnlArg(d.src, pd.src_desc(), DnnlArg::kInput);
      weights_ = DnnlArg(d.weights, pd.weights_desc(), DnnlArg::kInput);
      dst_ = DnnlArg(d.dst, pd.dst_desc(), DnnlArg::kOutput);
      args_ = {{DNNL_ARG_SRC, src_.memory()},
               {DNNL_ARG_WEIGHTS, weights_.memory()},
               {DNNL_ARG_DST, dst_.memory()}};
      if (has_bias) {
        bias_ = DnnlArg(d.bias, pd.bias_desc(), DnnlArg::kInput);
        args_[DNNL_ARG_BIAS] = bias_.memory();
      }
      prim_ = DnnlPrimitive(dnnl::deconvolution_forward(pd), pd);
      prepared_.usable = true;
    } catch (const dnnl::error&) {
      // oneDNN has no implementation for this shape: the default op runs it.
    }
  }

  DnnlArg src_, weights_, bias_, dst_;
  DnnlPrimitive prim_;
  std::unordered_map<int, memory> args_;
};

class ConvTransposeGradientDnnlOp final : public ConvTransposeDnnlBase {
 public:
  ConvTransposeGradientDnnlOp(const OperatorDef& def, Workspace* ws)
      : ConvTransposeDnnlBase(def, ws), no_bias_(GetSingleArgument<int>("no_bias", 0) != 0) {
    CheckConvGradientOutputs(a_.cp, no_bias_, OutputSize());
  }

  void RunOnDevice() override {
    const auto dt = KernelType();
    if (!dt) return RunFallback();
    const Tensor& X = Input(0);
    const Tensor& W = Input(1);
    const Tensor& dY = Input(2);
    const ConvTransposeGeometry tg = ComputeConvTransposeGeometry(a_, Nchw(X, "X"), W.dims());
    CheckConvTransposeGradientDY(a_, tg, Nchw(dY, "dY"));
    const bool compute_dx = OutputSize() == (no_bias_ ? 2 : 3);
    if (X.numel() == 0 || dY.numel() == 0) return RunFallback();
    SingleThreadScope threads(Macs(tg, a_.cp.group) < kSmallMacs);
    if (NeedsPrepare(X, W, *dt)) Prepare(tg, compute_dx, *dt);
    if (!prepared_.usable) return RunFallback();

    // Gradients in the inputs' type, as the default op writes them.
    const DataType type = X.dtype();
    Tensor* dW = Output(0, W.dims());
    void* db = no_bias_ ? nullptr : Output(1, {tg.conv.C})->raw_mutable_data(type);
    void* dx = compute_dx ? Output(no_bias_ ? 1 : 2, X.dims())->raw_mutable_data(type) : nullptr;
    try {
      bwd_.Run(X.raw_data(), dY.raw_data(), W.raw_data(), dW->raw_mutable_data(type), db, dx);
      prepared_.CountRun();
    } catch (const dnnl::error& e) {
      HALFCAF_THROW(a_.cp.op_label, ": oneDNN deconvolution gradient failed: ", e.what());
    }
  }

 private:
  void Prepare(const ConvTransposeGeometry& tg, bool compute_dx, memory::data_type dt) {
    try {
      const DeconvDescs d = Descs(tg, !no_bias_, dt);
      prepared_.usable = bwd_.Build(d, ForwardPd(d), dnnl::algorithm::deconvolution_direct,
                                    !no_bias_, compute_dx);
    } catch (const dnnl::error&) {
      // oneDNN has no implementation for this shape: the default op runs it.
    }
  }

  bool no_bias_;
  dnnl_conv::BackwardPrimitives<dnnl::deconvolution_backward_weights,
                                dnnl::deconvolution_backward_data>
      bwd_;
};

}  // namespace

REGISTER_CPU_OPERATOR_WITH_ENGINE(ConvTranspose, DNNL, ConvTransposeDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(ConvTransposeGradient, DNNL, ConvTransposeGradientDnnlOp);

}  // namespace halfcaf
