// Clip: Y = min(max(X, min), max) element-wise; `min` / `max` (float) absent = unbounded.
// ClipGradient: (Y, dY) -> dX = dY where min < Y < max, else 0. Float and float16 (computed in
// float). Both may run in place (Clip: X -> Y; ClipGradient: dY -> dX).
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

// Reads `min` / `max` (absent = unbounded) and checks min <= max.
void ParseClipBounds(const OperatorBase& op, float* lo, float* hi);

class ClipOp final : public Operator<CPUContext> {
 public:
  ClipOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  float min_, max_;
  std::vector<float> x_, y_;
};

class ClipGradientOp final : public Operator<CPUContext> {
 public:
  ClipGradientOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  float min_, max_;
  std::vector<float> y_, dy_, dx_;
};

}  // namespace halfcaf
