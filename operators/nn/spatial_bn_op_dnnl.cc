// SpatialBN and SpatialBNGradient in training mode on NHWC 4-D tensors with engine DNNL, where
// the op names the engine: oneDNN's batch normalization primitives (statistics, normalisation and
// gradients in FP32), in float, and in bfloat16 on oneDNN's BF16 kernels when
// DnnlBFloat16Enabled() (dnnl_util.h), with the FP32 scale, bias and statistics of the default
// operators (spatial_bn_op.h).
//
// CreateOperator's preference for DNNL on the CPU does not take it: the default op's NHWC loops
// (spatial_bn_nhwc.h) are faster (8 x 56 x 56 x 256, 2 threads, forward / gradient: bfloat16
// 1.0 / 1.1 ms against oneDNN's 1.8 / 3.0; float 1.7 / 2.2 against 2.1 / 3.7) and gate a fused
// ReLU, which oneDNN's do only with a workspace passed from the forward op to the gradient op.
// NCHW, channel-blocked X, fuse_relu and test mode are declined at creation; at run time the
// default op also runs for float16, mixed types, bfloat16 with the BF16 kernels off, in-place
// calls and empty batches, and it reports every bad input with its own messages.
//
// Results equal the default op's to rounding (both sum in float within chunks of rows; the
// default op adds the chunks in double). The gradient gets the variance back from the saved
// inverse std (var = 1 / inv_std^2 - epsilon; oneDNN adds epsilon again).
#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/enforce.h"
#include "core/strings.h"
#include "operators/dnnl_util.h"
#include "operators/nn/spatial_bn_op.h"

namespace halfcaf {

namespace {

using dnnl::memory;

dnnl::normalization_flags ScaleShift() {
  return dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
}

// NHWC training SpatialBN only, and only where the op names the engine: the default op is made
// for the rest.
void DeclineUnlessNhwcTraining(const OperatorBase& op) {
  const std::vector<std::string> engines = SplitList(op.def().engine());
  if (std::find(engines.begin(), engines.end(), "DNNL") == engines.end()) {
    HALFCAF_UNSUPPORTED(op.type(),
                        ": the default op's NHWC loops are faster (engine DNNL only "
                        "where named)");
  }
  if (ReadBNLayout(op).block != 0) {
    HALFCAF_UNSUPPORTED(op.type(), ": the default op runs channel-blocked tensors");
  }
  if (ReadBNFuseRelu(op)) HALFCAF_UNSUPPORTED(op.type(), ": the default op runs fuse_relu");
  if (op.GetSingleArgument<int>("is_test", 0) != 0) {
    HALFCAF_UNSUPPORTED(op.type(), ": the DNNL engine runs training mode only");
  }
  if (ParseBNOrder(op.GetSingleArgument<std::string>("order", "NCHW")) != BNOrder::NHWC) {
    HALFCAF_UNSUPPORTED(op.type(), ": the DNNL engine runs NHWC only (the default op is faster "
                        "on NCHW)");
  }
}

// f32 / bf16 for X (and dY) of one type with 4 dims and elements; nullopt otherwise.
std::optional<memory::data_type> BNKernelType(const Tensor& X, const Tensor* dY) {
  if (dY != nullptr && dY->dtype() != X.dtype()) return std::nullopt;
  if (X.ndim() != 4 || X.numel() == 0) return std::nullopt;
  if (X.dtype() == DataType::FLOAT) return memory::data_type::f32;
  if (X.dtype() == DataType::BFLOAT16 && DnnlBFloat16Enabled()) return memory::data_type::bf16;
  return std::nullopt;
}

// NHWC X (N, H, W, C) in oneDNN's logical (N, C, H, W) order.
memory::desc DataDesc(const std::vector<int64_t>& d, memory::data_type dt) {
  return memory::desc({d[0], d[3], d[1], d[2]}, dt, memory::format_tag::nhwc);
}

memory::desc ChannelDesc(int64_t C) {
  return memory::desc({C}, memory::data_type::f32, memory::format_tag::a);
}

memory Bound(const memory::desc& desc, const void* data) {
  return memory(desc, DnnlEngine(), const_cast<void*>(data));
}

// The shape cache and the default-op fallback of both operators.
class BNDnnlBase : public Operator<CPUContext> {
 protected:
  BNDnnlBase(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), epsilon_(ReadBNEpsilon(*this)) {
    DeclineUnlessNhwcTraining(*this);
  }
  void RunFallback() { fallback_.Run(def_, ws_, type()); }

