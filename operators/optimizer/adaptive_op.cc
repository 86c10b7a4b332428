#include "operators/optimizer/adaptive_op.h"

#include "core/float_io.h"

namespace halfcaf {

namespace {

float Epsilon(const OperatorBase& op, float dflt) {
  const float eps = op.GetSingleArgument<float>("epsilon", dflt);
  HALFCAF_ENFORCE(eps >= 0.f, op.DebugName(), ": epsilon must be >= 0, got ", eps);
  return eps;
}

float UnitArg(const OperatorBase& op, const char* name, float dflt) {
  const float v = op.GetSingleArgument<float>(name, dflt);
  HALFCAF_ENFORCE(v >= 0.f && v <= 1.f, op.DebugName(), ": ", name, " must be in [0, 1], got ", v);
  return v;
}

}  // namespace

AdagradRule ReadAdagradRule(const OperatorBase& op, float default_epsilon) {
  return AdagradRule{UnitArg(op, "decay", 1.f), Epsilon(op, default_epsilon)};
}

AdadeltaRule ReadAdadeltaRule(const OperatorBase& op, float default_decay, float default_epsilon) {
  return AdadeltaRule{UnitArg(op, "decay", default_decay), Epsilon(op, default_epsilon)};
}

namespace {

RmsPropRule ReadRmsProp(const OperatorBase& op, float default_decay, float default_epsilon) {
  const float momentum = op.GetSingleArgument<float>("momentum", 0.f);
  HALFCAF_ENFORCE(momentum >= 0.f, op.DebugName(), ": momentum must be >= 0, got ", momentum);
  return RmsPropRule{UnitArg(op, "decay", default_decay), momentum,
                     Epsilon(op, default_epsilon)};
}

}  // namespace

RmsPropRule ReadRmsPropRule(const OperatorBase& op) { return ReadRmsProp(op, 0.99f, 1e-8f); }

RmsPropRule CaffeRmsPropArgs(const OperatorBase& op) { return ReadRmsProp(op, 0.9f, 1e-5f); }

void CheckCaffeUpdateInputs(const OperatorBase& op, const char* op_type,
                            const std::vector<int>& same_shape,
                            const std::vector<const Tensor*>& in) {
  const Tensor& first = *in.at(same_shape.at(0));
  for (int i : same_shape) {
    const Tensor& t = *in.at(i);
    HALFCAF_ENFORCE(t.dtype() == DataType::FLOAT && t.dims() == first.dims(), op_type,
                    " takes float tensors of one shape; ", op.input_name(i), " is ",
                    t.DebugString(), " beside ", op.input_name(same_shape[0]), " ",
                    first.DebugString());
  }
}

void CheckLarsInputs(const Tensor& X, const Tensor& dX) {
  HALFCAF_ENFORCE(X.dtype() == DataType::FLOAT, "Lars: X must be float, got ", X.DebugString());
  EnforceFloatType(dX, "dX", true);
  HALFCAF_ENFORCE(dX.dims() == X.dims(), "Lars: dX ", DimsString(dX.dims()), " and X ",
                  DimsString(X.dims()), " must have the same shape");
}

LarsArgs::LarsArgs(const OperatorBase& op)
    : offset(op.GetSingleArgument<float>("offset", 0.5f)),
      lr_min(op.GetSingleArgument<float>("lr_min", 0.02f)) {
  HALFCAF_ENFORCE(offset >= 0.f && lr_min >= 0.f, op.DebugName(),
                  ": offset and lr_min must be >= 0, got ", offset, " and ", lr_min);
}

}  // namespace halfcaf
