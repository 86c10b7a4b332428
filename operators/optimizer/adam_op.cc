// Adam, as Caffe2 has it, and MixedPrecisionAdamUpdate, the fused update halfcaf's optimizer
// builder uses (FP32 and mixed precision alike).
//
// Adam (Caffe2): inputs param, moment_1, moment_2, grad, lr, iter (int64); outputs param,
// moment_1, moment_2 (in place), [effective grad]. With t = iter + 1 (Caffe2's Iter has already
// counted the current step, so its first step has t = 2) and c = sqrt(1 - beta2^t) / (1 - beta1^t):
//   m1 = beta1 m1 + (1 - beta1) g;  m2 = beta2 m2 + (1 - beta2) g^2;
//   param += lr c m1 / (sqrt(m2) + epsilon)        (lr negative, from LearningRate)
//
// MixedPrecisionAdamUpdate (halfcaf extension): PyTorch's Adam / AdamW on an FP32 master, the
// gradient (float16, bfloat16 or float) unscaled by loss_scale, t = iter (the Iter counter after
// this step's increment: 1 on the first step), epsilon added after the bias correction of m2:
//   g' = g / loss_scale (+ weight_decay master unless decoupled)
//   decoupled (AdamW): master *= 1 - lr weight_decay
//   m1 = beta1 m1 + (1 - beta1) g';  m2 = beta2 m2 + (1 - beta2) g'^2
//   master -= lr / (1 - beta1^t) * m1 / (sqrt(m2) / sqrt(1 - beta2^t) + epsilon)   (lr positive)
// then the float16 / bfloat16 copy (third output) is refreshed; a non-zero found_inf skips it all.
#include <cmath>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/operator.h"
#include "operators/cpu_parallel.h"
#include "operators/optimizer/adam_op.h"
#include "operators/optimizer/mixed_precision_sgd_op.h"

namespace halfcaf {

AdamArgs::AdamArgs(const OperatorBase& op, float default_epsilon)
    : beta1(op.GetSingleArgument<float>("beta1", 0.9f)),
      beta2(op.GetSingleArgument<float>("beta2", 0.999f)),
      epsilon(op.GetSingleArgument<float>("epsilon", default_epsilon)),
      decoupled(op.GetSingleArgument<bool>("decoupled", false)) {
  HALFCAF_ENFORCE(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1,
                  "beta1 and beta2 must be in [0, 1), got ", beta1, " and ", beta2);
  HALFCAF_ENFORCE(epsilon >= 0, "epsilon must be >= 0, got ", epsilon);
}

int64_t AdamIteration(const Tensor& t) {
  HALFCAF_ENFORCE(t.numel() == 1 && t.dtype() == DataType::INT64,
                  "iter must be a 1-element int64 tensor, got ", t.DebugString());
  return t.data<int64_t>()[0];
}

namespace {

void CheckSameShape(const Tensor& a, const char* an, const Tensor& b, const char* bn) {
  HALFCAF_ENFORCE(a.dims() == b.dims(), an, " ", DimsString(a.dims()), " and ", bn, " ",
                  DimsString(b.dims()), " must have the same shape");
}

class AdamOp final : public Operator<CPUContext> {
 public:
  AdamOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), adam_(*this, 1e-5f) {}

  void RunOnDevice() override {
    const Tensor& P = Input(0);
    const Tensor& M1 = Input(1);
    const Tensor& M2 = Input(2);
    const Tensor& G = Input(3);
    const float lr = UpdateScalar(Input(4), "lr");
    const int64_t t = AdamIteration(Input(5)) + 1;
    for (const Tensor* x : {&P, &M1, &M2, &G}) {
      HALFCAF_ENFORCE(x->dtype() == DataType::FLOAT, "Adam takes float tensors, got ",
                      x->DebugString());
    }
    CheckSameShape(M1, "moment_1", P, "param");
    CheckSameShape(M2, "moment_2", P, "param");
    CheckSameShape(G, "grad", P, "param");
    const float c = static_cast<float>(std::sqrt(1.0 - std::pow(adam_.beta2, t)) /
                                       (1.0 - std::pow(adam_.beta1, t)));
    const float* g = G.data<float>();
    float* p = Output(0, P.dims())->mutable_data<float>();
    float* m1 = Output(1, P.dims())->mutable_data<float>();
    float* m2 = Output(2, P.dims())->mutable_data<float>();
    float* eg = OutputSize() > 3 ? Output(3, P.dims())->mutable_data<float>() : nullptr;
    const float b1 = adam_.beta1, b2 = adam_.beta2, eps = adam_.epsilon;
    ForEachPiece(P.numel(), 8.0, [&](int64_t off, int64_t len) {
      for (int64_t i = off; i < off + len; ++i) {
        const float gi = g[i];
        m1[i] = m1[i] * b1 + gi * (1.f - b1);
        m2[i] = m2[i] * b2 + gi * gi * (1.f - b2);
        const float step = lr * c * m1[i] / (std::sqrt(m2[i]) + eps);
        if (eg) eg[i] = step;
        p[i] += step;
      }
    });
  }

