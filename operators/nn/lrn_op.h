// LRN: local response normalization across channels (Caffe2's LRN).
//   X      (N, C, spatial...) in NCHW or (N, spatial..., C) in NHWC, rank >= 2; float or float16
//   Y      X's shape and dtype: Y = X * scale^-beta
//   scale  optional second output, X's shape and dtype:
//          scale[c] = bias + alpha / size * sum of X[c']^2 over c' in [c - pre, c - pre + size - 1]
//          (channels outside [0, C) count as 0), pre = (size - 1) / 2
// Arguments: size (int, required, >= 1), alpha (float, 0), beta (float, 0), bias (float, 1),
// order ("NCHW").
//
// LRNGradient: Caffe2's form (X, Y, dY) -> dX recomputes scale from X; the form (X, Y, scale, dY)
// -> dX (the input tags of Caffe2's class) takes the forward's scale output instead.
//   dX[c] = dY[c] * scale[c]^-beta
//           - 2 alpha beta / size * X[c] * sum of dY[c'] Y[c'] / scale[c'] over the c' whose window
//             holds c.
#pragma once

#include <string>
#include <vector>

#include "core/argument.h"
#include "core/operator.h"
#include "operators/nn/conv_pool_op_base.h"

namespace halfcaf {

struct LrnArgs {
  std::string op_label;
  int size = 0;
  float alpha = 0.f, beta = 0.f, bias = 1.f;
  StorageOrder order = StorageOrder::NCHW;
  int pre_pad() const { return (size - 1) / 2; }
};

LrnArgs ParseLrnArgs(const ArgumentHelper& args, const std::string& op_label);

// X viewed as (outer, C, inner): NCHW (N, C, prod(spatial)), NHWC (N * prod(spatial), C, 1).
struct LrnView {
  int64_t outer = 0, C = 0, inner = 0;
};
// Throws naming `what` unless dims has rank >= 2.
LrnView LrnViewOf(const LrnArgs& a, const std::vector<int64_t>& dims, const char* what);

// Checks LRNGradient's inputs other than X against X (same dims), naming each.
void CheckLrnGradientInputs(const LrnArgs& a, const Tensor& X,
                            const std::vector<const Tensor*>& others,
                            const std::vector<const char*>& names);

class LRNOp final : public Operator<CPUContext> {
 public:
  LRNOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  LrnArgs a_;
  std::vector<float> x_, y_, scale_;
};

class LRNGradientOp final : public Operator<CPUContext> {
 public:
  LRNGradientOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  LrnArgs a_;
  std::vector<float> x_, y_, dy_, scale_in_, scale_, ratio_, dx_;
};

}  // namespace halfcaf
