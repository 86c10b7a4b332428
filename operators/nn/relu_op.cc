// Relu: Y = max(X, 0). Gradient ReluGradient: (Y, dY) -> dX = dY where Y > 0. NaN propagates
// (core/nan_math.h): Relu(NaN) = NaN, and dX is NaN where Y or dY is. bfloat16 runs on the bit
// patterns, with the same results. ReluGradient (Y, dY0, dY1, ...) with more than one dY
// (halfcaf's; CPU; dYs of one type, as Sum takes them) takes the gradient of their sum: the Sum
// before it folded in (models/residual_relu_fusion.h), bit for bit the two ops.
#include <limits>

#include "core/gradient.h"
#include "core/nan_math.h"
#include "operators/math/elementwise_unary_op.h"

namespace halfcaf {

namespace {

// bfloat16 bit patterns: sign 0x8000, magnitude above 0x7f80 is NaN. A NaN that goes through
// float and back gets its quiet bit (0x40) set (FloatToBFloat16Bits); the bit functions do the
// same, so they equal the float path exactly.
constexpr uint16_t kBf16Sign = 0x8000, kBf16Magnitude = 0x7fff, kBf16Inf = 0x7f80,
                   kBf16Quiet = 0x40;

// All ones where b is a NaN, else 0 (branch-free, so the loops vectorize).
inline uint16_t NaNMask(uint16_t b) {
  return static_cast<uint16_t>(-static_cast<int>((b & kBf16Magnitude) > kBf16Inf));
}

struct ReluFunctor {
  static constexpr bool kReluGate = true;  // bfloat16 gradients on vectors (elementwise_unary_op.h)
  static float Forward(float x) { return ReluNaN(x); }
  static float Backward(float y, float dy) { return GatedGradient(y > 0.f, y, dy); }

  // NaN: quieted; negatives and -0: +0; the rest (+0, positives, +inf) unchanged.
  static uint16_t ForwardBFloat16Bits(uint16_t x) {
    const uint16_t nan = NaNMask(x);
    const uint16_t keep = static_cast<uint16_t>(-static_cast<int>((x & kBf16Sign) == 0)) | nan;
    return static_cast<uint16_t>((x | (nan & kBf16Quiet)) & keep);
  }
  // dY where Y > 0; else Y if it is NaN, dY if it is NaN, 0 (GatedGradient), NaNs quieted.
  static uint16_t BackwardBFloat16Bits(uint16_t y, uint16_t dy) {
    const uint16_t y_nan = NaNMask(y), dy_nan = NaNMask(dy);
    const int y_mag = y & kBf16Magnitude;
    const uint16_t positive =
        static_cast<uint16_t>(-static_cast<int>(((y & kBf16Sign) == 0) & (y_mag != 0))) &
        static_cast<uint16_t>(~y_nan);
    const uint16_t take_dy = positive | (static_cast<uint16_t>(~y_nan) & dy_nan);
    const uint16_t from_dy = take_dy & (dy | (dy_nan & kBf16Quiet));
    const uint16_t from_y = static_cast<uint16_t>(~take_dy) & y_nan & (y | kBf16Quiet);
    return static_cast<uint16_t>(from_dy | from_y);
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(Relu, UnaryElementwiseOp<ReluFunctor>);
REGISTER_CPU_OPERATOR(ReluGradient, UnaryElementwiseGradientOp<ReluFunctor>);
REGISTER_GRADIENT(Relu, GetGradientFromOutput);

OPERATOR_SCHEMA(Relu)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(1)
    .SetDoc("Rectified linear unit: Y = max(X, 0), element-wise; NaN stays NaN. Float, float16 and "
            "bfloat16.")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "output, same shape and type as X");

OPERATOR_SCHEMA(ReluGradient)
    .NumInputs(2, std::numeric_limits<int>::max())
    .NumOutputs(1)
    .AllowInplace([](int in, int out) { return in >= 1 && out == 0; })
    .IdenticalTypeAndShapeOfInput(1)
    .PointwiseCost(1)
    .SetDoc(
        "Gradient of Relu: dX = dY where Y > 0, else 0; NaN where Y or dY is NaN. With more "
        "than one dY (halfcaf; CPU; of one type), dY is their sum, added in float in input order "
        "and rounded once to their type (the Sum before it folded in).")
    .Input(0, "Y", "forward output")
    .Input(1, "dY", "gradient of Y (more inputs: further terms of it, summed)")
    .Output(0, "dX", "gradient of X");

}  // namespace halfcaf