 private:
  const AdamArgs adam_;
};

class MixedPrecisionAdamUpdateOp final : public Operator<CPUContext> {
 public:
  MixedPrecisionAdamUpdateOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), adam_(*this, 1e-8f), args_(*this) {}

  void RunOnDevice() override {
    const Tensor& G = Input(0);
    const Tensor& M1 = Input(1);
    const Tensor& M2 = Input(2);
    const float lr = UpdateScalar(Input(3), "lr");
    const Tensor& P = Input(4);
    const int64_t t = AdamIteration(Input(5));
    const float scale = InputSize() > 6 ? UpdateScalar(Input(6), "loss_scale") : 1.f;
    if (InputSize() > 7 && UpdateScalar(Input(7), "found_inf") != 0.f) return;  // skipped step
    CheckMixedPrecisionUpdateInputs(G, M1, P);
    CheckMixedPrecisionUpdateInputs(G, M2, P);
    HALFCAF_ENFORCE(t >= 1, "iter must count this step (>= 1), got ", t);
    HALFCAF_ENFORCE(scale > 0.f, "loss_scale must be positive, got ", scale);
    // As PyTorch computes them: in double, then used as float scalars.
    const double bc1 = 1.0 - std::pow(static_cast<double>(adam_.beta1), static_cast<double>(t));
    const double bc2 = 1.0 - std::pow(static_cast<double>(adam_.beta2), static_cast<double>(t));
    const float step_size = static_cast<float>(lr / bc1);
    const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
    const float inv = 1.f / scale, b1 = adam_.beta1, b2 = adam_.beta2, eps = adam_.epsilon;
    const float wd = args_.weight_decay;
    const float shrink = adam_.decoupled ? 1.f - lr * wd : 1.f;
    const float l2 = adam_.decoupled ? 0.f : wd;
    const FloatIn g(G);
    float* m1 = Output(0, P.dims())->mutable_data<float>();
    float* m2 = Output(1, P.dims())->mutable_data<float>();
    float* p = Output(2, P.dims())->mutable_data<float>();
    const int64_t n = P.numel();
    const LowPrecisionCopy copy(args_.copy_dtype, OutputSize() > 3 ? Output(3, P.dims()) : nullptr);
    ForEachPiece(n, 10.0, [&](int64_t off, int64_t len) {
      const float* gp = g.Read(off, len, 0);
      for (int64_t j = 0; j < len; ++j) {
        const int64_t i = off + j;
        const float pi = p[i] * shrink;
        const float gi = gp[j] * inv + l2 * pi;
        m1[i] = m1[i] * b1 + gi * (1.f - b1);
        m2[i] = m2[i] * b2 + gi * gi * (1.f - b2);
        const float denom = std::sqrt(m2[i]) / bc2_sqrt + eps;
        p[i] = pi - step_size * (m1[i] / denom);
      }
      copy.Write(p, off, len);
    });
  }

 private:
  const AdamArgs adam_;
  const MomentumUpdateArgs args_;  // weight_decay and copy_dtype
};

OpCost AdamCost(const std::vector<TensorShape>& in, int param, int grad) {
  OpCost c;
  const double n = static_cast<double>(in.at(param).numel());
  c.flops = 12.0 * n;
  c.bytes_read = n * (12.0 + DataTypeSize(in.at(grad).dtype));
  c.bytes_written = n * 12.0;
  return c;
}

}  // namespace

