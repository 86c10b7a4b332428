// Conv and ConvGradient (and the Conv1D/2D/3D aliases) with engine DNNL: oneDNN's convolution
// primitives, FP32, 1-D to 3-D NCHW and 2-D NHWC, groups, strides, dilations, asymmetric pads,
// optional bias. Same arguments, checks, outputs and error messages as the default CPU operators
// (conv_op.h); CreateOperator prefers this engine on CPU.
//
// Primitives are created once per input shape and reused. The tensors stay in halfcaf's plain
// layouts; the primitives are created for the layouts oneDNN prefers (blocked, e.g. nChw16c) and
// DnnlArg reorders into and out of them around each run. Measured on ResNet-50 training (batch 8,
// 2 threads, AVX-512): the blocked kernels plus the reorders take ~15% less time than oneDNN's
// kernels on the plain layouts (backward ~20% less, forward about the same).
// bfloat16 (every input bfloat16) runs on oneDNN's BF16 kernels with FP32 accumulation when
// DnnlBFloat16Enabled() (dnnl_util.h): AMX or AVX512_BF16, not switched off by HALFCAF_DNNL_BF16=0;
// on its FP32 kernels over converted copies where those are faster (bf16_kernels.h). The gradient
// of a pointwise (1 x 1, unpadded) NHWC bfloat16 convolution computing in BF16 runs as two
// matrix products (conv_1x1_matmul_dnnl.h): AMX's BF16 gradient kernels are 1.2-6x slower. With
// AMX, so does the filter gradient of a many-channel (or strided) NHWC convolution over a small
// image (im2col + one product, conv_im2col_matmul_dnnl.h); its dX stays the data-gradient
// primitive's.
// With the argument conv_algorithm = 1 (Caffe2's ideep operators' CONV_ALGORITHM_WINOGRAD; 0, the
// default, is direct) a float32 convolution and its gradients run on oneDNN's Winograd kernels
// (F(4x4, 3x3) on AVX-512: 3 x 3 filters, stride 1) where it has them and the output is at least
// 14 x 14 (TriesWinograd: smaller images are faster on the direct kernels), else on the direct
// ones.
// Winograd's transforms take fewer multiplications (2-3x faster at 28 x 28 and 56 x 56) and round
// differently: results agree with the direct ones to ~1e-5 relative, not bit for bit.
// With the argument channel_block = B (operators/nn/channel_block.h) X and Y (dY and dX) are
// channel-blocked 5-D tensors that the primitives read and write as they are (nChw<B>c): no
// reorders. A 4-D X is plain NCHW (and so is dX): a first convolution over fewer channels than
// a block (an RGB image) writes its Y blocked, as oneDNN's kernels for it do. There is no default
// op for them, so what oneDNN cannot run is then an error.
// Declines (HALFCAF_UNSUPPORTED, so the default op is created) for float16 inputs, for more than
// 3 spatial dims and for NHWC other than 2-D; other dtypes arriving later (float16, mixed types,
// bfloat16 with the BF16 kernels off), an empty tensor, or a shape oneDNN rejects (or has only
// reference code for) run through a default op created on demand.
#include <memory>
#include <optional>
#include <unordered_map>

#include "core/enforce.h"
#include "operators/dnnl_util.h"
#include "operators/nn/bf16_kernels.h"
#include "operators/nn/channel_block.h"
#include "operators/nn/conv_1x1_matmul_dnnl.h"
#include "operators/nn/conv_dnnl_common.h"
#include "operators/nn/conv_fusion_op.h"
#include "operators/nn/conv_im2col_matmul_dnnl.h"
#include "operators/nn/conv_op.h"

