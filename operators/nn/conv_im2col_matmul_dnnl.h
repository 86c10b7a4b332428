// The filter gradient of a 2-D NHWC bfloat16 convolution as one matrix product over its im2col
// columns, for ConvGradient's DNNL engine (conv_op_dnnl.cc). With P = N * Ho * Wo output
// positions, the columns are a (P, KH * KW * C) matrix: row p holds, for each filter tap (kh, kw)
// in turn, the C channels of X that the tap reads at p (zero where it reads the padding). Then
//   dW = dY^T col   (M, KH * KW * C)
// is the filter gradient in the filter order NHWC (M, KH, KW, C); for filter_order NCHW it is
// transposed into (M, C, KH, KW) afterwards. oneDNN's matmul computes it with FP32 accumulation
// and one rounding on output, as its convolution gradient does (in a different order, so the two
// agree within that rounding). dX stays with the convolution's data-gradient primitive.
//
// Why: with AMX, oneDNN 2.6's BF16 filter-gradient kernels run far below its BF16 matmul on
// small images and strided convolutions with many channels (ResNet-50's 3 x 3 shapes, 2 threads,
// the gradient and its reorder to the filter's layout, ms at batch 8 / 32, against im2col +
// matmul + transpose: 512 channels at 7 x 7 3.1 / 10.1 against 2.2 / 5.4; 512 channels, stride 2
// 5.6-6.4 / 19.4 against 2.2-2.4 / 5.8; 256 channels, stride 2 2.8-3.0 / 9.7 against 2.1 / 5.7;
// 256 channels at 14 x 14 1.6 / 5.8 against 1.9 / 5.6 alone, but 2.4-3.6 against 2.0-2.3 in the
// training step), while with fewer channels (128 at 28 x 28, 64 at 56 x 56, the 7 x 7 stem over 3)
// the convolution kernel is faster. Strided convolutions gain with fewer channels too: the
// AC-GAN discriminator's 4 x 4, stride 2 one over 64 channels (14 x 14 -> 7 x 7) 1.7 / 3.0 ms
// against 1.1 / 1.4 at batch 32 / 64 (at batch 8 0.52-0.76 against 0.41-0.68, within the noise),
// 3 x 3 over 128 channels with stride 2 at 28 x 28 -> 14 x 14 level at batch 8 and 5.8 against 5.0
// at 64, while with 864 columns or fewer the kernel wins at batch 8. So the path is taken with AMX
// for bfloat16 computing in BF16, without bias or groups, where the output has at most 196 (14 x
// 14) positions and C * KH * KW >= 2304, or >= 1024 with a stride, the shapes measured, and while
// the columns take at most 64 MiB. HALFCAF_DNNL_IM2COL_MATMUL=0 in the environment turns it off; =1
// takes it for every such convolution computing in BF16, whatever its size or CPU (tests).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "operators/dnnl_util.h"
#include "operators/nn/conv_pool_op_base.h"

namespace halfcaf {

// Whether the filter gradient of the convolution of `a` over geometry `g` runs as above (bf16_math:
// a bfloat16 convolution computing in BF16).
bool ConvFilterGradientIsIm2colMatmul(const ConvPoolArgs& a, const ConvPoolGeometry& g, bool bias,
                                      bool bf16_math);

// Runs of the im2col filter gradient in this process: tests check that it ran.
std::atomic<int64_t>& ConvIm2colFilterGradientRuns();

class ConvIm2colFilterGradient {
 public:
  // Builds the product for geometry `g` and M output channels in type `t`, the filter in NHWC
  // order (`filter_nhwc`) or NCHW; false when oneDNN has only reference code for it.
  bool Build(const ConvPoolGeometry& g, int64_t M, dnnl::memory::data_type t, bool filter_nhwc);
  // dW from x and dy. Inside an operator run.
  void Run(const void* x, const void* dy, void* dw);

 private:
  // The columns of x into `col` (P rows of KH * KW * C elements).
  void Im2col(const char* x, char* col) const;

  ConvPoolGeometry g_;
  size_t elem_ = 0, row_bytes_ = 0, col_row_bytes_ = 0;  // one element; C; a column row
  bool transpose_ = false;                               // filter_order NCHW
  dnnl::memory dy_t_, col_, product_;                    // product = dY^T col
  dnnl::memory khwc_, kchw_;                             // the transpose's two views
  DnnlPrimitive prim_, transpose_prim_;
  std::vector<float> col_fallback_, product_fallback_;  // outside an operator run
};

}  // namespace halfcaf
