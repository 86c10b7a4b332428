// SpatialBN's per-channel loops on CPU (spatial_bn_op.cc): statistics, the affine map and the
// gradient's sums and map, for X in NCHW, NHWC or NCHW's channel-blocked form (block B > 0: X is
// (N, C / B, H, W, B), operators/nn/channel_block.h). Every sum runs in a fixed order whatever
// the thread count; float, float16 and bfloat16 data are read as floats (core/float_io.h).
//
// The blocked loops sum each channel in the order the NCHW loops do (its values over a plane in
// eight float lanes, lanes and planes added in double), so a blocked X gives bit for bit the
// results of the same X in NCHW.
#pragma once

#include <cstdint>

#include "core/float_io.h"
#include "operators/nn/spatial_bn_op.h"

namespace halfcaf {

// The vector widths the channel-blocked loops are compiled for; they take the widest this CPU has.
enum class BNWidth { kBaseline, kAvx2, kAvx512 };
bool BNWidthAvailable(BNWidth width);
// Caps the width the blocked loops take (tests run each width against the NCHW loops); returns
// the previous cap. The default cap is kAvx512.
BNWidth CapBlockedBNWidth(BNWidth width);

// Per-channel mean and biased variance of x (two passes).
void ChannelMeanVar(const BNShape& s, const BNLayout& l, const FloatIn& x, double* mean,
                    double* var);

// y = x * a[c] + b[c]; y may alias x.
void ChannelAffine(const BNShape& s, const BNLayout& l, const FloatIn& x, const float* a,
                   const float* b, const FloatOut& y);

// dx = dy * a[c] + (x - mean[c]) * b[c] + k[c]; dx may alias dy.
void ChannelBackward(const BNShape& s, const BNLayout& l, const FloatIn& dy, const FloatIn& x,
                     const float* mean, const float* a, const float* b, const float* k,
                     const FloatOut& dx);

// Per channel: the sum of dy and the sum of dy * (x - mean).
void ChannelGradSums(const BNShape& s, const BNLayout& l, const FloatIn& x, const FloatIn& dy,
                     const float* mean, double* sum_dy, double* sum_dy_xc);

}  // namespace halfcaf