namespace halfcaf {

namespace {

using dnnl::memory;
using dnnl_conv::Any;
using dnnl_conv::DenseStrides;
using dnnl_conv::kSmallMacs;
using dnnl_conv::SingleThreadScope;

// The float-only engine declines when an input already holds a non-float tensor, and leaves the
// cases oneDNN has no layout for (more than 3 spatial dims) and those the default op reports
// (NHWC other than 2-D) to the default op.
void DeclineNonFloatInputs(const OperatorBase& op, const ConvPoolArgs& a) {
  const int nd = a.num_spatial_dims();
  if (nd < 1 || nd > 3) {
    HALFCAF_UNSUPPORTED(a.op_label, ": the DNNL engine handles 1-D to 3-D convolution, got ", nd,
                        "-D");
  }
  if (nd != 2 && a.order == StorageOrder::NHWC) {
    HALFCAF_UNSUPPORTED(a.op_label, ": the DNNL engine takes NHWC for 2-D convolution only");
  }
  dnnl_conv::DeclineOtherInputTypes(op, a.op_label);
}

double ConvMacs(const ConvPoolGeometry& g, int64_t M, int group) {
  return static_cast<double>(g.N) * M * g.out_size() * (g.C / group) * g.kernel_size();
}

// Plain layouts of one convolution (halfcaf's tensors) and its geometry in oneDNN's terms.
struct ConvDescs {
  memory::desc src, weights, bias, dst;  // bias: zero desc without bias
  memory::dims strides, dilates, pad_l, pad_r;
  // The primitives' type when it is not the tensors' (dnnl_conv::ComputeType).
  memory::data_type compute = memory::data_type::undef;
};

// `dt`: the type of every tensor (f32, or bf16 with FP32 accumulation inside the primitive). A
// bf16 convolution computes in f32 where this CPU's BF16 kernels are the slower ones
// (CpuBFloat16ConvMath): the reorders into the blocked layouts convert.
ConvDescs MakeConvDescs(const ConvPoolArgs& a, const ConvPoolGeometry& g, int64_t M, bool bias,
                        memory::data_type dt) {
  const bool nhwc = a.order == StorageOrder::NHWC;
  const int64_t N = g.N, C = g.C, G = a.group, Cg = C / G, Mg = M / G;
  auto image = [&](int64_t ch, const std::vector<int64_t>& spatial) {
    memory::dims dims{N, ch};
    dims.insert(dims.end(), spatial.begin(), spatial.end());
    return memory::desc(dims, dt, DenseStrides(ch, spatial, nhwc));
  };
  ConvDescs d;
  if (dt == memory::data_type::bf16 && !CpuBFloat16ConvMath().in_bfloat16) {
    d.compute = memory::data_type::f32;
  }
  d.src = image(C, g.in);
  d.dst = image(M, g.out);
  // Filter (out channel, in channel, kernel...): NCHW (M, Cg, k...), NHWC (M, k..., Cg), per
  // filter_order (oneDNN reorders it into its own layout either way).
  const memory::dims ws = DenseStrides(Cg, g.kernel, a.filter_order == StorageOrder::NHWC);
  memory::dims wdims{M, Cg};
  wdims.insert(wdims.end(), g.kernel.begin(), g.kernel.end());
  if (G == 1) {
    d.weights = memory::desc(wdims, dt, ws);
  } else {
    // Grouped: (G, Mg, Cg, kernel...), group g's filters start Mg filters after group g-1's.
    wdims[0] = Mg;
    wdims.insert(wdims.begin(), G);
    memory::dims gws = ws;
    gws.insert(gws.begin(), Mg * ws[0]);
    d.weights = memory::desc(wdims, dt, gws);
  }
  if (bias) d.bias = memory::desc({M}, dt, memory::dims{1});
  const int nd = g.num_spatial_dims();
  for (int i = 0; i < nd; ++i) {
    d.strides.push_back(g.stride[i]);
    d.dilates.push_back(g.dilation[i] - 1);  // oneDNN counts the gaps
    d.pad_l.push_back(g.pad_head(i));
    d.pad_r.push_back(g.pad_tail(i));
  }
  return d;
}

dnnl::convolution_forward::primitive_desc ForwardPdWith(const ConvDescs& d, dnnl::algorithm algo) {
  const memory::data_type t = dnnl_conv::ComputeType(d);
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, algo,
                                             Any(d.src, t), Any(d.weights, t),
                                             dnnl_conv::ComputeBias(d), Any(d.dst, t), d.strides,
                                             d.dilates, d.pad_l, d.pad_r);
  return dnnl::convolution_forward::primitive_desc(desc, DnnlAttr(), DnnlEngine());
}

// Whether Winograd's algorithm is asked for and may pay: float32 2-D convolutions whose output is
// at least 14 x 14. Measured on ResNet-50's 3 x 3 shapes (2 threads, AVX-512, batch 8): oneDNN's
// Winograd kernels take half the direct ones' time at 28 x 28 and 56 x 56 and 0.65-0.75x at
// 14 x 14, break even at 10 x 10 and take 1.3-2x as long at 7 x 7.
constexpr int64_t kWinogradMinImage = 14;
bool TriesWinograd(bool winograd, const ConvDescs& d) {
  const memory::dims& y = d.dst.dims();
  // Float32 tensors (a bfloat16 convolution computing in f32 over converted copies stays direct).
  return winograd && d.src.data_type() == memory::data_type::f32 && y.size() == 4 &&
         y[2] >= kWinogradMinImage && y[3] >= kWinogradMinImage;
}

// make(algorithm) with Winograd's algorithm when TriesWinograd and oneDNN has kernels for it (it
// throws dnnl::error when not), else with the direct one.
template <typename Make>
auto WinogradOrDirect(bool winograd, const ConvDescs& d, Make&& make) {
  if (TriesWinograd(winograd, d)) {
    try {
      return make(dnnl::algorithm::convolution_winograd);
    } catch (const dnnl::error&) {
      // No Winograd kernel for this geometry (or these post-ops): the direct one.
    }
  }
  return make(dnnl::algorithm::convolution_direct);
}

// The training forward primitive (conv_dnnl_common.h ReadConvAlgorithm for `winograd`).
dnnl::convolution_forward::primitive_desc ForwardPd(const ConvDescs& d, bool winograd = false) {
  return WinogradOrDirect(winograd, d, [&](dnnl::algorithm a) { return ForwardPdWith(d, a); });
}

// Inference: oneDNN's forward_inference kernels (brgemm-based on AVX-512, faster than the training
// ones), with the fused sum and relu as post-ops.
// NHWC activations stay as they are (oneDNN's brgemm kernels read and write them as fast as
// its blocked layouts, without the copies); NCHW ones go to the layout oneDNN prefers.
// Winograd's kernels compute in oneDNN's blocked layouts: NHWC activations are reordered for them.
dnnl::convolution_forward::primitive_desc InferencePdWith(const ConvDescs& d, ConvFusionType type,
                                                          bool nhwc, dnnl::algorithm algo) {
  // A bf16 convolution computing in f32 reorders (converts) its NHWC activations too.
  const memory::data_type t = dnnl_conv::ComputeType(d);
  const bool plain = nhwc && t == d.src.data_type() && algo == dnnl::algorithm::convolution_direct;
  const dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, algo, plain ? d.src : Any(d.src, t), Any(d.weights, t),
      dnnl_conv::ComputeBias(d), plain ? d.dst : Any(d.dst, t), d.strides, d.dilates, d.pad_l,
      d.pad_r);
  dnnl::post_ops ops;
  if (FusesSum(type)) ops.append_sum(1.f);
  if (FusesRelu(type)) ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  dnnl::primitive_attr attr = DnnlAttr();
  attr.set_post_ops(ops);
  return dnnl::convolution_forward::primitive_desc(desc, attr, DnnlEngine());
}

