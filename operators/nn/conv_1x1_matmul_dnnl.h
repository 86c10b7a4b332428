// The gradient of a pointwise convolution as two matrix products, for ConvGradient's DNNL engine
// (conv_op_dnnl.cc). A 2-D NHWC convolution with a 1 x 1 kernel, no padding and one group is a
// product: with stride 1, X is a (P, C) matrix (P = N * H * W rows of C channels), dY a (P, M)
// one and the filter an (M, C) one in either filter order, so
//   dW = dY^T X   (M, C)        dX = dY W   (P, C)
// which oneDNN's matmul primitive computes (FP32 accumulation, one rounding on output, as its
// convolution gradients do; in a different order, so the two agree within that rounding). With
// a stride, X's rows at the strided positions are gathered into scratch first (N * Ho * Wo rows),
// and dX is dY W at those positions and zero elsewhere.
//
// Why: with AMX, oneDNN 2.6's BF16 gradient kernels for these convolutions are far slower than
// its BF16 matmul (ResNet-50's 1 x 1 shapes at batch 8, 2 threads: the weight gradients of the
// twelve stride-1 shapes 26.6 ms against 11.1 ms, their data gradients 9.1 against 7.9; the
// three stride-2 projections 18.1 against 4.2 and 12.3 against 5.0; in the BF16 training step
// ConvGradient 165-192 -> 117-120 ms); on the AVX512_BF16 kernels without AMX the two take the
// same time within 1 %. So bfloat16 tensors computing in BF16 (bf16_kernels.h) take this path,
// float32 ones and bfloat16 ones computing in FP32 keep the convolution primitives, and so does a
// convolution with a bias (its gradient is the convolution primitive's). HALFCAF_DNNL_1X1_MATMUL=0
// in the environment turns it off.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

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
  // Builds the products for geometry `g` (N, C, H x W in, Ho x Wo out, the strides) and M output
  // channels in type `t` (dX's only with `compute_dx`); false when oneDNN has only reference code
  // for them.
  bool Build(const ConvPoolGeometry& g, int64_t M, dnnl::memory::data_type t, bool compute_dx);
  // dW from x and dy; dx (when not null) from dy and w. Inside an operator run.
  void Run(const void* x, const void* dy, const void* w, void* dw, void* dx);

 private:
  // X's rows at the strided positions into `to` (N * Ho * Wo rows).
  void Gather(const char* x, char* to) const;
  // dX from the product at the strided positions (`from`), zero elsewhere.
  void Scatter(const char* from, char* dx) const;

  int64_t N_ = 0, H_ = 0, W_ = 0, Ho_ = 0, Wo_ = 0, sh_ = 1, sw_ = 1;
  size_t row_bytes_ = 0;  // C elements
  bool strided_ = false, compute_dx_ = false;
  dnnl::memory dy_t_, x_, dw_;  // dW = dY^T X
  dnnl::memory dy_, w_, dx_;    // dX = dY W
  DnnlPrimitive prim_w_, prim_d_;
  std::vector<float> gathered_fallback_, product_fallback_;  // outside an operator run
};

}  // namespace halfcaf
