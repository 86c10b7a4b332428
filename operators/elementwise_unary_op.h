// Shared machinery for one-input element-wise operators Y = f(X) and their gradient operators
// dX = g(T, dY), where T is the forward output Y (Relu, Sigmoid, Tanh, Reciprocal, LeakyRelu,
// Elu, ...) or the forward input X (Abs). Float and float16 data (float16 is computed in float and
// rounded once on output). A Functor provides
//   float Forward(float x) const;
//   float Backward(float t, float dy) const;   (only when a gradient op uses it)
// either as static members, or as members of an object built from the operator's arguments by a
// constructor Functor(const OperatorBase& op, bool for_gradient) (LeakyRelu's and Elu's alpha).
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/operator.h"
#include "operators/cpu_parallel.h"

namespace halfcaf {

template <class Functor>
Functor MakeUnaryFunctor(const OperatorBase& op, bool for_gradient) {
  if constexpr (std::is_constructible_v<Functor, const OperatorBase&, bool>) {
    return Functor(op, for_gradient);
  } else {
    return Functor();
  }
}

template <class Functor>
class UnaryElementwiseOp final : public Operator<CPUContext> {
 public:
  UnaryElementwiseOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), f_(MakeUnaryFunctor<Functor>(*this, false)) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFloatType(X, "X");
    const DataType dtype = X.dtype();
    const float* x = ReadAsFloat(X, &x_scratch_);
    Tensor* Y = Output(0, X.dims());
    FloatWriter y(Y, dtype, &y_scratch_);
    float* yd = y.data();
    const int64_t n = X.numel();
    ParallelFor(n, 1.0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) yd[i] = f_.Forward(x[i]);
    });
    y.Commit();
  }

 private:
  const Functor f_;
  std::vector<float> x_scratch_, y_scratch_;
};

// Input 0 is the forward output Y, or the forward input X when kFromInput (AbsGradient).
template <class Functor, bool kFromInput = false>
class UnaryElementwiseGradientOp final : public Operator<CPUContext> {
 public:
  UnaryElementwiseGradientOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), f_(MakeUnaryFunctor<Functor>(*this, true)) {}

  void RunOnDevice() override {
    const char* t_name = kFromInput ? "X" : "Y";
    const Tensor& Y = Input(0);
    const Tensor& dY = Input(1);
    EnforceFloatType(Y, t_name);
    EnforceFloatType(dY, "dY");
    HALFCAF_ENFORCE(Y.dims() == dY.dims(), t_name, " and dY must have the same shape, got ",
                    DimsString(Y.dims()), " and ", DimsString(dY.dims()));
    const float* y = ReadAsFloat(Y, &y_scratch_);
    const float* dy = ReadAsFloat(dY, &dy_scratch_);
    Tensor* dX = Output(0, Y.dims());
    FloatWriter dx(dX, dY.dtype(), &dx_scratch_);
    float* dxd = dx.data();
    const int64_t n = Y.numel();
    ParallelFor(n, 1.0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dxd[i] = f_.Backward(y[i], dy[i]);
    });
    dx.Commit();
  }

 private:
  const Functor f_;
  std::vector<float> y_scratch_, dy_scratch_, dx_scratch_;
};

// Gradient maker of these ops: <Type>Gradient(Y, dY) -> dX.
class GetGradientFromOutput : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef(def_.type() + "Gradient", {O(0), GO(0)}, {GI(0)});
  }
};

// For gradient makers whose ops read a forward input: throws when the forward op wrote its output
// over input `i` (the value the gradient needs is gone by the time the gradient runs).
inline void EnforceInputKeptForGradient(const OperatorDef& def, int i) {
  HALFCAF_ENFORCE(def.input(i) != def.output(0), "the gradient of ", def.type(),
                  " reads its input ", i, " ('", def.input(i),
                  "'), which the operator overwrites in place; write the output to another blob");
}

}  // namespace halfcaf
