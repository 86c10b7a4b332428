// Pointwise convolution gradients as matrix products (conv_1x1_matmul_dnnl.h).
#include "operators/nn/conv_1x1_matmul_dnnl.h"

#include <cstdlib>
#include <cstring>

#include "core/scratch.h"
#include "operators/cpu_parallel.h"

namespace halfcaf {

using dnnl::memory;

bool Conv1x1GradientIsMatmul(const ConvPoolArgs& a, const ConvPoolGeometry& g, bool bias,
                             bool bf16_math) {
  const char* env = std::getenv("HALFCAF_DNNL_1X1_MATMUL");
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  if (!bf16_math || bias || a.group != 1 || a.order != StorageOrder::NHWC) return false;
  if (g.num_spatial_dims() != 2) return false;
  for (int d = 0; d < 2; ++d) {
    if (g.kernel[d] != 1 || g.pad_head(d) != 0 || g.pad_tail(d) != 0) return false;
  }
  return true;
}

std::atomic<int64_t>& Conv1x1MatmulGradientRuns() {
  static std::atomic<int64_t> runs{0};
  return runs;
}

namespace {

DnnlPrimitive MakeMatmul(const memory::desc& a, const memory::desc& b, const memory::desc& c,
                         bool* reference) {
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), DnnlAttr(), DnnlEngine());
  if (IsReferenceImpl(pd)) *reference = true;
  return DnnlPrimitive(dnnl::matmul(pd), pd);
}

}  // namespace

bool Conv1x1MatmulGradient::Build(const ConvPoolGeometry& g, int64_t M, memory::data_type t,
                                  bool compute_dx) {
  N_ = g.N;
  H_ = g.in[0];
  W_ = g.in[1];
  Ho_ = g.out[0];
  Wo_ = g.out[1];
  sh_ = g.stride[0];
  sw_ = g.stride[1];
  strided_ = sh_ != 1 || sw_ != 1;
  const int64_t C = g.C, P = N_ * Ho_ * Wo_;  // the product's rows: X's at the output positions
  row_bytes_ = static_cast<size_t>(C) * memory::data_type_size(t);
  const memory::desc dy_t({M, P}, t, memory::dims{1, M});  // dY (P, M) read transposed
  const memory::desc x({P, C}, t, memory::dims{C, 1});
  const memory::desc dw({M, C}, t, memory::dims{C, 1});
  bool reference = false;
  prim_w_ = MakeMatmul(dy_t, x, dw, &reference);
  dy_t_ = memory(dy_t, DnnlEngine(), DNNL_MEMORY_NONE);
  x_ = memory(x, DnnlEngine(), DNNL_MEMORY_NONE);
  dw_ = memory(dw, DnnlEngine(), DNNL_MEMORY_NONE);
  compute_dx_ = compute_dx;
  if (compute_dx) {
    const memory::desc dy({P, M}, t, memory::dims{M, 1});
    const memory::desc w({M, C}, t, memory::dims{C, 1});
    prim_d_ = MakeMatmul(dy, w, x, &reference);
    dy_ = memory(dy, DnnlEngine(), DNNL_MEMORY_NONE);
    w_ = memory(w, DnnlEngine(), DNNL_MEMORY_NONE);
    dx_ = memory(x, DnnlEngine(), DNNL_MEMORY_NONE);
  }
  return !reference;
}

void Conv1x1MatmulGradient::Gather(const char* x, char* to) const {
  const int64_t rows = N_ * Ho_ * Wo_;
  ParallelFor(rows, static_cast<double>(row_bytes_), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / (Ho_ * Wo_), ho = r / Wo_ % Ho_, wo = r % Wo_;
      const int64_t from = (n * H_ + ho * sh_) * W_ + wo * sw_;
      std::memcpy(to + r * row_bytes_, x + from * row_bytes_, row_bytes_);
    }
  });
}

void Conv1x1MatmulGradient::Scatter(const char* from, char* dx) const {
  const int64_t rows = N_ * H_ * W_;
  ParallelFor(rows, static_cast<double>(row_bytes_), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / (H_ * W_), h = r / W_ % H_, w = r % W_;
      char* row = dx + r * row_bytes_;
      const int64_t ho = h / sh_, wo = w / sw_;
      if (h % sh_ == 0 && w % sw_ == 0 && ho < Ho_ && wo < Wo_) {
        std::memcpy(row, from + ((n * Ho_ + ho) * Wo_ + wo) * row_bytes_, row_bytes_);
      } else {
        std::memset(row, 0, row_bytes_);
      }
    }
  });
}

void Conv1x1MatmulGradient::Run(const void* x, const void* dy, const void* w, void* dw, void* dx) {
  const size_t product_bytes = static_cast<size_t>(N_ * Ho_ * Wo_) * row_bytes_;
  const void* rows = x;
  if (strided_) {
    void* gathered = ScratchBytes(product_bytes, &gathered_fallback_);
    Gather(static_cast<const char*>(x), static_cast<char*>(gathered));
    rows = gathered;
  }
  dy_t_.set_data_handle(const_cast<void*>(dy));
  x_.set_data_handle(const_cast<void*>(rows));
  dw_.set_data_handle(dw);
  prim_w_.Execute({{DNNL_ARG_SRC, dy_t_}, {DNNL_ARG_WEIGHTS, x_}, {DNNL_ARG_DST, dw_}});
  if (dx != nullptr && compute_dx_) {
    void* product = strided_ ? ScratchBytes(product_bytes, &product_fallback_) : dx;
    dy_.set_data_handle(const_cast<void*>(dy));
    w_.set_data_handle(const_cast<void*>(w));
    dx_.set_data_handle(product);
    prim_d_.Execute({{DNNL_ARG_SRC, dy_}, {DNNL_ARG_WEIGHTS, w_}, {DNNL_ARG_DST, dx_}});
    if (strided_) Scatter(static_cast<const char*>(product), static_cast<char*>(dx));
  }
  ++Conv1x1MatmulGradientRuns();
}

}  // namespace halfcaf
