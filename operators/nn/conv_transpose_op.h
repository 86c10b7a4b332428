// ConvTranspose: transposed convolution (the adjoint of Conv with the same filter, stride, pads
// and dilation), with optional bias. For each spatial dim, with dk = dilation * (kernel - 1) + 1,
//   out = (in - 1) * stride + dk + adj - pad_head - pad_tail
// (legacy_pad VALID or SAME: pads 0, as in Caffe2).
//   X      NCHW (N, M, in...) or, 2-D only, NHWC (N, H, W, M); float or float16
//   filter NCHW (M, C/group, kernel...) or NHWC (M, kH, kW, C/group)
//   bias   optional, (C)
//   Y      NCHW (N, C, out...) or NHWC (N, outH, outW, C), dtype of X
// Arguments: the conv set of conv_pool_op_base.h (kernel*, stride*, pad*, dilation*, legacy_pad
// NOTSET / VALID / SAME, group, order) plus adjs | adj | adj_h+adj_w (default 0, each in
// [0, max(stride, dilation)]).
//
// ConvTransposeGradient: (X, filter, dY) -> (dfilter, dbias[, dX]), or with no_bias=1
// (dfilter[, dX]); dX is computed only when its slot is present (Caffe2's rule, as Conv's).
#pragma once

#include <string>
#include <vector>

#include "operators/nn/conv_pool_op_base.h"

namespace halfcaf {

struct ConvTransposeArgs {
  ConvPoolArgs cp;
  std::vector<int64_t> adj;  // one per spatial dim
};

ConvTransposeArgs ParseConvTransposeArgs(const ArgumentHelper& args, const std::string& op_label);
ConvTransposeArgs ParseConvTransposeArgs(const OperatorDef& def);

// The geometry of ConvTranspose on concrete X and filter dims, expressed as the convolution it is
// the adjoint of: conv.in = Y's spatial sizes, conv.out = X's, conv.C = C (Y's channels),
// conv.pads the pads (heads, then tails). Validates X, the filter and the output sizes.
struct ConvTransposeGeometry {
  ConvPoolGeometry conv;
  int64_t M = 0;  // X's channels
  std::vector<int64_t> y_dims;
};
ConvTransposeGeometry ComputeConvTransposeGeometry(const ConvTransposeArgs& a,
                                                   const std::vector<int64_t>& x_dims,
                                                   const std::vector<int64_t>& filter_dims);

// Checks the bias dims (C) and dY's dims (Y's) against the geometry, naming the op.
void CheckConvTransposeBias(const ConvTransposeArgs& a, const ConvTransposeGeometry& g,
                            const std::vector<int64_t>& bias_dims);
void CheckConvTransposeGradientDY(const ConvTransposeArgs& a, const ConvTransposeGeometry& g,
                                  const std::vector<int64_t>& dy_dims);

class ConvTransposeOp final : public Operator<CPUContext> {
 public:
  ConvTransposeOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  ConvTransposeArgs a_;
  std::vector<float> x_, w_, b_, y_, col_;
};

class ConvTransposeGradientOp final : public Operator<CPUContext> {
 public:
  ConvTransposeGradientOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  ConvTransposeArgs a_;
  bool no_bias_;
  std::vector<float> x_, w_, dy_, dw_, db_, dx_, col_;
};

}  // namespace halfcaf
