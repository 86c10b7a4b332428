// im2col / col2im for convolution on CPU (one image at a time), so that a convolution becomes
// a GEMM. Out-of-image taps read as 0; col2im accumulates (+=) into the image.
//   NCHW: image (C, H, W) -> col (C * kH * kW, outH * outW), row index (c, kh, kw).
//   NHWC: channels [c_begin, c_begin + cg) of image (H, W, C) -> col (outH * outW, kH * kW * cg),
//         column index (kh, kw, c): the layout of an NHWC filter (M, kH, kW, cg).
//   N-d NCHW (any number of spatial dims, e.g. 1-D and 3-D): image (C, in...) ->
//         col (C * prod(kernel), prod(out)), row index (c, k...), column index (out...).
// The 2-D functions are the fast path; the N-d ones are generic (and also give 2-D results).
#pragma once

#include <cstdint>
#include <vector>

namespace halfcaf {

struct Im2ColShape {
  int64_t height, width;  // input spatial size
  int64_t kernel_h, kernel_w;
  int64_t dilation_h, dilation_w;
  int64_t pad_t, pad_l;
  int64_t stride_h, stride_w;
  int64_t out_h, out_w;
};

void Im2ColNCHW(const Im2ColShape& s, int64_t channels, const float* image, float* col);
void Col2ImNCHW(const Im2ColShape& s, int64_t channels, const float* col, float* image);

// `channels` is the image's total channel count, [c_begin, c_begin + cg) the slice gathered.
void Im2ColNHWC(const Im2ColShape& s, int64_t channels, int64_t c_begin, int64_t cg,
                const float* image, float* col);
void Col2ImNHWC(const Im2ColShape& s, int64_t channels, int64_t c_begin, int64_t cg,
                const float* col, float* image);

// One convolution's geometry for the N-d functions; every vector has one entry per spatial dim.
struct Im2ColNdShape {
  std::vector<int64_t> in, kernel, dilation, pad_head, stride, out;
};

void Im2ColNdNCHW(const Im2ColNdShape& s, int64_t channels, const float* image, float* col);
void Col2ImNdNCHW(const Im2ColNdShape& s, int64_t channels, const float* col, float* image);

}  // namespace halfcaf
