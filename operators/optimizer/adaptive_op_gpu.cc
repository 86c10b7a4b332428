// The adaptive optimizers on CUDA: Caffe2's Adagrad, Adadelta, RmsProp, Wngrad and Lars, and the
// fused MixedPrecisionAdagradUpdate / AdadeltaUpdate / RmsPropUpdate (kernels in
// gpu/adaptive_kernels.cu, rules shared with the CPU in core/adaptive_update_rules.h). Rates, loss
// scales, overflow flags and Wngrad's accumulator stay on the device; as with the other fused
// updates, the inputs are checked even on a skipped step. The schemas are in the CPU files.
#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/adaptive_kernels.h"
#include "gpu/cuda_context.h"
#include "gpu/reduce_kernels.h"
#include "operators/optimizer/adaptive_op.h"
#include "operators/optimizer/fused_update.h"
#include "operators/optimizer/loss_scale_op.h"
#include "operators/optimizer/mixed_precision_sgd_op.h"

namespace halfcaf {

namespace {

std::vector<const Tensor*> Inputs(const Operator<CUDAContext>& op) {
  std::vector<const Tensor*> in;
  for (int i = 0; i < op.InputSize(); ++i) in.push_back(&op.Input(i));
  return in;
}

class FusedAdaptiveCUDAOp : public Operator<CUDAContext> {
 public:
  FusedAdaptiveCUDAOp(const OperatorDef& def, Workspace* ws, int states,
                      gpu::AdaptiveRule (*read)(const OperatorBase&))
      : Operator(def, ws), states_(states), rule_(read(*this)), args_(*this) {}

  void RunOnDevice() override {
    const std::vector<const Tensor*> in = Inputs(*this);
    CheckFusedUpdateInputs(*this, states_, in);
    const int lr_index = FusedLrIndex(states_), p_index = lr_index + 1;
    const Tensor& G = *in[0];
    const Tensor& P = *in[p_index];
    const DataType copy_type = args_.copy_dtype;
    const bool has_copy = OutputSize() > states_ + 1;
    if (G.dtype() == DataType::BFLOAT16 || (has_copy && copy_type == DataType::BFLOAT16)) {
      EnforceBFloat16Device(context_.device_id(), type().c_str());
    }
    const std::vector<int64_t> dims = P.dims();
    float* s0 = Output(0, dims)->mutable_data<float>();
    float* s1 = states_ > 1 ? Output(1, dims)->mutable_data<float>() : nullptr;
    float* p = Output(states_, dims)->mutable_data<float>();
    void* copy = has_copy ? Output(states_ + 1, dims)->raw_mutable_data(copy_type) : nullptr;
    auto scalar = [&](int i) { return InputSize() > i ? in[i]->data<float>() : nullptr; };
    gpu::MixedPrecisionAdaptive(rule_, P.numel(), G.dtype(), G.raw_data(), s0, s1, p,
                                in[lr_index]->data<float>(), scalar(p_index + 1),
                                scalar(p_index + 2), copy_type, copy, args_.weight_decay,
                                context_.stream());
  }

 private:
  const std::string& type() const { return def_.type(); }