REGISTER_CPU_OPERATOR(Adam, AdamOp);
SHOULD_NOT_DO_GRADIENT(Adam);
REGISTER_CPU_OPERATOR(MixedPrecisionAdamUpdate, MixedPrecisionAdamUpdateOp);
SHOULD_NOT_DO_GRADIENT(MixedPrecisionAdamUpdate);

OPERATOR_SCHEMA(Adam)
    .NumInputs(6)
    .NumOutputs(3, 4)
    .EnforceInplace({{0, 0}, {1, 1}, {2, 2}})
    .CostInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return AdamCost(in, 0, 3);
    })
    .SetDoc("Caffe2's Adam step (float). With t = iter + 1 and c = sqrt(1 - beta2^t) / (1 - "
            "beta1^t): m1 = beta1 m1 + (1 - beta1) g; m2 = beta2 m2 + (1 - beta2) g^2; param += "
            "lr c m1 / (sqrt(m2) + epsilon). lr is negative (LearningRate with a negative "
            "base_lr), as Caffe2's Adam nets give it; iter is the counter Iter has already "
            "incremented, so the first step uses t = 2, as in Caffe2.")
    .Arg("beta1", "float, default 0.9")
    .Arg("beta2", "float, default 0.999")
    .Arg("epsilon", "float, default 1e-5 (added to sqrt(m2), not bias-corrected)")
    .Input(0, "param", "float parameter")
    .Input(1, "moment_1", "float first moment")
    .Input(2, "moment_2", "float second moment")
    .Input(3, "grad", "float gradient")
    .Input(4, "lr", "1-element float learning rate (negative)")
    .Input(5, "iter", "1-element int64 iteration counter")
    .Output(0, "param", "same blob as input 0")
    .Output(1, "moment_1", "same blob as input 1")
    .Output(2, "moment_2", "same blob as input 2")
    .Output(3, "effective_grad", "optional: the step added to param");

OPERATOR_SCHEMA(MixedPrecisionAdamUpdate)
    .NumInputs(6, 8)
    .NumOutputs(3, 4)
    .EnforceInplace({{1, 0}, {2, 1}, {4, 2}})
    .CostInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return AdamCost(in, 4, 0);
    })
    .SetDoc("halfcaf extension: PyTorch's Adam (or, decoupled=1, AdamW) step on an FP32 master "
            "parameter. Unscales the (float16, bfloat16 or float) gradient by loss_scale; Adam "
            "adds weight_decay * master to it, AdamW first shrinks the master by 1 - lr * "
            "weight_decay; m1 = beta1 m1 + (1 - beta1) g; m2 = beta2 m2 + (1 - beta2) g^2; master "
            "-= lr / (1 - beta1^t) * m1 / (sqrt(m2) / sqrt(1 - beta2^t) + epsilon) with t = iter "
            "(1 on the first step); writes the float16 (or bfloat16) copy of the new master. A "
            "non-zero found_inf skips the step entirely.")
    .Arg("beta1", "float, default 0.9")
    .Arg("beta2", "float, default 0.999")
    .Arg("epsilon", "float, default 1e-8 (added after m2's bias correction, as PyTorch does)")
    .Arg("weight_decay", "float, default 0")
    .Arg("decoupled", "int, default 0: 1 = AdamW's decoupled weight decay")
    .Arg("copy_dtype", "type of the copy output: float16 (default) or bfloat16")
    .Input(0, "grad", "gradient (float16, bfloat16 or float), scaled by loss_scale")
    .Input(1, "moment_1", "float first moment")
    .Input(2, "moment_2", "float second moment")
    .Input(3, "lr", "1-element float learning rate (positive; the step is subtracted)")
    .Input(4, "master", "float master parameter")
    .Input(5, "iter", "1-element int64: this step's number, from 1")
    .Input(6, "loss_scale", "optional 1-element float (default 1)")
    .Input(7, "found_inf", "optional 1-element float from CheckFinite")
    .Output(0, "moment_1", "same blob as input 1")
    .Output(1, "moment_2", "same blob as input 2")
    .Output(2, "master", "same blob as input 4")
    .Output(3, "copy", "optional float16 (copy_dtype) copy of the new master");

}  // namespace halfcaf
