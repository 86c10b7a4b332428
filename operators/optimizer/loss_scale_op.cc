#include "operators/optimizer/loss_scale_op.h"

#include <algorithm>

#include <cmath>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/operator.h"
#include "operators/optimizer/finite_scan.h"

namespace halfcaf {

float LossScaleRule::Step(float scale, bool found_inf, int64_t* good_steps,
                          int64_t* skipped_steps) const {
  if (found_inf) {
    *good_steps = 0;
    ++*skipped_steps;
    return std::max(min_scale, scale * backoff);
  }
  if (++*good_steps >= growth_interval) {
    *good_steps = 0;
    return std::min(max_scale, scale * growth);
  }
  return scale;
}

LossScaleRule ParseLossScaleRule(const OperatorBase& op) {
  LossScaleRule rule;
  rule.growth = op.GetSingleArgument<float>("growth", 2.f);
  rule.backoff = op.GetSingleArgument<float>("backoff", 0.5f);
  rule.growth_interval = op.GetSingleArgument<int64_t>("growth_interval", 1000);
  rule.min_scale = op.GetSingleArgument<float>("min_scale", 1.f);
  rule.max_scale = op.GetSingleArgument<float>("max_scale", 16777216.f);
  HALFCAF_ENFORCE(rule.growth >= 1.f, "growth must be >= 1, got ", rule.growth);
  HALFCAF_ENFORCE(rule.backoff > 0.f && rule.backoff <= 1.f, "backoff must be in (0, 1], got ",
                  rule.backoff);
  HALFCAF_ENFORCE(rule.growth_interval >= 1, "growth_interval must be >= 1, got ",
                  rule.growth_interval);
  HALFCAF_ENFORCE(rule.min_scale > 0.f && rule.min_scale <= rule.max_scale,
                  "need 0 < min_scale <= max_scale, got ", rule.min_scale, " and ",
                  rule.max_scale);
  return rule;
}

void EnforceFloatScalar(const Tensor& t, const char* what) {
  HALFCAF_ENFORCE(t.numel() == 1 && t.dtype() == DataType::FLOAT, what,
                  " must be a 1-element float tensor, got ", t.DebugString());
}

namespace {

class CheckFiniteOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    std::vector<const Tensor*> grads;
    for (int i = 0; i < InputSize(); ++i) {
      EnforceFloatType(Input(i), "every input");
      grads.push_back(&Input(i));
    }
    const bool finite = AllFinite(grads);
    Tensor* out = Output(0, {});
    out->mutable_data<float>()[0] = finite ? 0.f : 1.f;
  }
};

float ScalarValue(const Tensor& t, const char* what) {
  EnforceFloatScalar(t, what);
  return t.data<float>()[0];
}

int64_t* CounterOf(Tensor* t) {
  if (t->dtype() != DataType::INT64 || t->numel() != 1) {
    t->Resize({1});
    t->mutable_data<int64_t>()[0] = 0;
  }
  return t->mutable_data<int64_t>();
}

class UpdateLossScaleOp final : public Operator<CPUContext> {
 public:
  UpdateLossScaleOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), rule_(ParseLossScaleRule(*this)) {}

  void RunOnDevice() override {
    const float scale = ScalarValue(Input(0), "loss_scale");
    const bool found_inf = ScalarValue(Input(1), "found_inf") != 0.f;
    int64_t* good = CounterOf(OutputBlob(1)->GetMutableTensor(Device()));
    int64_t* skipped = CounterOf(OutputBlob(2)->GetMutableTensor(Device()));
    const float next = rule_.Step(scale, found_inf, good, skipped);
    Output(0, {})->mutable_data<float>()[0] = next;
  }

 private:
  LossScaleRule rule_;
};

}  // namespace

REGISTER_CPU_OPERATOR(CheckFinite, CheckFiniteOp);
REGISTER_CPU_OPERATOR(UpdateLossScale, UpdateLossScaleOp);
SHOULD_NOT_DO_GRADIENT(CheckFinite);
SHOULD_NOT_DO_GRADIENT(UpdateLossScale);

OPERATOR_SCHEMA(CheckFinite)
    .NumInputs(1, 1 << 30)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>&) {
      return std::vector<TensorShape>{TensorShape{{}, DataType::FLOAT}};
    })
    .SetDoc("halfcaf extension (mixed precision). found_inf = 1 if any element of any input "
            "(float, float16 or bfloat16 gradients) is inf or nan, else 0. Used to skip the "
            "update of a step whose scaled gradients overflowed.")
    .Input(0, "grad", "gradients; any number of inputs")
    .Output(0, "found_inf", "0-d float, 1 or 0");

OPERATOR_SCHEMA(UpdateLossScale)
    .NumInputs(4)
    .NumOutputs(3)
    .EnforceInplace({{0, 0}, {2, 1}, {3, 2}})
    .SetDoc("halfcaf extension (dynamic loss scaling). On overflow (found_inf != 0) the scale is "
            "multiplied by `backoff` (not below `min_scale`), good_steps resets and skipped_steps "
            "grows; after `growth_interval` consecutive clean steps the scale is multiplied by "
            "`growth` (not above `max_scale`).")
    .Arg("growth", "float, default 2")
    .Arg("backoff", "float, default 0.5; growth = backoff = 1 keeps a static scale and only counts "
         "the skipped steps")
    .Arg("growth_interval", "int, default 1000")
    .Arg("min_scale", "float, default 1")
    .Arg("max_scale", "float, default 2^24")
    .Input(0, "loss_scale", "0-d float, updated in place")
    .Input(1, "found_inf", "from CheckFinite")
    .Input(2, "good_steps", "int64 (1), clean steps since the last change; in place")
    .Input(3, "skipped_steps", "int64 (1), total skipped steps; in place")
    .Output(0, "loss_scale", "same blob as input 0")
    .Output(1, "good_steps", "same blob as input 2")
    .Output(2, "skipped_steps", "same blob as input 3");

}  // namespace halfcaf
