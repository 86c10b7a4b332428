#include "operators/nn/im2col.h"

#include <algorithm>
#include <vector>

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

namespace {

int64_t Product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t x : v) n *= x;
  return n;
}

// Visits one channel's column block as runs along the last spatial dim: for each kernel offset
// (row `k` of the block) and each output position of the leading dims, calls
// f(k, first column of the run, whether the leading-dim taps are inside the image, the flat index
// of the start of the input row they address, the last-dim input index of the run's first tap).
template <typename F>
void ForEachRun(const Im2ColNdShape& s, F&& f) {
  const int nd = static_cast<int>(s.in.size());
  const int64_t kernel_size = Product(s.kernel), out_size = Product(s.out);
  if (out_size == 0) return;
  const int last = nd - 1;
  const int64_t runs = out_size / s.out[last];
  std::vector<int64_t> k(nd, 0), o(nd, 0);
  for (int64_t kr = 0; kr < kernel_size; ++kr) {
    std::fill(o.begin(), o.end(), 0);
    for (int64_t run = 0; run < runs; ++run) {
      bool inside = true;
      int64_t base = 0;
      for (int d = 0; d < last; ++d) {
        const int64_t i = o[d] * s.stride[d] - s.pad_head[d] + k[d] * s.dilation[d];
        inside = inside && i >= 0 && i < s.in[d];
        base = base * s.in[d] + i;
      }
      f(kr, run * s.out[last], inside, base * s.in[last],
        k[last] * s.dilation[last] - s.pad_head[last]);
      for (int d = last - 1; d >= 0; --d) {  // next output position of the leading dims
        if (++o[d] < s.out[d]) break;
        o[d] = 0;
      }
    }
    for (int d = last; d >= 0; --d) {  // next kernel offset
      if (++k[d] < s.kernel[d]) break;
      k[d] = 0;
    }
  }
}

}  // namespace

void Im2ColNdNCHW(const Im2ColNdShape& s, int64_t channels, const float* image, float* col) {
  const int64_t in_size = Product(s.in), out_size = Product(s.out), K = Product(s.kernel);
  const int64_t width = s.in.back(), out_w = s.out.back(), stride_w = s.stride.back();
  for (int64_t c = 0; c < channels; ++c) {
    const float* plane = image + c * in_size;
    float* block = col + c * K * out_size;
    ForEachRun(s, [&](int64_t k, int64_t col0, bool inside, int64_t base, int64_t i0) {
      float* dst = block + k * out_size + col0;
      if (!inside) {
        std::fill_n(dst, out_w, 0.f);
        return;
      }
      const float* src = plane + base;
      int64_t i = i0;
      for (int64_t ow = 0; ow < out_w; ++ow, i += stride_w) dst[ow] = Inside(i, width) ? src[i] : 0.f;
    });
  }
}

void Col2ImNdNCHW(const Im2ColNdShape& s, int64_t channels, const float* col, float* image) {
  const int64_t in_size = Product(s.in), out_size = Product(s.out), K = Product(s.kernel);
  const int64_t width = s.in.back(), out_w = s.out.back(), stride_w = s.stride.back();
  for (int64_t c = 0; c < channels; ++c) {
    float* plane = image + c * in_size;
    const float* block = col + c * K * out_size;
    ForEachRun(s, [&](int64_t k, int64_t col0, bool inside, int64_t base, int64_t i0) {
      if (!inside) return;
      const float* src = block + k * out_size + col0;
      float* dst = plane + base;
      int64_t i = i0;
      for (int64_t ow = 0; ow < out_w; ++ow, i += stride_w) {
        if (Inside(i, width)) dst[i] += src[ow];
      }
    });
  }
}

}  // namespace halfcaf
