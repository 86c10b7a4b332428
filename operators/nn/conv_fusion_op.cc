#include "operators/nn/conv_fusion_op.h"

#include <algorithm>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/nan_math.h"
#include "operators/nn/conv_op.h"
#include "operators/cpu_parallel.h"

namespace halfcaf {

ConvFusionType ReadConvFusionType(const OperatorDef& def, const std::string& label) {
  const int64_t t = ArgumentHelper(def).GetSingleArgument<int64_t>("fusion_type", -1);
  HALFCAF_ENFORCE(t >= 0 && t <= 3, label,
                  ": argument 'fusion_type' must be 0 (none), 1 (Relu), 2 (Sum) or 3 (Sum + "
                  "Relu), got ",
                  t);
  const auto type = static_cast<ConvFusionType>(t);
  const int n = def.input_size();
  if (FusesSum(type)) {
    HALFCAF_ENFORCE(n == 3 || n == 4, label, ": fusion_type ", t,
                    " takes inputs (X, filter[, bias], S), got ", n, " inputs");
  } else {
    HALFCAF_ENFORCE(n == 2 || n == 3, label, ": fusion_type ", t,
                    " takes inputs (X, filter[, bias]), got ", n, " inputs");
  }
  return type;
}

int ConvFusionConvInputs(const OperatorDef& def, ConvFusionType t) {
  return def.input_size() - (FusesSum(t) ? 1 : 0);
}

namespace {

// The plain convolution of a ConvFusion def: (X, filter[, bias]) -> Y.
OperatorDef ConvPart(const OperatorDef& def, ConvFusionType t) {
  OperatorDef conv = def;
  conv.set_type("Conv");
  conv.clear_input();
  for (int i = 0; i < ConvFusionConvInputs(def, t); ++i) conv.add_input(def.input(i));
  for (auto it = conv.mutable_arg()->begin(); it != conv.mutable_arg()->end();) {
    it = it->name() == "fusion_type" ? conv.mutable_arg()->erase(it) : it + 1;
  }
  return conv;
}

}  // namespace

ConvFusionOp::ConvFusionOp(const OperatorDef& def, Workspace* ws)
    : ConvPoolOpBase(def, ws, ConvPoolKind::kConv),
      type_(ReadConvFusionType(def, cp_.op_label)),
      conv_(CreateOperator(ConvPart(def, type_), ws)) {}

void ConvFusionOp::RunOnDevice() {
  const bool sum = FusesSum(type_);
  const int s_index = InputSize() - 1;
  // In place on S: keep S before the convolution overwrites it.
  const float* s = nullptr;
  if (sum) {
    const Tensor& S = Input(s_index);
    EnforceFloatType(S, "ConvFusion sum input S");
    if (IsInputOutputAlias(s_index, 0)) {
      const float* src = ReadAsFloat(S, &s_);
      s_copy_.assign(src, src + S.numel());
      s = s_copy_.data();
    }
  }
  const std::vector<int64_t> s_dims = sum ? Input(s_index).dims() : std::vector<int64_t>{};
  conv_->Run(0);
  Tensor* Y = Output(0);
  if (sum) {
    HALFCAF_ENFORCE(s_dims == Y->dims(), cp_.op_label, ": the sum input S has dims ",
                    DimsString(s_dims), " but the convolution gives ", DimsString(Y->dims()));
    if (s == nullptr) s = ReadAsFloat(Input(s_index), &s_);
  }
  if (type_ == ConvFusionType::kNone) return;
  const float* y_in = ReadAsFloat(*Y, &y_);
  FloatWriter yw(Y, Y->dtype(), &y_);
  float* y = yw.data();
  const bool relu = FusesRelu(type_);
  ParallelFor(Y->numel(), 1.0, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      float v = y_in[i];
      if (s) v += s[i];
      y[i] = relu ? ReluNaN(v) : v;
    }
  });
  yw.Commit();
}

OPERATOR_SCHEMA(ConvFusion)
    .NumInputs(2, 4)
    .NumOutputs(1)
    .AllowInplace([](int in, int out) { return in == 3 && out == 0; })
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      return ConvShapeInference(def, in);
    })
    .CostInferenceFunction(ConvCost)
    .SetDoc(
        "Convolution with what follows it fused in, for inference (Caffe2's ideep ConvFusion; "
        "written by halfcaf's inference optimizer). fusion_type 1: Y = relu(conv + bias); 2: Y = "
        "conv + bias + S; 3: Y = relu(conv + bias + S); 0 (halfcaf): the convolution alone. "
        "Inputs (X, filter[, bias][, S]): S (types 2 and 3) is the last input, has Y's dims, and "
        "may be Y itself (in place). Conv's arguments, layouts and checks. The filter is treated "
        "as a constant: the oneDNN engine (preferred on CPU) reorders it once, and again only when "
        "the filter tensor's storage changes. No gradient (inference only).")
    .Arg("fusion_type", "int, required: 0 none, 1 Relu, 2 Sum, 3 Sum + Relu")
    .Arg("(Conv's)", "kernels, strides, pads, dilations, group, order, legacy_pad")
    .Input(0, "X", "input images")
    .Input(1, "filter", "as for Conv")
    .Input(2, "bias or S", "optional bias (M); or S when there is no bias and the type sums")
    .Input(3, "S", "types 2 and 3 with a bias: the summand, Y's dims")
    .Output(0, "Y", "output images");

REGISTER_CPU_OPERATOR(ConvFusion, ConvFusionOp);
SHOULD_NOT_DO_GRADIENT(ConvFusion);

}  // namespace halfcaf
