#include "operators/math/negative_op.h"

#include <vector>

#include "core/gradient.h"

namespace halfcaf {

template <typename T>
void NegativeOp::Negate(const Tensor& X) {
  const T* x = X.data<T>();
  T* y = Output(0, X.dims())->mutable_data<T>();
  const int64_t n = X.numel();
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (kIsFloat16Storage<T>) {
      // Flipping the sign bit is exact negation in float16 and bfloat16 (zeros, inf, nan too).
      y[i] = T::FromBits(static_cast<uint16_t>(x[i].x ^ 0x8000u));
    } else {
      y[i] = static_cast<T>(-x[i]);
    }
  }
}

void NegativeOp::RunOnDevice() {
  const Tensor& X = Input(0);
  switch (X.dtype()) {
    case DataType::FLOAT: Negate<float>(X); return;
    case DataType::DOUBLE: Negate<double>(X); return;
    case DataType::INT32: Negate<int32_t>(X); return;
    case DataType::INT64: Negate<int64_t>(X); return;
    case DataType::FLOAT16: Negate<Half>(X); return;
    case DataType::BFLOAT16: Negate<BFloat16>(X); return;
    default: break;
  }
  HALFCAF_THROW("Negative supports float, float16, bfloat16, double, int32 and int64 tensors, "
                "got ", X.DebugString());
}

namespace {

class GetNegativeGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("Negative", {GO(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(Negative, NegativeOp);
REGISTER_GRADIENT(Negative, GetNegativeGradient);

OPERATOR_SCHEMA(Negative)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(1)
    .SetDoc("Element-wise negation Y = -X. Float, float16, bfloat16, double, int32, int64. May "
            "run in place. Its gradient is Negative(dY).")
    .Input(0, "X", "input of any shape")
    .Output(0, "Y", "-X, X's shape and type");

}  // namespace halfcaf
