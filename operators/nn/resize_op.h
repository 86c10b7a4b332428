// ResizeNearest / ResizeBilinear: resizing the two spatial dims of a 4-D batch of images by scale
// factors (Caffe2's ResizeNearest, and its UpsampleBilinear's interpolation under the name
// ResizeBilinear).
//   X       NCHW (N, C, H, W) or NHWC (N, H, W, C); float or float16
//   scales  optional input: 1-D float (2) [height_scale, width_scale], replacing the arguments
//   Y       (N, C, OH, OW) or (N, OH, OW, C), dtype of X, OH = floor(H * height_scale),
//           OW = floor(W * width_scale) (the product taken in float)
// Arguments: height_scale, width_scale (float, default 1, > 0), order ("NCHW"),
// coordinate_transformation_mode (ResizeNearest: "asymmetric", ResizeBilinear: "align_corners",
// the Caffe2 behaviours; see the schema docs) and, ResizeNearest only, nearest_mode ("floor").
// coordinate_transformation_mode on ResizeNearest and nearest_mode are halfcaf extensions (ONNX's).
//
// Output index o of a spatial dim of input size `in`, output size `out`, scale s reads:
//   ResizeNearest:  asymmetric + floor (Caffe2's, the default): i = min(floor(o / s), in - 1), the
//                   quotient in float; every other pair computes src in double (align_corners:
//                   o * (in - 1) / (out - 1), 0 when out == 1; half_pixel: (o + 0.5) / s - 0.5;
//                   pytorch_half_pixel: the same, 0 when out == 1; asymmetric: o / s;
//                   tf_half_pixel_for_nn: (o + 0.5) / s), rounds it by nearest_mode (floor,
//                   ceil, round_prefer_floor: halves down, round_prefer_ceil: halves up) and
//                   clamps the result to [0, in - 1];
//   ResizeBilinear: src = align_corners: o * (in - 1) / (out - 1) (0 when out == 1);
//                   half_pixel: (o + 0.5) / s - 0.5; pytorch_half_pixel: the same, 0 when
//                   out == 1; asymmetric: o / s; then src is clamped to [0, in - 1] and
//                   interpolated between i0 = floor(src) and i1 = min(i0 + 1, in - 1) with weights
//                   1 - (src - i0) and src - i0.
// Both dims are computed on the host into tables (ResizeTaps) that the CPU and CUDA kernels share.
//
// <type>Gradient: (dY, X[, scales]) -> dX, X's shape and dtype. Each dX element sums, in output
// order, the dY elements that read it times their weights (ResizeGather), on CPU and CUDA alike.
#pragma once

#include <string>
#include <vector>

#include "core/argument.h"
#include "core/tensor.h"
#include "operators/nn/conv_pool_op_base.h"

namespace halfcaf {

enum class ResizeKind { kNearest, kBilinear };
enum class ResizeCoordinates {
  kAlignCorners,
  kHalfPixel,
  kPytorchHalfPixel,
  kAsymmetric,
  kTfHalfPixelForNN,  // nearest only
};
enum class NearestMode { kFloor, kCeil, kRoundPreferFloor, kRoundPreferCeil };

struct ResizeArgs {
  std::string op_label;
  ResizeKind kind = ResizeKind::kNearest;
  float height_scale = 1.f, width_scale = 1.f;
  StorageOrder order = StorageOrder::NCHW;
  // Defaults: Caffe2's ResizeNearest (asymmetric, floor) / UpsampleBilinear (align_corners).
  ResizeCoordinates coordinates = ResizeCoordinates::kAsymmetric;
  NearestMode nearest_mode = NearestMode::kFloor;  // nearest only
};

ResizeArgs ParseResizeArgs(const ArgumentHelper& args, ResizeKind kind,
                           const std::string& op_label);
// Replaces the scales by the values of a 'scales' input (a float tensor on the host).
void SetScalesFromInput(ResizeArgs* a, const Tensor& scales);

struct ResizeGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0, OH = 0, OW = 0;
  bool nhwc = false;
  std::vector<int64_t> YDims() const;
};
// Throws unless X is 4-D.
ResizeGeometry ComputeResizeGeometry(const ResizeArgs& a, const std::vector<int64_t>& x_dims);
// Throws unless dY has the dims the forward op gives for X.
void CheckResizeGradientDY(const ResizeArgs& a, const ResizeGeometry& g,
                           const std::vector<int64_t>& dy_dims);

// One spatial dim: output o reads input i0[o] (nearest), or l0[o] * X[i0[o]] + l1[o] * X[i1[o]]
// (bilinear).
struct ResizeTaps {
  std::vector<int64_t> i0, i1;
  std::vector<float> l0, l1;
};
ResizeTaps MakeResizeTaps(const ResizeArgs& a, int64_t in, int64_t out, float scale);
// ResizeNearest's input index for output o (the rule above).
int64_t NearestSourceIndex(const ResizeArgs& a, int64_t o, int64_t in, int64_t out, float scale);

// The converse: input i is read by outputs out[k] with weights weight[k] (zero weights left
// out), k in [offsets[i], offsets[i + 1]), in increasing output order.
struct ResizeGather {
  std::vector<int64_t> offsets, out;
  std::vector<float> weight;
};
ResizeGather MakeResizeGather(const ResizeTaps& taps, int64_t in, bool nearest);

}  // namespace halfcaf