dnnl::convolution_forward::primitive_desc InferencePd(const ConvDescs& d, ConvFusionType type,
                                                      bool nhwc, bool winograd) {
  return WinogradOrDirect(winograd, d,
                          [&](dnnl::algorithm a) { return InferencePdWith(d, type, nhwc, a); });
}

// A forward convolution primitive and its arguments, for Conv and ConvFusion alike.
struct ForwardPrimitive {
  void Build(const ConvDescs& d, const dnnl::convolution_forward::primitive_desc& pd,
             bool has_bias) {
    src = DnnlArg(d.src, pd.src_desc(), DnnlArg::kInput);
    weights = DnnlArg(d.weights, pd.weights_desc(), DnnlArg::kInput);
    dst = DnnlArg(d.dst, pd.dst_desc(), DnnlArg::kOutput);
    args = {{DNNL_ARG_SRC, src.memory()},
            {DNNL_ARG_WEIGHTS, weights.memory()},
            {DNNL_ARG_DST, dst.memory()}};
    if (has_bias) {
      bias = DnnlArg(d.bias, pd.bias_desc(), DnnlArg::kInput);
      args[DNNL_ARG_BIAS] = bias.memory();
    }
    prim = DnnlPrimitive(dnnl::convolution_forward(pd), pd);
  }
  void Execute() { prim.Execute(args); }

  DnnlArg src, weights, bias, dst;
  DnnlPrimitive prim;
  std::unordered_map<int, memory> args;
};

// Common part of the operators: construction rules and the default-op fallback.
class ConvDnnlBase : public ConvPoolOpBase<CPUContext> {
 protected:
  ConvDnnlBase(const OperatorDef& def, Workspace* ws)
      : ConvPoolOpBase(def, ws, ConvPoolKind::kConv),
        block_(ReadChannelBlock(*this)),
        winograd_(dnnl_conv::ReadConvAlgorithm(*this, cp_.op_label)) {
    if (block_ == 0) {
      DeclineNonFloatInputs(*this, cp_);
      return;
    }
    // Blocked tensors have no default op to decline to.
    HALFCAF_ENFORCE(cp_.num_spatial_dims() == 2 && cp_.order == StorageOrder::NCHW, cp_.op_label,
                    ": channel_block needs a 2-D convolution with order NCHW");
  }