  const int states_;
  const gpu::AdaptiveRule rule_;
  const MomentumUpdateArgs args_;  // weight_decay and copy_dtype
};

gpu::AdaptiveRule FusedAdagrad(const OperatorBase& op) {
  const AdagradRule r = ReadAdagradRule(op, 1e-10f);
  return {gpu::AdaptiveRule::kAdagrad, r.decay, 0.f, r.epsilon};
}
gpu::AdaptiveRule FusedAdadelta(const OperatorBase& op) {
  const AdadeltaRule r = ReadAdadeltaRule(op, 0.9f, 1e-6f);
  return {gpu::AdaptiveRule::kAdadelta, r.decay, 0.f, r.epsilon};
}
gpu::AdaptiveRule FusedRmsProp(const OperatorBase& op) {
  const RmsPropRule r = ReadRmsPropRule(op);
  return {gpu::AdaptiveRule::kRmsProp, r.alpha, r.momentum, r.epsilon};
}

class MixedPrecisionAdagradUpdateCUDAOp final : public FusedAdaptiveCUDAOp {
 public:
  MixedPrecisionAdagradUpdateCUDAOp(const OperatorDef& def, Workspace* ws)
      : FusedAdaptiveCUDAOp(def, ws, 1, FusedAdagrad) {}
};
class MixedPrecisionAdadeltaUpdateCUDAOp final : public FusedAdaptiveCUDAOp {
 public:
  MixedPrecisionAdadeltaUpdateCUDAOp(const OperatorDef& def, Workspace* ws)
      : FusedAdaptiveCUDAOp(def, ws, 2, FusedAdadelta) {}
};
class MixedPrecisionRmsPropUpdateCUDAOp final : public FusedAdaptiveCUDAOp {
 public:
  MixedPrecisionRmsPropUpdateCUDAOp(const OperatorDef& def, Workspace* ws)
      : FusedAdaptiveCUDAOp(def, ws, 2, FusedRmsProp) {}
};

class AdagradCUDAOp final : public Operator<CUDAContext> {
 public:
  AdagradCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), rule_(ReadAdagradRule(*this, 1e-5f)),
        weight_decay_(GetSingleArgument<float>("weight_decay", 0.f)) {}

  void RunOnDevice() override {
    const Tensor& P = Input(0);
    CheckCaffeUpdateInputs(*this, "Adagrad", {0, 1, 2}, {&P, &Input(1), &Input(2)});
    EnforceFloatScalar(Input(3), "lr");
    float* p = Output(0, P.dims())->mutable_data<float>();
    float* h = Output(1, P.dims())->mutable_data<float>();
    float* elr = OutputSize() > 2 ? Output(2, P.dims())->mutable_data<float>() : nullptr;
    float* upd = OutputSize() > 3 ? Output(3, P.dims())->mutable_data<float>() : nullptr;
    gpu::AdagradStep(P.numel(), Input(2).data<float>(), p, h, elr, upd, Input(3).data<float>(),
                     rule_, weight_decay_, context_.stream());
  }

 private:
  const AdagradRule rule_;
  const float weight_decay_;
};

class AdadeltaCUDAOp final : public Operator<CUDAContext> {
 public:
  AdadeltaCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), rule_(ReadAdadeltaRule(*this, 0.95f, 1e-5f)) {}

  void RunOnDevice() override {
    const Tensor& P = Input(0);
    CheckCaffeUpdateInputs(*this, "Adadelta", {0, 1, 2, 3},
                           {&P, &Input(1), &Input(2), &Input(3)});
    EnforceFloatScalar(Input(4), "lr");
    float* p = Output(0, P.dims())->mutable_data<float>();
    float* h = Output(1, P.dims())->mutable_data<float>();
    float* u = Output(2, P.dims())->mutable_data<float>();
    gpu::AdadeltaStep(P.numel(), Input(3).data<float>(), p, h, u, Input(4).data<float>(), rule_,
                      context_.stream());
  }

 private:
  const AdadeltaRule rule_;
};

class RmsPropCUDAOp final : public Operator<CUDAContext> {
 public:
  RmsPropCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), args_(CaffeRmsPropArgs(*this)) {}

  void RunOnDevice() override {
    const Tensor& G = Input(0);
    CheckCaffeUpdateInputs(*this, "RmsProp", {0, 1, 2}, {&G, &Input(1), &Input(2)});
    EnforceFloatScalar(Input(3), "lr");
    const float* g = G.data<float>();
    float* g_out = Output(0, G.dims())->mutable_data<float>();
    float* ms = Output(1, G.dims())->mutable_data<float>();
    float* mom = Output(2, G.dims())->mutable_data<float>();
    gpu::RmsPropStep(G.numel(), g, g_out, ms, mom, Input(3).data<float>(), args_.alpha,
                     args_.momentum, args_.epsilon, context_.stream());
  }

 private:
  const RmsPropRule args_;
};

