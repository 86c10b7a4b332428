// MaxPool / AveragePool (aliases MaxPool1D/2D/3D, AveragePool1D/2D/3D): pooling over windows of
// any number of spatial dims (the length of `kernels`; 2 for the kernel / kernel_h+kernel_w forms).
//   X  NCHW (N, C, spatial...) or, 2-D only, NHWC (N, H, W, C); float, float16 or bfloat16
//   Y  same channels, spatial sizes from the conv/pool arguments (conv_pool_op_base.h); dtype of X
// A window's taps are `dilations` apart (default 1). AveragePool divides by the number of
// in-image taps of each window (padding excluded).
// global_pooling=1 pools each channel's whole image (Y spatial 1 per dim).
// The 2-D code is specialised; other ranks run a generic N-d NCHW loop with the same rules.
// With oneDNN, 2-D float and bfloat16 pooling runs on its primitives (engine DNNL, preferred on
// CPU: pool_op_dnnl.cc), with these results; this implementation runs the rest.
//
// With the argument channel_block = B (operators/nn/channel_block.h; 2-D windows, order NCHW), X
// and Y (dY and dX) are channel-blocked, (N, C / B, H, W, B): pooled as the NHWC tensor
// (N * C / B, H, W, B), whose windows are the NCHW ones with a block's channels side by side, so
// the results are the NCHW op's.
//
// <type>Gradient: (X, Y, dY) -> dX. Max pooling sends each window's gradient to the first element
// (in scan order, last dim fastest) holding the window's maximum.
#pragma once

#include <vector>

#include "operators/nn/conv_pool_op_base.h"

namespace halfcaf {

enum class PoolType { kMax, kAverage };

// NHWC is 2-D only (as in Caffe2's non-cuDNN engines): throws naming the op otherwise.
void CheckPoolLayout(const ConvPoolArgs& args);

// The argument channel_block, checked against the op's arguments (a block needs 2-D windows and
// order NCHW).
int64_t ReadPoolChannelBlock(const OperatorBase& op, const ConvPoolArgs& args);

// What a pool computes on: the geometry and order of the tensor it walks (with a channel block,
// the NHWC view of X) and Y's dims (blocked like X). Throws on a rank or block that does not fit.
struct PoolLayout {
  ConvPoolGeometry g;
  StorageOrder order = StorageOrder::NCHW;
  std::vector<int64_t> y_dims;
};
PoolLayout PoolLayoutOf(const ConvPoolArgs& args, int64_t block,
                        const std::vector<int64_t>& x_dims);

template <PoolType kType>
class PoolOp final : public ConvPoolOpBase<CPUContext> {
 public:
  PoolOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  const int64_t block_;
  std::vector<float> x_, y_;
};

template <PoolType kType>
class PoolGradientOp final : public ConvPoolOpBase<CPUContext> {
 public:
  PoolGradientOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  const int64_t block_;
  std::vector<float> x_, y_, dy_, dx_;
};

}  // namespace halfcaf
