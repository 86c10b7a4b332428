// Same-device copies and aliases. All work on any data type.
//
// Copy: X -> Y, a deep copy on the op's device. Gradient: CopyOnDeviceLike(dY, X) -> dX.
// CopyOnDeviceLike: (X, like) -> Y, a copy of X on the device that holds `like` (on CPU: a copy).
// Alias: X -> Y where Y shares X's storage (no copy; writing one writes the other). Gradient:
//   pass-through (dX is dY, no op).
// StopGradient: X -> Y, identity (a copy, or nothing in place); blocks gradients.
// EnsureCPUOutput: X -> Y, a copy of X that is always a CPU tensor; X may be on the CPU or on the
//   op's device (Caffe2's InputsCanCrossDevices). No gradient.
// CopyFromCPUInput: X -> Y, where X is always a CPU tensor and Y lives on the op's device (on CPU
//   a copy; on CUDA a host-to-device copy queued on the op's stream). No gradient.
#pragma once

#include "core/operator.h"

namespace halfcaf {

class CopyOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;
};

class CopyOnDeviceLikeOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;
};

class AliasOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;
};

class EnsureCPUOutputOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;
};

class CopyFromCPUInputOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;
};

// Input `i` of `op` as a tensor on any device, checked like Input(i) except for the device.
const Tensor& TensorInputAnyDevice(const OperatorBase& op, int i);

class StopGradientOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;
};

}  // namespace halfcaf
