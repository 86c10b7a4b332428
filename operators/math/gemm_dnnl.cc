#include "operators/math/gemm_dnnl.h"

#include <map>
#include <tuple>
#include <unordered_map>

#include "core/enforce.h"
#include "operators/dnnl_util.h"

namespace halfcaf {

namespace {

using dnnl::memory;

// usable false: oneDNN has no implementation for the shape, or only its reference code (far
// slower than converting to float for BLAS); the caller then computes in float.
struct GemmPrimitive {
  memory::desc a, b, bias, c;
  DnnlPrimitive prim;
  bool usable = false;
};

GemmPrimitive MakeGemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, bool bias) {
  const auto bf16 = memory::data_type::bf16;
  GemmPrimitive g;
  g.a = memory::desc({M, K}, bf16, trans_a ? memory::dims{1, M} : memory::dims{K, 1});
  g.b = memory::desc({K, N}, bf16, trans_b ? memory::dims{1, K} : memory::dims{N, 1});
  g.c = memory::desc({M, N}, bf16, memory::dims{N, 1});
  if (bias) g.bias = memory::desc({1, N}, memory::data_type::f32, memory::dims{N, 1});
  try {
    const dnnl::matmul::desc desc(g.a, g.b, g.bias, g.c);
    const dnnl::matmul::primitive_desc pd(desc, DnnlAttr(), DnnlEngine());
    if (IsReferenceImpl(pd)) return g;
    g.prim = DnnlPrimitive(dnnl::matmul(pd), pd);
    g.usable = true;
  } catch (const dnnl::error&) {
    // No implementation for this shape here.
  }
  return g;
}

}  // namespace

bool DnnlBFloat16Gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                      const BFloat16* a, const BFloat16* b, const float* bias, BFloat16* c) {
  if (!DnnlBFloat16Enabled() || M <= 0 || N <= 0 || K <= 0) return false;
  using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, bool>;
  thread_local std::map<Key, GemmPrimitive> cache;
  const Key key{trans_a, trans_b, M, N, K, bias != nullptr};
  auto it = cache.find(key);
  try {
    if (it == cache.end()) {
      it = cache.emplace(key, MakeGemm(trans_a, trans_b, M, N, K, bias != nullptr)).first;
    }
    GemmPrimitive& g = it->second;
    if (!g.usable) return false;
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, memory(g.a, DnnlEngine(), const_cast<BFloat16*>(a))},
        {DNNL_ARG_WEIGHTS, memory(g.b, DnnlEngine(), const_cast<BFloat16*>(b))},
        {DNNL_ARG_DST, memory(g.c, DnnlEngine(), c)}};
    if (bias) args[DNNL_ARG_BIAS] = memory(g.bias, DnnlEngine(), const_cast<float*>(bias));
    g.prim.Execute(args);
  } catch (const dnnl::error& e) {
    HALFCAF_THROW("oneDNN bfloat16 matrix product (", M, " x ", K, " by ", K, " x ", N,
                  ") failed: ", e.what());
  }
  ++DnnlBFloat16Runs();
  return true;
}

}  // namespace halfcaf
