#include "operators/nn/bf16_kernels.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/bfloat16.h"
#include "core/enforce.h"
#ifdef HALFCAF_WITH_DNNL
#include "operators/dnnl_util.h"
#endif

namespace halfcaf {

bool CpuBFloat16KernelsEnabled() {
#ifdef HALFCAF_WITH_DNNL
  return DnnlBFloat16Enabled();
#else
  return false;
#endif
}

std::string CpuBFloat16KernelsMissing() {
  if (CpuBFloat16KernelsEnabled()) return "";
#ifdef HALFCAF_WITH_DNNL
  const char* env = std::getenv("HALFCAF_DNNL_BF16");
  if (env != nullptr && std::strcmp(env, "0") == 0) return "HALFCAF_DNNL_BF16=0 switches them off";
  if (!CpuHasAvx512Bf16()) return "this CPU has no BF16 instructions (AVX512_BF16 or AMX)";
  return "oneDNN's instruction set is capped below AVX512_CORE_BF16 (ONEDNN_MAX_CPU_ISA)";
#else
  return "this build has no oneDNN";
#endif
}

#ifdef HALFCAF_WITH_DNNL
namespace {

// The best of three runs (after one that compiles and warms up) of a forward convolution of
// N x C x H x H by M x C x k x k (stride 1, same padding) in `dt`, layouts left to oneDNN.
double ProbeConvMs(dnnl::memory::data_type dt, int64_t N, int64_t C, int64_t H, int64_t M,
                   int64_t k) {
  using dnnl::memory;
  auto any = [&](memory::dims d) { return memory::desc(d, dt, memory::format_tag::any); };
  const int64_t p = k / 2;
  const dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, any({N, C, H, H}),
      any({M, C, k, k}), any({N, M, H, H}), {1, 1}, {p, p}, {p, p});
  const dnnl::convolution_forward::primitive_desc pd(desc, DnnlAttr(), DnnlEngine());
  memory src(pd.src_desc(), DnnlEngine()), w(pd.weights_desc(), DnnlEngine()),
      dst(pd.dst_desc(), DnnlEngine());
  std::memset(src.get_data_handle(), 0, pd.src_desc().get_size());
  std::memset(w.get_data_handle(), 0, pd.weights_desc().get_size());
  DnnlPrimitive prim(dnnl::convolution_forward(pd), pd);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}};
  double best = 1e30;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    prim.Execute(args);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i > 0) best = std::min(best, ms);
  }
  return best;
}

BFloat16ConvMath Forced(bool in_bfloat16) {
  BFloat16ConvMath m;
  m.in_bfloat16 = in_bfloat16;
  m.why = in_bfloat16 ? "HALFCAF_DNNL_BF16_MATH=bf16" : "HALFCAF_DNNL_BF16_MATH=f32";
  return m;
}

BFloat16ConvMath Decide() {
  BFloat16ConvMath m;
  if (DnnlIsaHasAmx()) {
    m.in_bfloat16 = true;
    m.why = "AMX";
    return m;
  }
  try {
    for (auto dt : {dnnl::memory::data_type::bf16, dnnl::memory::data_type::f32}) {
      // A ResNet stage's 3x3 and 1x1 convolutions (batch 8, 28 x 28).
      const double ms = ProbeConvMs(dt, 8, 64, 28, 64, 3) + ProbeConvMs(dt, 8, 256, 28, 64, 1);
      (dt == dnnl::memory::data_type::bf16 ? m.bf16_ms : m.f32_ms) = ms;
    }
  } catch (const dnnl::error& e) {
    m.in_bfloat16 = true;  // no probe: the kernels oneDNN chose
    m.why = std::string("probe failed: ") + e.what();
    return m;
  }
  m.in_bfloat16 = m.bf16_ms <= m.f32_ms;
  char times[96];
  std::snprintf(times, sizeof(times), "%.2f ms in BF16 and %.2f ms in FP32", m.bf16_ms, m.f32_ms);
  m.why = MakeString("probe: a 3x3 and a 1x1 convolution took ", times);
  return m;
}

}  // namespace
#endif

const BFloat16ConvMath& CpuBFloat16ConvMath() {
#ifdef HALFCAF_WITH_DNNL
  // The variable is read at each call (a test may switch), the probe runs once.
  const char* env = std::getenv("HALFCAF_DNNL_BF16_MATH");
  if (env != nullptr && std::strcmp(env, "bf16") == 0) {
    static const BFloat16ConvMath bf16 = Forced(true);
    return bf16;
  }
  if (env != nullptr && std::strcmp(env, "f32") == 0) {
    static const BFloat16ConvMath f32 = Forced(false);
    return f32;
  }
  static const BFloat16ConvMath m = Decide();
#else
  static const BFloat16ConvMath m;
#endif
  return m;
}

}  // namespace halfcaf