  // Whether X is blocked: with channel_block, unless it is a plain 4-D tensor.
  bool XBlocked() const { return block_ != 0 && Input(0).ndim() != 4; }
  // X's dims as the NCHW ones the checks and the geometry take.
  std::vector<int64_t> XNchwDims() const {
    return XBlocked() ? UnblockedDims(Input(0).dims(), block_, cp_.op_label, "X") : Input(0).dims();
  }
  // dY's.
  std::vector<int64_t> Unblocked(const Tensor& t, const char* what) const {
    return block_ == 0 ? t.dims() : UnblockedDims(t.dims(), block_, cp_.op_label, what);
  }
  std::vector<int64_t> Blocked(std::vector<int64_t> nchw, const char* what) const {
    return block_ == 0 ? nchw : BlockedDimsOf(nchw, block_, cp_.op_label, what);
  }
  ConvDescs Descs(const ConvPoolGeometry& g, int64_t M, bool bias, memory::data_type dt) const {
    ConvDescs d = MakeConvDescs(cp_, g, M, bias, dt);
    if (block_ != 0) dnnl_conv::BlockActivations(block_, XBlocked(), &d);
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
    dnnl_conv::EnforceNoBlockedFallback(block_, cp_.op_label, Input(0));
    fallback_.Run(def_, ws_, cp_.op_label);
  }

  const int64_t block_;  // channel_block: 0, or Y / dY (and a 5-D X / dX) are blocked
  const bool winograd_;  // conv_algorithm 1: Winograd's kernels where oneDNN has them
  DnnlPrepared prepared_;

 private:
  DefaultOpFallback fallback_;
};

class ConvDnnlOp final : public ConvDnnlBase {
 public:
  ConvDnnlOp(const OperatorDef& def, Workspace* ws) : ConvDnnlBase(def, ws) {}

  void RunOnDevice() override {
    const auto dt = KernelType();
    if (!dt) return RunFallback();  // float16, mixed types, or a dtype the default op reports
    const Tensor& X = Input(0);
    const Tensor& W = Input(1);
    const bool has_bias = InputSize() == 3;
    const ConvPoolGeometry g = Geometry(XNchwDims());
    const int64_t M = CheckConvFilter(cp_, g, W.dims());
    if (has_bias) CheckConvBias(cp_, Input(2).dims(), M, W.dims());
    Tensor* Y = Output(0, Blocked(g.OutputDims(M, cp_.order), "Y"));
    if (X.numel() == 0 || Y->numel() == 0) return RunFallback();
    SingleThreadScope threads(ConvMacs(g, M, cp_.group) < kSmallMacs);
    if (NeedsPrepare(X, W, *dt)) Prepare(g, M, has_bias, X, W, *dt);
    if (!prepared_.usable) return RunFallback();

    try {
      fwd_.src.Load(X.raw_data());
      fwd_.weights.Load(W.raw_data());
      if (has_bias) fwd_.bias.Load(Input(2).raw_data());
      fwd_.dst.Bind(Y->raw_mutable_data(X.dtype()));
      fwd_.Execute();
      fwd_.dst.Store();
      prepared_.CountRun();
    } catch (const dnnl::error& e) {
      HALFCAF_THROW(cp_.op_label, ": oneDNN convolution failed: ", e.what());
    }
  }

 private:
  void Prepare(const ConvPoolGeometry& g, int64_t M, bool has_bias, const Tensor& X,
               const Tensor& W, memory::data_type dt) {
    try {
      const ConvDescs d = Descs(g, M, has_bias, dt);
      const auto pd = ForwardPd(d, winograd_);
      if (dnnl_conv::ComputeType(d) != memory::data_type::f32 && IsReferenceImpl(pd)) return;
      fwd_.Build(d, pd, has_bias);
      prepared_.usable = true;
    } catch (const dnnl::error&) {
      // oneDNN has no implementation for this shape: the default op runs it.
    }
  }

  ForwardPrimitive fwd_;
};