class WngradCUDAOp final : public Operator<CUDAContext> {
 public:
  WngradCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), epsilon_(GetSingleArgument<float>("epsilon", 1e-5f)) {
    HALFCAF_ENFORCE(epsilon_ >= 0.f, DebugName(), ": epsilon must be >= 0, got ", epsilon_);
    sum_sq_.SetDevice(context_.device());
  }

  void RunOnDevice() override {
    const Tensor& P = Input(0);
    const Tensor& G = Input(2);
    CheckCaffeUpdateInputs(*this, "Wngrad", {0, 2}, {&P, &Input(1), &G});
    EnforceFloatScalar(Input(1), "seq_b");
    EnforceFloatScalar(Input(3), "lr");
    sum_sq_.Resize({1});
    float* sum_sq = sum_sq_.mutable_data<float>();
    gpu::Dot(G.numel(), DataType::FLOAT, G.raw_data(), DataType::FLOAT, G.raw_data(),
             DataType::FLOAT, sum_sq, context_.stream());
    float* p = Output(0, P.dims())->mutable_data<float>();
    float* seq_b = Output(1, Input(1).dims())->mutable_data<float>();
    float* elr = OutputSize() > 2 ? Output(2, {1})->mutable_data<float>() : nullptr;
    float* upd = OutputSize() > 3 ? Output(3, P.dims())->mutable_data<float>() : nullptr;
    gpu::WngradStep(P.numel(), G.data<float>(), p, seq_b, sum_sq, elr, upd,
                    Input(3).data<float>(), epsilon_, context_.stream());
  }

 private:
  const float epsilon_;
  Tensor sum_sq_;  // device scratch, kept
};

class LarsCUDAOp final : public Operator<CUDAContext> {
 public:
  LarsCUDAOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), args_(*this) {
    sq_.SetDevice(context_.device());
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& dX = Input(1);
    CheckLarsInputs(X, dX);
    if (dX.dtype() == DataType::BFLOAT16) EnforceBFloat16Device(context_.device_id(), "Lars");
    const char* names[] = {"wd", "trust", "lr_max", "loss_scale"};
    for (int i = 2; i < InputSize(); ++i) EnforceFloatScalar(Input(i), names[i - 2]);
    sq_.Resize({2});
    float* sq = sq_.mutable_data<float>();
    gpu::Dot(X.numel(), DataType::FLOAT, X.raw_data(), DataType::FLOAT, X.raw_data(),
             DataType::FLOAT, sq, context_.stream());
    gpu::Dot(dX.numel(), dX.dtype(), dX.raw_data(), dX.dtype(), dX.raw_data(), DataType::FLOAT,
             sq + 1, context_.stream());
    gpu::LarsRescale(sq, Input(2).data<float>(), Input(3).data<float>(),
                     Input(4).data<float>(), InputSize() > 5 ? Input(5).data<float>() : nullptr,
                     args_.offset, args_.lr_min, Output(0, {1})->mutable_data<float>(),
                     context_.stream());
  }

 private:
  const LarsArgs args_;
  Tensor sq_;  // |X|^2, |dX|^2 (device scratch, kept)
};

}  // namespace

REGISTER_CUDA_OPERATOR(MixedPrecisionAdagradUpdate, MixedPrecisionAdagradUpdateCUDAOp);
REGISTER_CUDA_OPERATOR(MixedPrecisionAdadeltaUpdate, MixedPrecisionAdadeltaUpdateCUDAOp);
REGISTER_CUDA_OPERATOR(MixedPrecisionRmsPropUpdate, MixedPrecisionRmsPropUpdateCUDAOp);
REGISTER_CUDA_OPERATOR(Adagrad, AdagradCUDAOp);
REGISTER_CUDA_OPERATOR(Adadelta, AdadeltaCUDAOp);
REGISTER_CUDA_OPERATOR(RmsProp, RmsPropCUDAOp);
REGISTER_CUDA_OPERATOR(Wngrad, WngradCUDAOp);
REGISTER_CUDA_OPERATOR(Lars, LarsCUDAOp);

}  // namespace halfcaf
