// SpatialBN's per-channel loops on CPU (spatial_bn_op.cc): statistics, the affine map and the
// gradient's sums and map, for X in NCHW, NHWC or NCHW's channel-blocked form (block B > 0: X is
// (N, C / B, H, W, B), operators/nn/channel_block.h). Every sum runs in a fixed order whatever
// the thread count; float, float16 and bfloat16 data are read as floats (core/float_io.h), except
// NHWC tensors all float or all bfloat16, which the loops of spatial_bn_nhwc.h read as stored.
//
// The blocked loops sum each channel in the order the NCHW loops do (its values over a plane in
// eight float lanes, lanes and planes added in double), so a blocked X gives bit for bit the
// results of the same X in NCHW. The channel-blocked and NHWC loops are compiled for AVX2 and
// AVX-512F as well and take the widest vectors this CPU has, up to core/vector_width.h's cap.
#pragma once

#include <cstdint>
#include <functional>

#include "core/float_io.h"
#include "operators/nn/spatial_bn_op.h"

namespace halfcaf {

// y = x * a[c] + b[c], or with `relu` ReluNaN(x * a[c] + b[c]) (SpatialBN's fuse_relu); y may
// alias x.
void ChannelAffine(const BNShape& s, const BNLayout& l, const FloatIn& x, const float* a,
                   const float* b, const FloatOut& y, bool relu = false);

// A ReLU fused after the forward's affine map (SpatialBN's fuse_relu), for the gradient loops:
// they take in place of dy the ReLU's gradient, GatedGradient(y > 0, y, dy) with y = ReluNaN(x *
// alpha[c] + beta[c]) recomputed from x in the forward's arithmetic, so the result is that of a
// separate Relu / ReluGradient bit for bit. Float x and dy only.
struct BNReluGate {
  const float* alpha;
  const float* beta;
};

// Sets the coefficients of channels [c0, c1) from their sums once these are known; called once
// for each channel, for disjoint ranges from several threads at once.
using BNChannelFn = std::function<void(int64_t c0, int64_t c1)>;

// Training forward: per channel the mean and biased variance of x (two passes), then finish(c0,
// c1), which sets a and b of those channels, then y = x * a[c] + b[c] (ReluNaN'd with relu); y
// may alias x. On the channel-blocked layout a block of channels goes through all three while it
// is in cache.
void ChannelTrainingForward(const BNShape& s, const BNLayout& l, const FloatIn& x, double* mean,
                            double* var, const BNChannelFn& finish, const float* a, const float* b,
                            const FloatOut& y, bool relu);

// Gradient: per channel the sum of dy and the sum of dy * (x - mean) (dy gated with `gate`), then
// finish(c0, c1), which sets a, b and k of those channels, then dx = dy * a[c] + (x - mean[c]) *
// b[c] + k[c]; dx may alias dy. A block at a time on the channel-blocked layout, as above.
void ChannelGradient(const BNShape& s, const BNLayout& l, const FloatIn& x, const FloatIn& dy,
                     const float* mean, double* sum_dy, double* sum_dy_xc,
                     const BNChannelFn& finish, const float* a, const float* b, const float* k,
                     const BNReluGate* gate, const FloatOut& dx);

}  // namespace halfcaf