// ConvFusion (conv_fusion_op.h): the plain layouts of X, S and Y are kept (the inference optimizer
// makes them NHWC, which the brgemm kernels read directly), the filter is reordered once.
class ConvFusionDnnlOp final : public ConvDnnlBase {
 public:
  ConvFusionDnnlOp(const OperatorDef& def, Workspace* ws)
      : ConvDnnlBase(def, ws),
        type_(ReadConvFusionType(def, cp_.op_label)),
        conv_inputs_(ConvFusionConvInputs(def, type_)) {
    HALFCAF_ENFORCE(block_ == 0, cp_.op_label, ": ConvFusion takes no channel_block");
  }

  void RunOnDevice() override {
    const auto dt = KernelType();
    if (!dt) return RunFallback();
    const Tensor& X = Input(0);
    const Tensor& W = Input(1);
    const bool has_bias = conv_inputs_ == 3;
    const ConvPoolGeometry g = Geometry(X.dims());
    const int64_t M = CheckConvFilter(cp_, g, W.dims());
    if (has_bias) CheckConvBias(cp_, Input(2).dims(), M, W.dims());
    const std::vector<int64_t> y_dims = g.OutputDims(M, cp_.order);
    const Tensor* S = FusesSum(type_) ? &Input(InputSize() - 1) : nullptr;
    if (S) {
      HALFCAF_ENFORCE(S->dims() == y_dims, cp_.op_label, ": the sum input S has dims ",
                      DimsString(S->dims()), " but the convolution gives ", DimsString(y_dims));
    }
    Tensor* Y = Output(0, y_dims);
    if (X.numel() == 0 || Y->numel() == 0) return RunFallback();
    SingleThreadScope threads(ConvMacs(g, M, cp_.group) < kSmallMacs);
    if (NeedsPrepare(X, W, *dt)) Prepare(g, M, has_bias, X, W, *dt);
    if (!prepared_.usable) return RunFallback();

    try {
      fwd_.src.Load(X.raw_data());
      fwd_.weights.LoadConstant(W.raw_data(), W.storage_id());
      if (has_bias) fwd_.bias.Load(Input(2).raw_data());
      void* y = Y->raw_mutable_data(X.dtype());
      if (S) {
        fwd_.dst.BindAccumulate(y, S->raw_data());
      } else {
        fwd_.dst.Bind(y);
      }
      fwd_.Execute();
      fwd_.dst.Store();
      prepared_.CountRun();
    } catch (const dnnl::error& e) {
      HALFCAF_THROW(cp_.op_label, ": oneDNN convolution failed: ", e.what());
    }
  }

 private:
  void Prepare(const ConvPoolGeometry& g, int64_t M, bool has_bias, const Tensor& X,
               const Tensor& W, memory::data_type dt) {
    try {
      const ConvDescs d = MakeConvDescs(cp_, g, M, has_bias, dt);
      const auto pd = InferencePd(d, type_, cp_.order == StorageOrder::NHWC, winograd_);
      if (dnnl_conv::ComputeType(d) != memory::data_type::f32 && IsReferenceImpl(pd)) return;
      fwd_.Build(d, pd, has_bias);
      prepared_.usable = true;
    } catch (const dnnl::error&) {
      // oneDNN has no implementation for this shape: the default op runs it.
    }
  }

  ConvFusionType type_;
  int conv_inputs_;
  ForwardPrimitive fwd_;
};

class ConvGradientDnnlOp final : public ConvDnnlBase {
 public:
  ConvGradientDnnlOp(const OperatorDef& def, Workspace* ws)
      : ConvDnnlBase(def, ws),
        no_bias_(GetSingleArgument<int>("no_bias", 0) != 0),
        compute_dx_(OutputSize() == (no_bias_ ? 2 : 3)),
        data_only_(compute_dx_ && GetSingleArgument<int>("no_weight_gradient", 0) != 0) {
    CheckConvGradientOutputs(cp_, no_bias_, OutputSize());
  }

