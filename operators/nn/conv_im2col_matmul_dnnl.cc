// Convolution filter gradients as im2col + one matrix product (conv_im2col_matmul_dnnl.h).
#include "operators/nn/conv_im2col_matmul_dnnl.h"

#include <cstdlib>
#include <cstring>

#include "core/scratch.h"
#include "operators/cpu_parallel.h"

namespace halfcaf {

using dnnl::memory;

namespace {

constexpr size_t kMaxColumnBytes = size_t{64} << 20;

// The columns' bytes for geometry `g` (16-bit elements: the path is bfloat16's).
size_t ColumnBytes(const ConvPoolGeometry& g) {
  return static_cast<size_t>(g.N * g.out_size()) * static_cast<size_t>(g.C * g.kernel_size()) * 2;
}

}  // namespace

bool ConvFilterGradientIsIm2colMatmul(const ConvPoolArgs& a, const ConvPoolGeometry& g, bool bias,
                                      bool bf16_math) {
  const char* env = std::getenv("HALFCAF_DNNL_IM2COL_MATMUL");
  const bool forced = env != nullptr && std::strcmp(env, "1") == 0;
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  if (!bf16_math || bias || a.group != 1 || a.order != StorageOrder::NHWC) return false;
  if (g.num_spatial_dims() != 2 || g.kernel_size() == 1) return false;  // 1 x 1: the 1x1 path
  if (ColumnBytes(g) > kMaxColumnBytes) return false;
  if (forced) return true;
  if (!DnnlIsaHasAmx()) return false;
  const bool strided = g.stride[0] > 1 || g.stride[1] > 1;
  const int64_t columns = g.C * g.kernel_size();
  return g.out_size() <= 196 && (columns >= 2304 || (strided && columns >= 1024));
}

std::atomic<int64_t>& ConvIm2colFilterGradientRuns() {
  static std::atomic<int64_t> runs{0};
  return runs;
}

bool ConvIm2colFilterGradient::Build(const ConvPoolGeometry& g, int64_t M, memory::data_type t,
                                     bool filter_nhwc) {
  g_ = g;
  elem_ = memory::data_type_size(t);
  const int64_t C = g.C, KH = g.kernel[0], KW = g.kernel[1], KC = KH * KW * C;
  const int64_t P = g.N * g.out_size();
  row_bytes_ = static_cast<size_t>(C) * elem_;
  col_row_bytes_ = static_cast<size_t>(KC) * elem_;
  const memory::desc dy_t({M, P}, t, memory::dims{1, M});  // dY (P, M) read transposed
  const memory::desc col({P, KC}, t, memory::dims{KC, 1});
  const memory::desc product({M, KC}, t, memory::dims{KC, 1});
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(dy_t, col, product), DnnlAttr(),
                                        DnnlEngine());
  if (IsReferenceImpl(pd)) return false;
  prim_ = DnnlPrimitive(dnnl::matmul(pd), pd);
  dy_t_ = memory(dy_t, DnnlEngine(), DNNL_MEMORY_NONE);
  col_ = memory(col, DnnlEngine(), DNNL_MEMORY_NONE);
  product_ = memory(product, DnnlEngine(), DNNL_MEMORY_NONE);
  transpose_ = !filter_nhwc;
  if (transpose_) {
    // The product (M, KH, KW, C) seen as the (M, C, KH, KW) filter it holds, into that layout.
    const memory::dims dims{M, C, KH, KW};
    khwc_ = memory(memory::desc(dims, t, memory::dims{KC, 1, KW * C, C}), DnnlEngine(),
                   DNNL_MEMORY_NONE);
    kchw_ = memory(memory::desc(dims, t, memory::dims{KC, KH * KW, KW, 1}), DnnlEngine(),
                   DNNL_MEMORY_NONE);
    transpose_prim_ = DnnlReorder(khwc_, kchw_);
  }
  return true;
}

void ConvIm2colFilterGradient::Im2col(const char* x, char* col) const {
  const int64_t H = g_.in[0], W = g_.in[1], Ho = g_.out[0], Wo = g_.out[1];
  const int64_t KH = g_.kernel[0], KW = g_.kernel[1];
  const int64_t sh = g_.stride[0], sw = g_.stride[1], dh = g_.dilation[0], dw = g_.dilation[1];
  const int64_t pt = g_.pad_head(0), pl = g_.pad_head(1);
  ParallelFor(g_.N * Ho * Wo, static_cast<double>(col_row_bytes_), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n = p / (Ho * Wo), ho = p / Wo % Ho, wo = p % Wo;
      char* to = col + p * col_row_bytes_;
      for (int64_t kh = 0; kh < KH; ++kh) {
        const int64_t h = ho * sh - pt + kh * dh;
        for (int64_t kw = 0; kw < KW; ++kw, to += row_bytes_) {
          const int64_t w = wo * sw - pl + kw * dw;
          if (h < 0 || h >= H || w < 0 || w >= W) {
            std::memset(to, 0, row_bytes_);
          } else {
            std::memcpy(to, x + ((n * H + h) * W + w) * row_bytes_, row_bytes_);
          }
        }
      }
    }
  });
}

void ConvIm2colFilterGradient::Run(const void* x, const void* dy, void* dw) {
  const size_t col_bytes = static_cast<size_t>(g_.N * g_.out_size()) * col_row_bytes_;
  void* col = ScratchBytes(col_bytes, &col_fallback_);
  Im2col(static_cast<const char*>(x), static_cast<char*>(col));
  void* product = dw;
  if (transpose_) {
    product = ScratchBytes(product_.get_desc().get_size(), &product_fallback_);
  }
  dy_t_.set_data_handle(const_cast<void*>(dy));
  col_.set_data_handle(col);
  product_.set_data_handle(product);
  prim_.Execute({{DNNL_ARG_SRC, dy_t_}, {DNNL_ARG_WEIGHTS, col_}, {DNNL_ARG_DST, product_}});
  if (transpose_) {
    khwc_.set_data_handle(product);
    kchw_.set_data_handle(dw);
    transpose_prim_.Execute({{DNNL_ARG_FROM, khwc_}, {DNNL_ARG_TO, kchw_}});
  }
  ++ConvIm2colFilterGradientRuns();
}

}  // namespace halfcaf