  float epsilon_;
  DnnlPrepared prepared_;

 private:
  DefaultOpFallback fallback_;
};

class SpatialBNDnnlOp final : public BNDnnlBase {
 public:
  SpatialBNDnnlOp(const OperatorDef& def, Workspace* ws)
      : BNDnnlBase(def, ws),
        momentum_(GetSingleArgument<float>("momentum", 0.9f)) {
    EnforceSpatialBNForwardArgs(*this, false, momentum_);
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const auto dt = BNKernelType(X, nullptr);
    // oneDNN runs in place too; the default op takes in-place calls.
    if (!dt || IsInputOutputAlias(0, 0)) return RunFallback();
    const std::vector<int64_t>& dims = X.dims();
    const BNShape s = ComputeBNShape(dims, BNOrder::NHWC);
    const Tensor& scale = Input(1);
    const Tensor& bias = Input(2);
    EnforceBNChannelParam(scale, "scale", s, dims, BNOrder::NHWC);
    EnforceBNChannelParam(bias, "bias", s, dims, BNOrder::NHWC);
    if (prepared_.Changed(X.dims(), *dt)) Prepare(dims, *dt);
    if (!prepared_.usable) return RunFallback();

    const int64_t C = s.C;
    mean_.resize(C);
    var_.resize(C);
    Tensor* Y = Output(0, X.dims());
    try {
      prim_.Execute({{DNNL_ARG_SRC, Bound(data_, X.raw_data())},
                                   {DNNL_ARG_DST, Bound(data_, Y->raw_mutable_data(X.dtype()))},
                                   {DNNL_ARG_MEAN, Bound(ChannelDesc(C), mean_.data())},
                                   {DNNL_ARG_VARIANCE, Bound(ChannelDesc(C), var_.data())},
                                   {DNNL_ARG_SCALE, Bound(ChannelDesc(C), scale.raw_data())},
                                   {DNNL_ARG_SHIFT, Bound(ChannelDesc(C), bias.raw_data())}});
    } catch (const dnnl::error& e) {
      HALFCAF_THROW(type(), ": oneDNN batch normalization failed: ", e.what());
    }
    prepared_.CountRun();
    float* running_mean = BNRunningStat(this, 3, 1, C, "running mean");
    float* running_var = BNRunningStat(this, 4, 2, C, "running var");
    UpdateBNStatistics(C, mean_.data(), var_.data(), momentum_, epsilon_,
                       BNRunningVarFactor(*this, s.N * s.S), running_mean, running_var,
                       Output(3, {C})->mutable_data<float>(), Output(4, {C})->mutable_data<float>());
  }

 private:
  void Prepare(const std::vector<int64_t>& dims, memory::data_type dt) {
    try {
      data_ = DataDesc(dims, dt);
      const dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_training, data_,
                                                         epsilon_, ScaleShift());
      const dnnl::batch_normalization_forward::primitive_desc pd(desc, DnnlAttr(), DnnlEngine());
      if (IsReferenceImpl(pd)) return;
      prim_ = DnnlPrimitive(dnnl::batch_normalization_forward(pd), pd);
      prepared_.usable = true;
    } catch (const dnnl::error&) {
      // No implementation for this shape: the default op runs it.
    }
  }

