#include "operators/tensor/copy_op.h"

#include "core/gradient.h"

namespace halfcaf {

void CopyOp::RunOnDevice() { Output(0)->CopyFrom(Input(0)); }

void CopyOnDeviceLikeOp::RunOnDevice() {
  // The CPU version: `like` is on CPU too, so this is a plain copy.
  Output(0)->CopyFrom(Input(0));
}

void AliasOp::RunOnDevice() {
  const Tensor& X = Input(0);
  Tensor* Y = Output(0);
  if (Y != &X) Y->ShareData(X);
}

const Tensor& TensorInputAnyDevice(const OperatorBase& op, int i) {
  const Blob& b = op.InputBlob(i);
  HALFCAF_ENFORCE(b.IsTensor(), "input ", i, " '", op.input_name(i), "' ",
                  b.empty() ? "is empty (nothing has written it yet)"
                            : "holds a non-tensor object");
  const Tensor& t = b.GetTensor();
  HALFCAF_ENFORCE(t.dtype() != DataType::UNDEFINED, "input ", i, " '", op.input_name(i),
                  "' has no data yet (nothing has written it)");
  return t;
}

void EnsureCPUOutputOp::RunOnDevice() {
  // Any device: in a CUDA build a GPU input is copied back to the host here too.
  const Tensor& X = TensorInputAnyDevice(*this, 0);
  OutputBlob(0)->GetMutableTensor(Device())->CopyFrom(X);
}

void CopyFromCPUInputOp::RunOnDevice() { Output(0)->CopyFrom(CPUInput(0)); }

void StopGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  Tensor* Y = Output(0);
  if (Y != &X) Y->CopyFrom(X);
}

namespace {

class GetCopyGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("CopyOnDeviceLike", {GO(0), I(0)}, {GI(0)});
  }
};

class GetAliasGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    SetDense(0, GO(0));
    return {};
  }
};

OpCost CopyCost(const OperatorDef&, const std::vector<TensorShape>& in) {
  OpCost c;
  c.bytes_read = static_cast<double>(in.at(0).numel()) * DataTypeSize(in[0].dtype);
  c.bytes_written = c.bytes_read;
  return c;
}

}  // namespace

REGISTER_CPU_OPERATOR(Copy, CopyOp);
REGISTER_CPU_OPERATOR(CopyOnDeviceLike, CopyOnDeviceLikeOp);
REGISTER_CPU_OPERATOR(Alias, AliasOp);
REGISTER_CPU_OPERATOR(StopGradient, StopGradientOp);
REGISTER_CPU_OPERATOR(EnsureCPUOutput, EnsureCPUOutputOp);
REGISTER_CPU_OPERATOR(CopyFromCPUInput, CopyFromCPUInputOp);
REGISTER_GRADIENT(Copy, GetCopyGradient);
REGISTER_GRADIENT(Alias, GetAliasGradient);
NO_GRADIENT(StopGradient);
NO_GRADIENT(EnsureCPUOutput);
NO_GRADIENT(CopyFromCPUInput);

OPERATOR_SCHEMA(Copy)
    .NumInputs(1)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .CostInferenceFunction(CopyCost)
    .SetDoc("Copies X into Y on the op's device. Any data type. Gradient: "
            "CopyOnDeviceLike(dY, X).")
    .Input(0, "X", "tensor to copy")
    .Output(0, "Y", "a copy of X");

OPERATOR_SCHEMA(CopyOnDeviceLike)
    .NumInputs(2)
    .NumOutputs(1)
    .IdenticalTypeAndShapeOfInput(0)
    .CostInferenceFunction(CopyCost)
    .SetDoc("Copies X to the device that holds `like` (on CPU a plain copy). Any data type. "
            "Used as the gradient of Copy.")
    .Input(0, "X", "tensor to copy")
    .Input(1, "like", "a tensor on the destination device")
    .Output(0, "Y", "a copy of X");

OPERATOR_SCHEMA(Alias)
    .NumInputs(1)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .SetDoc("Makes Y a second name for X's data: Y shares X's storage, so nothing is copied and "
            "a later write to either is seen by both. Any data type. The gradient of X is the "
            "gradient of Y (no op).")
    .Input(0, "X", "tensor to alias")
    .Output(0, "Y", "view of X's storage");

OPERATOR_SCHEMA(EnsureCPUOutput)
    .NumInputs(1)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .CostInferenceFunction(CopyCost)
    .SetDoc("Copies X into Y, which is always a CPU tensor: X may be on the CPU or on the op's "
            "device (a CUDA op copies a GPU X back to the host, waiting for it). Any data type. "
            "No gradient.")
    .Input(0, "X", "tensor on the CPU or on the op's device")
    .Output(0, "Y", "a CPU copy of X");

OPERATOR_SCHEMA(CopyFromCPUInput)
    .NumInputs(1)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .CostInferenceFunction(CopyCost)
    .SetDoc("Copies X, which must be a CPU tensor, into Y on the op's device: on CPU a plain "
            "copy, on CUDA a host-to-device copy queued on the op's stream (through a pinned "
            "staging buffer, like CopyCPUToGPU). Any data type. No gradient.")
    .Input(0, "X", "CPU tensor")
    .Output(0, "Y", "a copy of X on the op's device");

OPERATOR_SCHEMA(StopGradient)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .CostInferenceFunction(CopyCost)
    .SetDoc("Identity (Y is a copy of X, or X itself in place) that blocks back-propagation: no "
            "gradient flows to X through this op. Any data type.")
    .Input(0, "X", "input tensor")
    .Output(0, "Y", "X unchanged");

}  // namespace halfcaf
