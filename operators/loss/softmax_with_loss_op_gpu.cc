// SoftmaxWithLoss and SoftmaxWithLossGradient on CUDA (gpu/softmax_kernels.cu). Same inputs,
// outputs, arguments and errors as the CPU operators in softmax_with_loss_op.cc (schemas and
// gradient maker there): logits float or float16, P and the loss FP32, int32 labels or (with
// label_prob=1) float / float16 class distributions, optional float / float16 weights.
// The loss is the weighted mean of the per-sample losses, reduced deterministically (per-row
// terms, then one block in double). A label out of range is found on the device and reported by
// CheckDeferredErrors with the CPU op's message (DeviceLabelCheck: no stream synchronisation in
// the run, so the error may come some iterations later).
#include <vector>

#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/softmax_kernels.h"
#include "operators/loss/loss_util_gpu.h"
#include "operators/nn/softmax_op.h"
#include "operators/loss/softmax_with_loss_op.h"

namespace halfcaf {

namespace {

float* DeviceFloats(Tensor* t, Device device, int64_t n) {
  t->SetDevice(device);
  t->Resize({n});
  return t->mutable_data<float>();
}

class SoftmaxWithLossCUDAOp final : public Operator<CUDAContext> {
 public:
  SoftmaxWithLossCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        scale_(GetSingleArgument<float>("scale", 1.f)),
        label_prob_(GetSingleArgument<int>("label_prob", 0) != 0),
        axis_(GetSingleArgument<int>("axis", 1)) {
    CheckSoftmaxLossOrder(*this);
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& L = Input(1);
    const Tensor* W = InputSize() > 2 ? &Input(2) : nullptr;
    EnforceFloatType(X, "X (logits)");
    int64_t N, D;
    const int a = SoftmaxMatrixShape(X.dims(), axis_, DebugName(), &N, &D);
    CheckSoftmaxLossLabels(L, W, X.dims(), a, N, D, label_prob_, DebugName());

    const float* w = W ? DeviceFloat(*W, &w_scratch_, &context_) : nullptr;
    float* p = Output(0, X.dims())->mutable_data<float>();
    float* lse = DeviceFloats(&lse_, context_.device(), N);
    float* row_loss = DeviceFloats(&row_loss_, context_.device(), N);
    float* row_w = DeviceFloats(&row_w_, context_.device(), N);
    float* loss = Output(1, {})->mutable_data<float>();
    cudaStream_t s = context_.stream();
    const bool x16 = X.dtype() == DataType::FLOAT16;
    if (x16) {
      gpu::SoftmaxRows(N, D, X.data<Half>(), p, lse, s);
    } else {
      gpu::SoftmaxRows(N, D, X.data<float>(), p, lse, s);
    }
    unsigned long long* bad = nullptr;
    if (label_prob_) {
      const float* l = DeviceFloat(L, &l_scratch_, &context_);
      x16 ? gpu::SoftmaxLossRowsProb(N, D, X.data<Half>(), lse, l, w, row_loss, row_w, s)
          : gpu::SoftmaxLossRowsProb(N, D, X.data<float>(), lse, l, w, row_loss, row_w, s);
    } else {
      bad = check_.Flag(&context_, N, D);
      const int32_t* l = L.data<int32_t>();
      x16 ? gpu::SoftmaxLossRows(N, D, X.data<Half>(), lse, l, w, row_loss, row_w, bad, s)
          : gpu::SoftmaxLossRows(N, D, X.data<float>(), lse, l, w, row_loss, row_w, bad, s);
    }
    gpu::WeightedMeanLoss(N, row_loss, row_w, scale_, loss, s);
  }

  void CheckDeferredErrors() override { check_.Report(&context_, DebugName()); }

 private:
  float scale_;
  bool label_prob_;
  int axis_;
  Tensor lse_, row_loss_, row_w_, w_scratch_, l_scratch_;  // device scratch, kept
  DeviceLabelCheck check_;
};

class SoftmaxWithLossGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  SoftmaxWithLossGradientCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        scale_(GetSingleArgument<float>("scale", 1.f)),
        label_prob_(GetSingleArgument<int>("label_prob", 0) != 0),
        axis_(GetSingleArgument<int>("axis", 1)) {
    CheckSoftmaxLossOrder(*this);
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& L = Input(1);
    const bool has_w = InputSize() == 5;
    const Tensor* W = has_w ? &Input(2) : nullptr;
    const Tensor& P = Input(has_w ? 3 : 2);
    const Tensor& dLoss = Input(has_w ? 4 : 3);
    const SoftmaxLossGradInputs in =
        CheckSoftmaxLossGradientInputs(*this, X, L, axis_, label_prob_, W, P, dLoss);
    const int64_t N = in.N, D = in.D;
  
    const float* p = DeviceFloat(P, &p_scratch_, &context_);
    const float* w = W ? DeviceFloat(*W, &w_scratch_, &context_) : nullptr;
    const float* dloss = DeviceFloat(dLoss, &dloss_scratch_, &context_);
    coef_.SetDevice(context_.device());
    coef_.Resize({2});
    double* coef = coef_.mutable_data<double>();
    cudaStream_t s = context_.stream();
    gpu::SoftmaxLossGradCoef(N, w, dloss, scale_, coef, s);

    Tensor* dX = Output(0, X.dims());
    const bool x16 = X.dtype() == DataType::FLOAT16;
    if (label_prob_) {
      const float* l = DeviceFloat(L, &l_scratch_, &context_);
      x16 ? gpu::SoftmaxLossGradientProb(N, D, p, l, w, coef, dX->mutable_data<Half>(), s)
          : gpu::SoftmaxLossGradientProb(N, D, p, l, w, coef, dX->mutable_data<float>(), s);
      return;
    }
    unsigned long long* bad = check_.Flag(&context_, N, D);
    const int32_t* l = L.data<int32_t>();
    x16 ? gpu::SoftmaxLossGradient(N, D, p, l, w, coef, dX->mutable_data<Half>(), bad, s)
        : gpu::SoftmaxLossGradient(N, D, p, l, w, coef, dX->mutable_data<float>(), bad, s);
  }

  void CheckDeferredErrors() override { check_.Report(&context_, DebugName()); }

 private:
  float scale_;
  bool label_prob_;
  int axis_;
  Tensor coef_, p_scratch_, w_scratch_, dloss_scratch_, l_scratch_;  // device scratch, kept
  DeviceLabelCheck check_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(SoftmaxWithLoss, SoftmaxWithLossCUDAOp);
REGISTER_CUDA_OPERATOR(SoftmaxWithLossGradient, SoftmaxWithLossGradientCUDAOp);

}  // namespace halfcaf
