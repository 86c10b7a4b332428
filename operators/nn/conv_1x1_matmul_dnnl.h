// The gradient of a pointwise convolution as two matrix products, for ConvGradient's DNNL engine
// (conv_op_dnnl.cc). A 2-D NHWC convolution with a 1 x 1 kernel, stride 1, no padding and one
// group is a product: X is a (P, C) matrix (P = N * H * W rows of C channels), dY a (P, M) one
// and the filter an (M, C) one in either filter order, so
//   dW = dY^T X   (M, C)        dX = dY W   (P, C)
// which oneDNN's matmul primitive computes (FP32 accumulation, one rounding on output, as its
// convolution gradients do; in a different order, so the two agree within that rounding).
//
// Why: with AMX, oneDNN 2.6's BF16 weight-gradient kernels for these convolutions run at a
// quarter to a half of the rate of its BF16 matmul (ResNet-50's 1 x 1 shapes at batch 8, 2
// threads: 26.5 ms against 9.0 ms for the twelve shapes, data gradients 7.8 against 6.5 ms); on
// the AVX512_BF16 kernels without AMX the two take the same time within 5 %. So bfloat16 tensors
// computing in BF16 (bf16_kernels.h) take this path, float32 ones and bfloat16 ones computing in
// FP32 keep the convolution primitives, and so does a convolution with a bias (its gradient is
// the convolution primitive's). HALFCAF_DNNL_1X1_MATMUL=0 in the environment turns it off.
#pragma once

#include <atomic>
#include <cstdint>
#include <unordered_map>

#include "operators/dnnl_util.h"
#include "operators/nn/conv_pool_op_base.h"

namespace halfcaf {

// Whether the convolution of `a` over geometry `g` is a pointwise product in the sense above, in
// bfloat16 computing in BF16 (`bf16_math`), without bias, and the path is not switched off.
bool Conv1x1GradientIsMatmul(const ConvPoolArgs& a, const ConvPoolGeometry& g, bool bias,
                             bool bf16_math);

// Runs of the matrix-product gradient in this process: tests check that it ran.
std::atomic<int64_t>& Conv1x1MatmulGradientRuns();

class Conv1x1MatmulGradient {
 public:
  // Builds the products for P rows, C input and M output channels in type `t` (dX's only with
  // `compute_dx`); false when oneDNN has only reference code for them.
  bool Build(int64_t P, int64_t C, int64_t M, dnnl::memory::data_type t, bool compute_dx);
  // dW from x and dy; dx (when not null) from dy and w. Inside an operator run.
  void Run(const void* x, const void* dy, const void* w, void* dw, void* dx);

 private:
  bool compute_dx_ = false;
  dnnl::memory dy_t_, x_, dw_;  // dW = dY^T X
  dnnl::memory dy_, w_, dx_;    // dX = dY W
  DnnlPrimitive prim_w_, prim_d_;
};

}  // namespace halfcaf
