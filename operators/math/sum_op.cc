// Sum: Y = X0 + X1 + ... (all the same shape and type: float, float16, int32, int64).
// The gradient is a pass-through: every input's gradient is dY itself.
#include <algorithm>

#include "core/float_io.h"
#include "core/half.h"
#include "core/gradient.h"
#include "core/operator.h"
#include "operators/cpu_parallel.h"

namespace halfcaf {

namespace {

class SumOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& X0 = Input(0);
    for (int i = 1; i < InputSize(); ++i) {
      const Tensor& Xi = Input(i);
      HALFCAF_ENFORCE(Xi.dims() == X0.dims() && Xi.dtype() == X0.dtype(), "input ", i, " '",
                      input_name(i), "' is ", Xi.DebugString(), " but input 0 '", input_name(0),
                      "' is ", X0.DebugString(), ": all inputs must match");
    }
    const int64_t n = X0.numel();
    switch (X0.dtype()) {
      case DataType::FLOAT16: return Accumulate16<Half>(n);
      case DataType::BFLOAT16: return Accumulate16<BFloat16>(n);
      case DataType::FLOAT: return Accumulate<float>(n);
      case DataType::INT32: return Accumulate<int32_t>(n);
      case DataType::INT64: return Accumulate<int64_t>(n);
      case DataType::DOUBLE: return Accumulate<double>(n);
      default:
        HALFCAF_THROW("Sum supports float, float16, bfloat16, double, int32 and int64, got ",
                      X0.DebugString());
    }
  }

 private:
  // float16 / bfloat16: accumulated in float, rounded once, a block at a time (no
  // activation-sized float copies). Every input's block is read before the output's is written
  // (in place on input 0).
  template <typename T>
  void Accumulate16(int64_t n) {
    constexpr int64_t kBlock = 2048;
    const std::vector<int64_t> dims = Input(0).dims();
    addends_.clear();
    for (int i = 0; i < InputSize(); ++i) addends_.push_back(Input(i).data<T>());
    T* y = Output(0, dims)->mutable_data<T>();
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    ParallelFor(blocks, static_cast<double>(kBlock * InputSize()), [&](int64_t b0, int64_t b1) {
      float acc[kBlock], x[kBlock];
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t begin = b * kBlock, len = std::min(kBlock, n - begin);
        for (size_t i = 0; i < addends_.size(); ++i) {
          const T* xi = static_cast<const T*>(addends_[i]) + begin;
          ToFloatArray(xi, i == 0 ? acc : x, static_cast<size_t>(len));
          if (i > 0) {
            for (int64_t j = 0; j < len; ++j) acc[j] += x[j];
          }
        }
        FromFloatArray(acc, y + begin, static_cast<size_t>(len));
      }
    });
  }

  template <typename T>
  void Accumulate(int64_t n) {
    const std::vector<int64_t> dims = Input(0).dims();
    // Input 0 may be the output (in place): read it before anything is written.
    const T* x0 = Input(0).data<T>();
    Tensor* Y = Output(0, dims);
    T* y = Y->mutable_data<T>();
    addends_.clear();
    for (int i = 1; i < InputSize(); ++i) addends_.push_back(Input(i).data<T>());
    ParallelFor(n, static_cast<double>(InputSize()), [&](int64_t b, int64_t e) {
      if (y != x0) std::copy(x0 + b, x0 + e, y + b);
      for (const void* p : addends_) {
        const T* x = static_cast<const T*>(p);
        for (int64_t j = b; j < e; ++j) y[j] += x[j];
      }
    });
  }

  std::vector<const void*> addends_;
};

class GetSumGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    for (int i = 0; i < NumInputs(); ++i) SetDense(i, GO(0));
    return {};
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(Sum, SumOp);
REGISTER_GRADIENT(Sum, GetSumGradient);

OPERATOR_SCHEMA(Sum)
    .NumInputs(1, 1 << 30)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShapeOfInput(0)
    .CostInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      OpCost c;
      double n = static_cast<double>(in.at(0).numel());
      c.flops = n * (in.size() - 1);
      c.bytes_read = n * in.size() * DataTypeSize(in[0].dtype);
      c.bytes_written = n * DataTypeSize(in[0].dtype);
      return c;
    })
    .SetDoc("Element-wise sum of all inputs, which must share shape and type (float; float16 "
            "and bfloat16, accumulated in float; double, int32, int64). May run in place on "
            "input 0.")
    .Input(0, "X0", "first addend; further inputs X1, X2, ...")
    .Output(0, "Y", "the sum");

}  // namespace halfcaf
