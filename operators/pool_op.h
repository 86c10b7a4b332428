// MaxPool / AveragePool (aliases MaxPool2D / AveragePool2D): 2-D pooling over windows.
//   X  NCHW (N, C, H, W) or NHWC (N, H, W, C); float or float16
//   Y  same channels, spatial sizes from the conv/pool arguments (conv_pool_op_base.h); dtype of X
// AveragePool divides by the number of in-image elements of each window (padding excluded).
// global_pooling=1 pools each channel's whole image (Y spatial 1x1).
//
// MaxPoolGradient / AveragePoolGradient: (X, Y, dY) -> dX. Max pooling sends each window's
// gradient to the first element (in scan order) holding the window's maximum.
#pragma once

#include <vector>

#include "operators/conv_pool_op_base.h"

namespace halfcaf {

enum class PoolType { kMax, kAverage };

template <PoolType kType>
class PoolOp final : public ConvPoolOpBase<CPUContext> {
 public:
  PoolOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  std::vector<float> x_, y_;
};

template <PoolType kType>
class PoolGradientOp final : public ConvPoolOpBase<CPUContext> {
 public:
  PoolGradientOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  std::vector<float> x_, y_, dy_, dx_;
};

}  // namespace halfcaf
