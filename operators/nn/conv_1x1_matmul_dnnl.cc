// Pointwise convolution gradients as matrix products (conv_1x1_matmul_dnnl.h).
#include "operators/nn/conv_1x1_matmul_dnnl.h"

#include <cstdlib>
#include <cstring>

namespace halfcaf {

using dnnl::memory;

bool Conv1x1GradientIsMatmul(const ConvPoolArgs& a, const ConvPoolGeometry& g, bool bias,
                             bool bf16_math) {
  const char* env = std::getenv("HALFCAF_DNNL_1X1_MATMUL");
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  if (!bf16_math || bias || a.group != 1 || a.order != StorageOrder::NHWC) return false;
  if (g.num_spatial_dims() != 2) return false;
  for (int d = 0; d < 2; ++d) {
    if (g.kernel[d] != 1 || g.stride[d] != 1 || g.pad_head(d) != 0 || g.pad_tail(d) != 0) {
      return false;
    }
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

bool Conv1x1MatmulGradient::Build(int64_t P, int64_t C, int64_t M, memory::data_type t,
                                  bool compute_dx) {
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

void Conv1x1MatmulGradient::Run(const void* x, const void* dy, const void* w, void* dw, void* dx) {
  dy_t_.set_data_handle(const_cast<void*>(dy));
  x_.set_data_handle(const_cast<void*>(x));
  dw_.set_data_handle(dw);
  prim_w_.Execute({{DNNL_ARG_SRC, dy_t_}, {DNNL_ARG_WEIGHTS, x_}, {DNNL_ARG_DST, dw_}});
  if (dx != nullptr && compute_dx_) {
    dy_.set_data_handle(const_cast<void*>(dy));
    w_.set_data_handle(const_cast<void*>(w));
    dx_.set_data_handle(dx);
    prim_d_.Execute({{DNNL_ARG_SRC, dy_}, {DNNL_ARG_WEIGHTS, w_}, {DNNL_ARG_DST, dx_}});
  }
  ++Conv1x1MatmulGradientRuns();
}

}  // namespace halfcaf
