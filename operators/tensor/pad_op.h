// PadImage: X -> Y, X (N, C, H, W) with order "NCHW" (default) or (N, H, W, C) with "NHWC", Y
//   with H and W grown by the pads, given like conv / pool pads: `pads` (ints t, l, b, r), `pad`
//   (all four) or pad_t + pad_l + pad_b + pad_r, each >= 0. `mode` (string):
//     "constant" (default): the border is `value` (float, default 0);
//     "reflect": mirrored around the edge without repeating it (dcba|abcd|dcba... one pad at most
//                dim - 1 wide);
//     "edge":    the edge element repeated.
//   As in Caffe2, stride and dilation must be 1 and legacy_pad NOTSET; a kernel argument is
//   ignored. Float and float16.
// PadImageGradient: dY -> dX: each element of dX is the sum of dY over the elements of Y that
//   copied it (constant mode: just the interior). Same arguments; dX's H and W are dY's minus the
//   pads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/operator.h"
#include "operators/nn/conv_pool_op_base.h"

namespace halfcaf {

// Values as in Caffe2 (and as gpu/pad_kernels.h expects).
enum class PadMode { kConstant = 0, kReflect = 1, kEdge = 2 };

struct PadImageArgs {
  std::string op;  // the operator, for messages
  StorageOrder order = StorageOrder::NCHW;
  PadMode mode = PadMode::kConstant;
  float value = 0.f;
  int64_t pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
};
PadImageArgs ParsePadImageArgs(const OperatorDef& def);

// The unpadded image X and the padded Y, each viewed as (outer, height, width, channels) with
// channels = 1 for NCHW (outer = N * C) and C for NHWC (outer = N).
struct PadImageGeometry {
  int64_t outer = 0, height = 0, width = 0, channels = 1;
  int64_t out_height = 0, out_width = 0;
  std::vector<int64_t> x_dims, y_dims;
};
// From X's dims (PadImage) or from dY's dims (PadImageGradient); checks rank and the mode's limits.
PadImageGeometry PadGeometryFromInput(const PadImageArgs& a, const std::vector<int64_t>& x_dims);
PadImageGeometry PadGeometryFromOutput(const PadImageArgs& a, const std::vector<int64_t>& y_dims);

// kGradient: PadImageGradient, else PadImage.
template <bool kGradient>
class PadImageOp final : public Operator<CPUContext> {
 public:
  PadImageOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  PadImageArgs args_pad_;
  std::vector<int64_t> src_h_, src_w_;
  std::vector<float> in_, out_;
};

}  // namespace halfcaf
