#include "operators/im2col.h"

#include <algorithm>

namespace halfcaf {

namespace {
inline bool Inside(int64_t v, int64_t n) { return v >= 0 && v < n; }
}  // namespace

void Im2ColNCHW(const Im2ColShape& s, int64_t channels, const float* image, float* col) {
  const int64_t out_hw = s.out_h * s.out_w;
  for (int64_t c = 0; c < channels; ++c) {
    const float* plane = image + c * s.height * s.width;
    for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
        float* row = col + ((c * s.kernel_h + kh) * s.kernel_w + kw) * out_hw;
        for (int64_t oh = 0; oh < s.out_h; ++oh) {
          float* dst = row + oh * s.out_w;
          const int64_t ih = oh * s.stride_h - s.pad_t + kh * s.dilation_h;
          if (!Inside(ih, s.height)) {
            std::fill_n(dst, s.out_w, 0.f);
            continue;
          }
          const float* src = plane + ih * s.width;
          int64_t iw = kw * s.dilation_w - s.pad_l;
          for (int64_t ow = 0; ow < s.out_w; ++ow, iw += s.stride_w) {
            dst[ow] = Inside(iw, s.width) ? src[iw] : 0.f;
          }
        }
      }
    }
  }
}

void Col2ImNCHW(const Im2ColShape& s, int64_t channels, const float* col, float* image) {
  const int64_t out_hw = s.out_h * s.out_w;
  for (int64_t c = 0; c < channels; ++c) {
    float* plane = image + c * s.height * s.width;
    for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
        const float* row = col + ((c * s.kernel_h + kh) * s.kernel_w + kw) * out_hw;
        for (int64_t oh = 0; oh < s.out_h; ++oh) {
          const int64_t ih = oh * s.stride_h - s.pad_t + kh * s.dilation_h;
          if (!Inside(ih, s.height)) continue;
          const float* src = row + oh * s.out_w;
          float* dst = plane + ih * s.width;
          int64_t iw = kw * s.dilation_w - s.pad_l;
          for (int64_t ow = 0; ow < s.out_w; ++ow, iw += s.stride_w) {
            if (Inside(iw, s.width)) dst[iw] += src[ow];
          }
        }
      }
    }
  }
}

void Im2ColNHWC(const Im2ColShape& s, int64_t channels, int64_t c_begin, int64_t cg,
                const float* image, float* col) {
  for (int64_t oh = 0; oh < s.out_h; ++oh) {
    for (int64_t ow = 0; ow < s.out_w; ++ow) {
      float* dst = col + (oh * s.out_w + ow) * s.kernel_h * s.kernel_w * cg;
      for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
        const int64_t ih = oh * s.stride_h - s.pad_t + kh * s.dilation_h;
        for (int64_t kw = 0; kw < s.kernel_w; ++kw, dst += cg) {
          const int64_t iw = ow * s.stride_w - s.pad_l + kw * s.dilation_w;
          if (Inside(ih, s.height) && Inside(iw, s.width)) {
            const float* src = image + (ih * s.width + iw) * channels + c_begin;
            std::copy(src, src + cg, dst);
          } else {
            std::fill_n(dst, cg, 0.f);
          }
        }
      }
    }
  }
}

void Col2ImNHWC(const Im2ColShape& s, int64_t channels, int64_t c_begin, int64_t cg,
                const float* col, float* image) {
  for (int64_t oh = 0; oh < s.out_h; ++oh) {
    for (int64_t ow = 0; ow < s.out_w; ++ow) {
      const float* src = col + (oh * s.out_w + ow) * s.kernel_h * s.kernel_w * cg;
      for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
        const int64_t ih = oh * s.stride_h - s.pad_t + kh * s.dilation_h;
        for (int64_t kw = 0; kw < s.kernel_w; ++kw, src += cg) {
          const int64_t iw = ow * s.stride_w - s.pad_l + kw * s.dilation_w;
          if (!Inside(ih, s.height) || !Inside(iw, s.width)) continue;
          float* dst = image + (ih * s.width + iw) * channels + c_begin;
          for (int64_t c = 0; c < cg; ++c) dst[c] += src[c];
        }
      }
    }
  }
}

}  // namespace halfcaf