  void RunOnDevice() override {
    const auto dt = KernelType();
    if (!dt) return RunFallback();
    const Tensor& X = Input(0);
    const Tensor& W = Input(1);
    const Tensor& dY = Input(2);
    const std::vector<int64_t> x_dims = XNchwDims();
    const ConvPoolGeometry g = Geometry(x_dims);
    const int64_t M = CheckConvFilter(cp_, g, W.dims());
    CheckConvGradientDY(cp_, Unblocked(dY, "dY"), g.OutputDims(M, cp_.order), x_dims, W.dims());
    if (X.numel() == 0 || dY.numel() == 0) return RunFallback();
    SingleThreadScope threads(ConvMacs(g, M, cp_.group) < kSmallMacs);
    if (NeedsPrepare(X, W, *dt)) Prepare(g, M, compute_dx_, X, W, *dt);
    if (!prepared_.usable) return RunFallback();

    // Gradients in the inputs' type, as the default op writes them. A filter gradient nobody
    // wants (no_weight_gradient, with dX wanted) is left unwritten where bwd_ runs alone.
    const DataType type = X.dtype();
    const bool skip_dw = data_only_ && !matmul_;
    void* dw = skip_dw ? nullptr : Output(0, W.dims())->raw_mutable_data(type);
    void* db = no_bias_ || skip_dw ? nullptr : Output(1, {M})->raw_mutable_data(type);
    void* dx = compute_dx_ ? Output(no_bias_ ? 1 : 2, X.dims())->raw_mutable_data(type) : nullptr;
    try {
      if (matmul_) {
        matmul_->Run(X.raw_data(), dY.raw_data(), W.raw_data(), dw, dx);
      } else if (im2col_) {
        if (dw) im2col_->Run(X.raw_data(), dY.raw_data(), dw);
        if (dx) bwd_.Run(X.raw_data(), dY.raw_data(), W.raw_data(), nullptr, nullptr, dx);
      } else {
        bwd_.Run(X.raw_data(), dY.raw_data(), W.raw_data(), dw, db, dx);
      }
      prepared_.CountRun();
    } catch (const dnnl::error& e) {
      HALFCAF_THROW(cp_.op_label, ": oneDNN convolution gradient failed: ", e.what());
    }
  }

 private:
  void Prepare(const ConvPoolGeometry& g, int64_t M, bool compute_dx, const Tensor& X,
               const Tensor& W, memory::data_type dt) {
    matmul_.reset();
    im2col_.reset();
    try {
      const ConvDescs d = Descs(g, M, !no_bias_, dt);
      const bool bf16_math = dnnl_conv::ComputeType(d) == memory::data_type::bf16;
      if (block_ == 0 && Conv1x1GradientIsMatmul(cp_, g, !no_bias_, bf16_math)) {
        matmul_.emplace();
        if (matmul_->Build(g, M, dt, compute_dx)) {
          prepared_.usable = true;
          return;
        }
        matmul_.reset();
      }
      if (block_ == 0 && ConvFilterGradientIsIm2colMatmul(cp_, g, !no_bias_, bf16_math)) {
        im2col_.emplace();
        // dX (when wanted) from the convolution's data-gradient primitive alone.
        if (im2col_->Build(g, M, dt, cp_.filter_order == StorageOrder::NHWC) &&
            (!compute_dx || bwd_.Build(d, ForwardPd(d), dnnl::algorithm::convolution_direct, false,
                                       true, false))) {
          prepared_.usable = true;
          return;
        }
        im2col_.reset();
      }
      // Without a wanted filter gradient, only the data gradient's primitive (the one that runs
      // with it: the same dX).
      prepared_.usable = WinogradOrDirect(winograd_, d, [&](dnnl::algorithm a) {
        return bwd_.Build(d, ForwardPdWith(d, a), a, !no_bias_ && !data_only_, compute_dx,
                          !data_only_);
      });
    } catch (const dnnl::error&) {
      // oneDNN has no implementation for this shape: the default op runs it.
    }
  }

  const bool no_bias_, compute_dx_;
  // no_weight_gradient with dX wanted: dW and db are neither computed nor written.
  const bool data_only_;
  // A pointwise NHWC bfloat16 gradient as matrix products (conv_1x1_matmul_dnnl.h), or bwd_.
  std::optional<Conv1x1MatmulGradient> matmul_;
  // Or the filter gradient as im2col + a matrix product (conv_im2col_matmul_dnnl.h), dX by bwd_.
  std::optional<ConvIm2colFilterGradient> im2col_;
  dnnl_conv::BackwardPrimitives<dnnl::convolution_backward_weights,
                                dnnl::convolution_backward_data>
      bwd_;
};

}  // namespace

REGISTER_CPU_OPERATOR_WITH_ENGINE(Conv, DNNL, ConvDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(Conv1D, DNNL, ConvDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(Conv2D, DNNL, ConvDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(Conv3D, DNNL, ConvDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(ConvFusion, DNNL, ConvFusionDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(ConvGradient, DNNL, ConvGradientDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(Conv1DGradient, DNNL, ConvGradientDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(Conv2DGradient, DNNL, ConvGradientDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(Conv3DGradient, DNNL, ConvGradientDnnlOp);

}  // namespace halfcaf
