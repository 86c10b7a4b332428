#include "operators/util/blob_lifetime_op.h"

#include <climits>

#include "core/gradient.h"

namespace halfcaf {

namespace {

// ZeroGradient -> ConstantFill(X, value 0) -> dX: a zero gradient of X's shape.
class GetZeroGradientGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("ConstantFill", {I(0)}, {GI(0)}, {MakeArgument("value", 0.f)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(Free, FreeOp<CPUContext>);
REGISTER_CPU_OPERATOR(ZeroGradient, ZeroGradientOp<CPUContext>);
SHOULD_NOT_DO_GRADIENT(Free);
REGISTER_GRADIENT(ZeroGradient, GetZeroGradientGradient);

OPERATOR_SCHEMA(Free)
    .NumInputs(1, INT_MAX)
    .NumOutputs(1, INT_MAX)
    .NumInputsOutputs([](int in, int out) { return in == out; })
    .EnforceOneToOneInplace()
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>&) {
      // Every output is an empty blob afterwards.
      return std::vector<TensorShape>(def.output_size(), TensorShape{{}, DataType::FLOAT, true});
    })
    .CostInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>&) {
      return OpCost{};
    })
    .SetDoc(
        "Frees blobs: each input (which must also be the output at the same position) is "
        "emptied and its data released. A later op reading a freed blob fails until "
        "something writes it again. Any contents. On CUDA the op's stream is drained first. "
        "Not differentiable (asking for its gradient is an error).")
    .Input(0, "X0, X1, ...", "blobs to free")
    .Output(0, "X0, X1, ...", "the same blobs, now empty");

OPERATOR_SCHEMA(ZeroGradient)
    .NumInputs(1)
    .NumOutputs(0)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>&) {
      return std::vector<TensorShape>{};
    })
    .CostInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>&) {
      return OpCost{};
    })
    .SetDoc(
        "Does nothing when run. In the backward pass it is always processed, although it "
        "has no outputs, and gives X the gradient ConstantFill(X, value 0): a float zero "
        "tensor of X's shape (summed with X's other gradients, if any). Use it to make sure "
        "a blob that does not reach the loss still gets a gradient blob.")
    .Input(0, "X", "blob that gets a zero gradient");

}  // namespace halfcaf
