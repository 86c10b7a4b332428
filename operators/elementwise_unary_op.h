// Shared machinery for element-wise activations whose gradient depends only on the output:
// Y = f(X) and dX = g(Y, dY) (Relu, Sigmoid, Tanh, ...). Float and float16 data (float16 is
// computed in float and rounded once on output). A Functor provides
//   static float Forward(float x);
//   static float Backward(float y, float dy);
#pragma once

#include <vector>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/operator.h"
#include "operators/cpu_parallel.h"

namespace halfcaf {

template <class Functor>
class UnaryElementwiseOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;

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
      for (int64_t i = b; i < e; ++i) yd[i] = Functor::Forward(x[i]);
    });
    y.Commit();
  }

 private:
  std::vector<float> x_scratch_, y_scratch_;
};

template <class Functor>
class UnaryElementwiseGradientOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& Y = Input(0);
    const Tensor& dY = Input(1);
    EnforceFloatType(Y, "Y");
    EnforceFloatType(dY, "dY");
    HALFCAF_ENFORCE(Y.dims() == dY.dims(), "Y and dY must have the same shape, got ",
                    DimsString(Y.dims()), " and ", DimsString(dY.dims()));
    const float* y = ReadAsFloat(Y, &y_scratch_);
    const float* dy = ReadAsFloat(dY, &dy_scratch_);
    Tensor* dX = Output(0, Y.dims());
    FloatWriter dx(dX, dY.dtype(), &dx_scratch_);
    float* dxd = dx.data();
    const int64_t n = Y.numel();
    ParallelFor(n, 1.0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dxd[i] = Functor::Backward(y[i], dy[i]);
    });
    dx.Commit();
  }

 private:
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

}  // namespace halfcaf
