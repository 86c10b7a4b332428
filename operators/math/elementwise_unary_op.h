// Shared machinery for one-input element-wise operators Y = f(X) and their gradient operators
// dX = g(T, dY), where T is the forward output Y (Relu, Sigmoid, Tanh, Reciprocal, LeakyRelu,
// Elu, ...) or the forward input X (Abs). Float, float16 and bfloat16 data (16-bit data is computed
// in float, in pieces converted in cache, and rounded once on output). A Functor provides
//   float Forward(float x) const;
//   float Backward(float t, float dy) const;   (only when a gradient op uses it)
// either as static members, or as members of an object built from the operator's arguments by a
// constructor Functor(const OperatorBase& op, bool for_gradient) (LeakyRelu's and Elu's alpha).
// A Functor may also run bfloat16 tensors on their bit patterns, with the float path's exact
// results and no conversions (Relu: measured 3x faster on bfloat16 than converting in pieces):
//   static uint16_t ForwardBFloat16Bits(uint16_t x);
//   static uint16_t BackwardBFloat16Bits(uint16_t t, uint16_t dy);
#pragma once

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/operator.h"
#include "operators/cpu_parallel.h"
#include "operators/math/bf16_vector_loops.h"

namespace halfcaf {

template <class F, class = void>
struct HasBFloat16Bits : std::false_type {};
template <class F>
struct HasBFloat16Bits<F, std::void_t<decltype(F::ForwardBFloat16Bits(uint16_t{}))>>
    : std::true_type {};

template <class Functor>
Functor MakeUnaryFunctor(const OperatorBase& op, bool for_gradient) {
  if constexpr (std::is_constructible_v<Functor, const OperatorBase&, bool>) {
    return Functor(op, for_gradient);
  } else {
    return Functor();
  }
}

// A Functor whose gradient is ReLU's gate (kReluGate) runs bfloat16 gradients on AVX-512F vectors
// where the CPU has them (operators/math/bf16_vector_loops.h).
template <class F, class = void>
struct IsReluGate : std::false_type {};
template <class F>
struct IsReluGate<F, std::void_t<decltype(F::kReluGate)>> : std::bool_constant<F::kReluGate> {};

template <class Functor>
class UnaryElementwiseOp final : public Operator<CPUContext> {
 public:
  UnaryElementwiseOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), f_(MakeUnaryFunctor<Functor>(*this, false)) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFloatType(X, "X");
    if constexpr (HasBFloat16Bits<Functor>::value) {
      if (X.dtype() == DataType::BFLOAT16) {
        // Bit patterns as uint16_t (BFloat16 is one); before Output: Y may be X.
        const auto* x = reinterpret_cast<const uint16_t*>(X.data<BFloat16>());
        auto* y = reinterpret_cast<uint16_t*>(Output(0, X.dims())->template mutable_data<BFloat16>());
        ForEachPiece(X.numel(), 1.0, [&](int64_t off, int64_t n) {
          for (int64_t i = off; i < off + n; ++i) y[i] = Functor::ForwardBFloat16Bits(x[i]);
        });
        return;
      }
    }
    const FloatIn x(X);  // before Output: Y may be X
    const FloatOut y(Output(0, X.dims()), X.dtype());
    ForEachPiece(X.numel(), 1.0, [&](int64_t off, int64_t n) {
      const Functor f = f_;  // a local copy: its arguments stay in registers and the loop vectorises
      const float* xp = x.Read(off, n, 0);
      float* yp = y.Begin(off, n, 1);
      for (int64_t i = 0; i < n; ++i) yp[i] = f.Forward(xp[i]);
      y.End(off, n, yp);
    });
  }

 private:
  const Functor f_;
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
    if (InputSize() > 2) return RunSummed(Y, t_name);
    const Tensor& dY = Input(1);
    EnforceFloatType(Y, t_name);
    EnforceFloatType(dY, "dY");
    HALFCAF_ENFORCE(Y.dims() == dY.dims(), t_name, " and dY must have the same shape, got ",
                    DimsString(Y.dims()), " and ", DimsString(dY.dims()));
    if constexpr (HasBFloat16Bits<Functor>::value) {
      if (Y.dtype() == DataType::BFLOAT16 && dY.dtype() == DataType::BFLOAT16) {
        const auto* y = reinterpret_cast<const uint16_t*>(Y.data<BFloat16>());
        const auto* dy = reinterpret_cast<const uint16_t*>(dY.data<BFloat16>());  // dX may be dY
        auto* dx =
            reinterpret_cast<uint16_t*>(Output(0, Y.dims())->template mutable_data<BFloat16>());
        const uint16_t* const dys[1] = {dy};
        ForEachPiece(Y.numel(), 1.0, [&](int64_t off, int64_t n) {
          int64_t i = off;
          if constexpr (IsReluGate<Functor>::value) {
            i += ReluGradientBFloat16Vectors(y, dys, 1, dx, off, n);
          }
          for (; i < off + n; ++i) dx[i] = Functor::BackwardBFloat16Bits(y[i], dy[i]);
        });
        return;
      }
    }
    const FloatIn y(Y), dy(dY);  // before Output: dX may be dY
    const FloatOut dx(Output(0, Y.dims()), dY.dtype());
    ForEachPiece(Y.numel(), 1.0, [&](int64_t off, int64_t n) {
      const Functor f = f_;  // as in the forward op
      const float* yp = y.Read(off, n, 0);
      const float* dyp = dy.Read(off, n, 1);
      float* dxp = dx.Begin(off, n, 2);
      for (int64_t i = 0; i < n; ++i) dxp[i] = f.Backward(yp[i], dyp[i]);
      dx.End(off, n, dxp);
    });
  }

 private:
  // More than one dY (where the schema allows it: ReluGradient with the Sum before it folded in,
  // models/residual_relu_fusion.h): the gradient of their sum, added in float in input order as
  // Sum adds them, so the results are Sum's and the op's bit for bit. The dYs are of one type and
  // Y's shape, as Sum takes them; 16-bit ones give dX in their type, the sum rounded once as Sum
  // rounds it (ReluGradient selects dY, Y or 0, which rounding afterwards leaves the same).
  void RunSummed(const Tensor& Y, const char* t_name) {
    EnforceFloatType(Y, t_name);
    const DataType dtype = Input(1).dtype();
    bool all_float = Y.dtype() == DataType::FLOAT;
    for (int k = 1; k < InputSize(); ++k) {
      const Tensor& d = Input(k);
      HALFCAF_ENFORCE(IsFloatType(d.dtype()) && d.dtype() == dtype && d.dims() == Y.dims(), type(),
                      ": with more than one dY (their sum) every dY must be a float, "
                      "float16 or bfloat16 tensor of one type and of ",
                      t_name, "'s shape, got ", t_name, " ", Y.DebugString(), " and dY ", k - 1,
                      " ('", input_name(k), "') ", d.DebugString());
      all_float &= d.dtype() == DataType::FLOAT;
    }
    if (!all_float) return RunSummed16(Y, dtype);
    std::vector<const float*> dys;
    for (int k = 1; k < InputSize(); ++k) dys.push_back(Input(k).template data<float>());
    const float* y = Y.data<float>();
    float* dx = Output(0, Y.dims())->template mutable_data<float>();  // may be a dY
    const size_t m = dys.size();
    ForEachPiece(Y.numel(), static_cast<double>(m), [&](int64_t off, int64_t n) {
      const Functor f = f_;
      if (m == 2) {
        const float *d0 = dys[0], *d1 = dys[1];
        for (int64_t i = off; i < off + n; ++i) dx[i] = f.Backward(y[i], d0[i] + d1[i]);
        return;
      }
      for (int64_t i = off; i < off + n; ++i) {
        float sum = dys[0][i];
        for (size_t k = 1; k < m; ++k) sum += dys[k][i];
        dx[i] = f.Backward(y[i], sum);
      }
    });
  }

  // RunSummed with 16-bit dYs (or Y): converted a piece at a time, the sum in a thread buffer;
  // bfloat16 Y and dYs take the bit-pattern gradient on the rounded sum (as ReluGradient after
  // Sum does), the others the float one.
  void RunSummed16(const Tensor& Y, DataType dtype) {
    std::vector<FloatIn> dys;
    for (int k = 1; k < InputSize(); ++k) dys.emplace_back(Input(k));
    // The dYs' sum over [off, off + n) in float, in input order, in thread buffer 3.
    auto sum_of = [&dys](int64_t off, int64_t n) {
      float* sum = ThreadFloats(3, static_cast<size_t>(n));
      const float* d0 = dys[0].Read(off, n, 1);
      const float* d1 = dys[1].Read(off, n, 2);
      for (int64_t i = 0; i < n; ++i) sum[i] = d0[i] + d1[i];
      for (size_t k = 2; k < dys.size(); ++k) {
        const float* dk = dys[k].Read(off, n, 1);
        for (int64_t i = 0; i < n; ++i) sum[i] += dk[i];
      }
      return sum;
    };
    const double work = static_cast<double>(dys.size());
    if constexpr (HasBFloat16Bits<Functor>::value) {
      if (Y.dtype() == DataType::BFLOAT16 && dtype == DataType::BFLOAT16) {
        return RunSummedBFloat16Bits(Y);
      }
    }
    const FloatIn y(Y);
    const FloatOut dx(Output(0, Y.dims()), dtype);  // may be a dY: every piece is read first
    ForEachPiece(Y.numel(), work, [&](int64_t off, int64_t n) {
      const Functor f = f_;
      const float* sum = sum_of(off, n);
      const float* yp = y.Read(off, n, 0);
      float* dxp = dx.Begin(off, n, 2);
      for (int64_t i = 0; i < n; ++i) dxp[i] = f.Backward(yp[i], sum[i]);
      dx.End(off, n, dxp);
    });
  }

  // bfloat16 Y and dYs: blocks of the sum in float on the stack, rounded into dX (Sum's T), then
  // the bit-pattern gradient on it in place.
  void RunSummedBFloat16Bits(const Tensor& Y) {
    std::vector<const BFloat16*> dys;
    std::vector<const uint16_t*> bits;  // the same, as bit patterns
    for (int k = 1; k < InputSize(); ++k) {
      dys.push_back(Input(k).template data<BFloat16>());
      bits.push_back(reinterpret_cast<const uint16_t*>(dys.back()));
    }
    const auto* y = reinterpret_cast<const uint16_t*>(Y.data<BFloat16>());
    BFloat16* dx = Output(0, Y.dims())->template mutable_data<BFloat16>();  // may be a dY
    ForEachPiece(Y.numel(), static_cast<double>(dys.size()), [&](int64_t off, int64_t n) {
      int64_t done = 0;
      if constexpr (IsReluGate<Functor>::value) {
        done = ReluGradientBFloat16Vectors(y, bits.data(), bits.size(),
                                           reinterpret_cast<uint16_t*>(dx), off, n);
      }
      constexpr int64_t kBlock = 1024;
      float acc[kBlock], x[kBlock];
      for (int64_t b = off + done; b < off + n; b += kBlock) {
        const size_t len = static_cast<size_t>(std::min(kBlock, off + n - b));
        BFloat16ToFloatArray(dys[0] + b, acc, len);
        for (size_t k = 1; k < dys.size(); ++k) {
          BFloat16ToFloatArray(dys[k] + b, x, len);
          for (size_t i = 0; i < len; ++i) acc[i] += x[i];
        }
        FloatToBFloat16Array(acc, dx + b, len);
        auto* t = reinterpret_cast<uint16_t*>(dx + b);
        for (size_t i = 0; i < len; ++i) t[i] = Functor::BackwardBFloat16Bits(y[b + i], t[i]);
      }
    });
  }

  const Functor f_;
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
