#include "operators/math/pow_op.h"

#include <cmath>

#include "core/float_io.h"
#include "core/gradient.h"
#include "operators/cpu_parallel.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

float ParsePowExponent(const OperatorBase& op) {
  if (op.InputSize() == 2) {
    HALFCAF_ENFORCE(!op.HasArgument("exponent"),
                    "Pow takes its exponent either from the `exponent` argument (one input) or "
                    "from input 1 ('", op.input_name(1), "'), not from both");
    return 0.f;
  }
  HALFCAF_ENFORCE(op.HasArgument("exponent"),
                  "Pow with one input needs the `exponent` argument (or the exponent tensor as "
                  "input 1)");
  return op.GetSingleArgument<float>("exponent", 0.f);
}

void EnforcePowShapes(const Tensor& X, const Tensor& E) {
  HALFCAF_ENFORCE(X.dims() == E.dims(), "Pow with two inputs needs X and the exponent E of the "
                  "same shape (broadcasting is not supported), got X dims ", DimsString(X.dims()),
                  " and E dims ", DimsString(E.dims()));
}

PowOp::PowOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), exponent_(ParsePowExponent(*this)) {}

void PowOp::RunOnDevice() {
  const Tensor& X = Input(0);
  EnforceFloatType(X, "X");
  const DataType dtype = X.dtype();
  const int64_t n = X.numel();
  const float* x = ReadAsFloat(X, &x_);
  if (InputSize() == 1) {
    FloatWriter y(Output(0, X.dims()), dtype, &y_);
    float* yd = y.data();
    const float p = exponent_;
    ParallelFor(n, 8.0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) yd[i] = std::pow(x[i], p);
    });
    y.Commit();
    return;
  }
  const Tensor& E = Input(1);
  EnforceFloatType(E, "exponent E");
  EnforcePowShapes(X, E);
  const float* ev = ReadAsFloat(E, &e_);
  FloatWriter y(Output(0, X.dims()), dtype, &y_);
  float* yd = y.data();
  ParallelFor(n, 8.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) yd[i] = std::pow(x[i], ev[i]);
  });
  y.Commit();
}

namespace {

// Caffe2's gradient, built from existing ops.
//   Argument form, dX = e * X^(e-1) * dY: Pow(X, exponent = e - 1) -> dX, Mul(dX, dY) -> dX,
//   Scale(dX, scale = e) -> dX. When Pow ran in place, X is gone and Y = X^e stands in its
//   place: the first op is then Pow(Y, exponent = (e - 1) / e), which is X^(e-1) only for X >= 0.
//   Two-input form (same shapes): dX = E * X^(E-1) * dY and dE = ln(X) * Y * dY, as
//   ConstantFill(E, value 1) -> dE, Sub(E, dE) -> dE, Pow(X, dE) -> dX, Mul(dX, dY) -> dX,
//   Mul(dX, E) -> dX, Log(X) -> t, Mul(t, Y) -> t, Mul(t, dY) -> dE (t = dE + "_autogen_pre_red").
// The forward arguments are not copied.
class GetPowGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;

  std::vector<OperatorDef> GetGradientDefs() override {
    if (args().HasArgument("exponent")) {
      HALFCAF_ENFORCE(NumInputs() == 1, "Pow with both an `exponent` argument and an exponent "
                      "input cannot be differentiated");
      const float e = args().GetSingleArgument<float>("exponent", 0.f);
      float lowered = e - 1.f;
      if (I(0) == O(0)) {
        HALFCAF_ENFORCE(std::fabs(e) > 1e-12f, "the gradient of an in-place Pow needs a nonzero "
                        "exponent (it recovers X from Y = X^exponent), got ", e);
        lowered = (e - 1.f) / e;
      }
      const std::string dx = GI(0);
      return {MakeOperatorDef("Pow", "", {I(0)}, {dx}, {MakeArgument("exponent", lowered)}),
              MakeOperatorDef("Mul", "", {dx, GO(0)}, {dx}),
              MakeOperatorDef("Scale", "", {dx}, {dx}, {MakeArgument("scale", e)})};
    }
    EnforceInputKeptForGradient(def_, 0);
    EnforceInputKeptForGradient(def_, 1);
    const std::string dx = GI(0), de = GI(1), t = GI(1) + "_autogen_pre_red";
    return {MakeOperatorDef("ConstantFill", "", {I(1)}, {de}, {MakeArgument("value", 1.f)}),
            MakeOperatorDef("Sub", "", {I(1), de}, {de}),
            MakeOperatorDef("Pow", "", {I(0), de}, {dx}),
            MakeOperatorDef("Mul", "", {dx, GO(0)}, {dx}),
            MakeOperatorDef("Mul", "", {dx, I(1)}, {dx}),
            MakeOperatorDef("Log", "", {I(0)}, {t}),
            MakeOperatorDef("Mul", "", {t, O(0)}, {t}),
            MakeOperatorDef("Mul", "", {t, GO(0)}, {de})};
  }

  bool CopyArguments() const override { return false; }
};

}  // namespace

REGISTER_CPU_OPERATOR(Pow, PowOp);
REGISTER_GRADIENT(Pow, GetPowGradient);

OPERATOR_SCHEMA(Pow)
    .NumInputs(1, 2)
    .NumOutputs(1)
    .AllowInplace({{0, 0}, {1, 0}})
    .IdenticalTypeAndShapeOfInput(0)
    .PointwiseCost(8)
    .SetDoc("Power, element-wise, in one of two forms: with one input X and the argument "
            "`exponent`, Y = X ^ exponent; with two inputs X and E of the same shape, "
            "Y[i] = X[i] ^ E[i] (giving both the argument and input 1 is an error). Negative X "
            "with a non-integer exponent gives NaN. Y has X's shape and type; float and float16 "
            "in any mix (computed in float). May run in place on X (or on E). Unlike Caffe2, E "
            "is never broadcast: `broadcast` / `axis` have no effect and other shapes are an "
            "error. Gradient (built from Pow, Mul and Scale; plus ConstantFill, Sub and Log for "
            "dE): dX = exponent * X^(exponent - 1) * dY, and dE = ln(X) * Y * dY. After an "
            "in-place Pow the gradient is rebuilt from Y, as in Caffe2, which is right only "
            "for X >= 0; the two-input form cannot be differentiated after running in place.")
    .Arg("exponent", "float: the power, for the one-input form")
    .Input(0, "X", "base, any shape")
    .Input(1, "exponent", "optional: exponents, X's shape (instead of the argument)")
    .Output(0, "Y", "X raised to the power, X's shape and type");

}  // namespace halfcaf