  float momentum_;
  memory::desc data_;
  DnnlPrimitive prim_;
  std::vector<float> mean_, var_;
};

// (X, scale, dY, saved_mean, saved_inv_std) -> (dX, dscale, dbias).
class SpatialBNGradientDnnlOp final : public BNDnnlBase {
 public:
  SpatialBNGradientDnnlOp(const OperatorDef& def, Workspace* ws) : BNDnnlBase(def, ws) {
    EnforceBNSingleBatch(*this);
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& scale = Input(1);
    const Tensor& dY = Input(2);
    const Tensor& saved_mean = Input(3);
    const Tensor& saved_inv_std = Input(4);
    const auto dt = BNKernelType(X, &dY);
    if (!dt || IsInputOutputAlias(2, 0)) return RunFallback();  // the schema forbids it
    const BNShape s =
        CheckBNGradientInputs(X, scale, dY, saved_mean, saved_inv_std, false, BNOrder::NHWC);
    if (prepared_.Changed(X.dims(), *dt)) Prepare(X.dims(), *dt);
    if (!prepared_.usable) return RunFallback();

    const int64_t C = s.C;
    var_.resize(C);
    shift_.assign(C, 0.f);  // oneDNN asks for the shift; the gradient does not depend on it
    const float* inv_std = saved_inv_std.data<float>();
    for (int64_t c = 0; c < C; ++c) {
      const double i = inv_std[c];
      var_[c] = static_cast<float>(1.0 / (i * i) - epsilon_);
    }
    float* dscale = Output(1, {C})->mutable_data<float>();
    float* dbias = Output(2, {C})->mutable_data<float>();
    void* dx = Output(0, X.dims())->raw_mutable_data(X.dtype());
    const memory::desc ch = ChannelDesc(C);
    try {
      prim_.Execute({{DNNL_ARG_SRC, Bound(data_, X.raw_data())},
                                   {DNNL_ARG_DIFF_DST, Bound(data_, dY.raw_data())},
                                   {DNNL_ARG_MEAN, Bound(ch, saved_mean.raw_data())},
                                   {DNNL_ARG_VARIANCE, Bound(ch, var_.data())},
                                   {DNNL_ARG_SCALE, Bound(ch, scale.raw_data())},
                                   {DNNL_ARG_SHIFT, Bound(ch, shift_.data())},
                                   {DNNL_ARG_DIFF_SRC, Bound(data_, dx)},
                                   {DNNL_ARG_DIFF_SCALE, Bound(ch, dscale)},
                                   {DNNL_ARG_DIFF_SHIFT, Bound(ch, dbias)}});
    } catch (const dnnl::error& e) {
      HALFCAF_THROW(type(), ": oneDNN batch normalization gradient failed: ", e.what());
    }
    prepared_.CountRun();
  }

 private:
  void Prepare(const std::vector<int64_t>& dims, memory::data_type dt) {
    try {
      data_ = DataDesc(dims, dt);
      const dnnl::batch_normalization_forward::desc fdesc(dnnl::prop_kind::forward_training,
                                                          data_, epsilon_, ScaleShift());
      const dnnl::batch_normalization_forward::primitive_desc fwd(fdesc, DnnlEngine());
      const dnnl::batch_normalization_backward::desc desc(dnnl::prop_kind::backward, data_, data_,
                                                          epsilon_, ScaleShift());
      const dnnl::batch_normalization_backward::primitive_desc pd(desc, DnnlAttr(), DnnlEngine(),
                                                                  fwd);
      if (IsReferenceImpl(pd)) return;
      prim_ = DnnlPrimitive(dnnl::batch_normalization_backward(pd), pd);
      prepared_.usable = true;
    } catch (const dnnl::error&) {
      // No implementation for this shape: the default op runs it.
    }
  }

  memory::desc data_;
  DnnlPrimitive prim_;
  std::vector<float> var_, shift_;
};

}  // namespace

REGISTER_CPU_OPERATOR_WITH_ENGINE(SpatialBN, DNNL, SpatialBNDnnlOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(SpatialBNGradient, DNNL, SpatialBNGradientDnnlOp);

}  // namespace halfcaf
