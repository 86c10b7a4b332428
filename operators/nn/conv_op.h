// Conv (aliases Conv1D, Conv2D, Conv3D): convolution over any number of spatial dims (the length
// of `kernels`; 2 for the kernel / kernel_h+kernel_w forms), Y = X (*) filter + bias, computed per
// image and group as im2col + GEMM.
//   X      NCHW (N, C, spatial...) or, 2-D only, NHWC (N, H, W, C); float or float16
//   filter NCHW (M, C/group, kernel...) or NHWC (M, kH, kW, C/group), per filter_order (default:
//          order; halfcaf's argument: an NHWC convolution with an NCHW filter)
//   bias   optional, (M)
//   Y      NCHW (N, M, out...) or NHWC (N, outH, outW, M), dtype of X
// Arguments: the conv/pool set of conv_pool_op_base.h (kernel*, stride*, pad*, dilation*,
// legacy_pad, group, order). The aliases do not check the kernel's rank (as in Caffe2).
//
// ConvGradient (aliases Conv1DGradient, Conv2DGradient, Conv3DGradient): (X, filter, dY) ->
// (dfilter, dbias, dX), or with no_bias=1 (dfilter, dX); dX is computed only when its output slot
// is present.
#pragma once

#include <vector>

#include "operators/nn/conv_pool_op_base.h"
#include "operators/nn/im2col.h"

namespace halfcaf {

// Checks the filter against X's geometry, the kernel and group; returns M (output channels).
int64_t CheckConvFilter(const ConvPoolArgs& args, const ConvPoolGeometry& g,
                        const std::vector<int64_t>& filter_dims);
// Checks the bias dims (M) against the filter's.
void CheckConvBias(const ConvPoolArgs& args, const std::vector<int64_t>& bias_dims, int64_t M,
                   const std::vector<int64_t>& filter_dims);
// Checks dY of ConvGradient against the forward output dims.
void CheckConvGradientDY(const ConvPoolArgs& args, const std::vector<int64_t>& dy_dims,
                         const std::vector<int64_t>& y_dims, const std::vector<int64_t>& x_dims,
                         const std::vector<int64_t>& filter_dims);
// The filter (w_dims, in filter_order) in the op's order: w itself when they agree, else a
// transposed copy in *buf.
const float* FilterInOpOrder(const ConvPoolArgs& args, const std::vector<int64_t>& w_dims,
                             const float* w, std::vector<float>* buf);
// The inverse: a filter in the op's order written into `out` in filter_order (w_dims: its dims
// there).
void FilterToItsOrder(const ConvPoolArgs& args, const std::vector<int64_t>& w_dims,
                      const float* op_order, float* out);
// NHWC is 2-D only (as in Caffe2's non-cuDNN engines): throws naming the op otherwise.
void CheckConvLayout(const ConvPoolArgs& args);
// Checks ConvGradient's output count against no_bias: (dfilter[, dX]) or (dfilter, dbias[, dX]).
void CheckConvGradientOutputs(const ConvPoolArgs& args, bool no_bias, int num_outputs);

// A 2-D convolution (Conv, Conv2D or ConvFusion) on the CPU with a 3 x 3 filter, stride 1, no
// dilation and one group: the geometry Winograd's F(4x4, 3x3) computes (the argument
// conv_algorithm = 1, conv_op_dnnl.cc). The training and inference rewrites mark these.
bool IsWinogradCandidate(const OperatorDef& def);

class ConvOp final : public ConvPoolOpBase<CPUContext> {
 public:
  ConvOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  std::vector<float> x_, w_, w_op_, b_, y_, col_;
};

class ConvGradientOp final : public ConvPoolOpBase<CPUContext> {
 public:
  ConvGradientOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  bool no_bias_;
  std::vector<float> x_, w_, w_op_, dy_, dw_, dw_op_, db_, dx_, col_, col_grad_;
};

}  // namespace halfcaf
