// What SpatialBN's CPU loops (spatial_bn_loops.cc, spatial_bn_nhwc.cc) share: the element rules
// (the affine map, the fused ReLU's gradient) and the copies of a loop compiled for wider vectors.
// Both files are built without fused multiply-add (CMakeLists.txt: -ffp-contract=off), so every
// vector width rounds alike and the gradient's recomputed ReLU input is the forward's bit for bit.
#pragma once

#include <type_traits>

#include "core/bfloat16.h"
#include "core/nan_math.h"
#include "core/vector_width.h"
#include "operators/nn/spatial_bn_loops.h"

namespace halfcaf {
namespace bn_wide {

#define HALFCAF_BN_INLINE __attribute__((always_inline)) inline

// The fused ReLU's gradient at one element (BNReluGate) from v = x * a + b, the ReLU's input as
// the forward computed it: ReluGradient's rule GatedGradient(y > 0, y, dy) for y = ReluNaN(v),
// written as three selects on v (y > 0 where v > 0, and y is v where v is NaN) so that they
// vectorize.
HALFCAF_BN_INLINE float GatedDyOf(float v, float dy) {
  float g = v > 0.f ? dy : 0.f;
  g = dy != dy ? dy : g;
  return v != v ? v : g;
}

HALFCAF_BN_INLINE float GatedDy(float x, float dy, float a, float b) {
  return GatedDyOf(x * a + b, dy);
}

// The forward's affine map at one element, then the fused ReLU with kRelu.
template <bool kRelu>
HALFCAF_BN_INLINE float AffineOf(float x, float a, float b) {
  const float y = x * a + b;
  return kRelu ? ReluNaN(y) : y;
}

// f(std::bool_constant<flag>{}): a run-time flag (the ReLU, the gate) as a template argument.
template <typename F>
void WithFlag(bool flag, F&& f) {
  if (flag) return f(std::true_type{});
  f(std::false_type{});
}

#if defined(__x86_64__) || defined(__i386__)
template <auto F, typename... A>
__attribute__((target("avx512f"))) void OnAvx512(A... a) {
  F(a...);
}
template <auto F, typename... A>
__attribute__((target("avx2"))) void OnAvx2(A... a) {
  F(a...);
}
#endif

// F(a...), F (HALFCAF_BN_INLINE) inlined into a copy compiled for the widest vectors this CPU
// has, up to the cap.
template <auto F, typename... A>
void RunWide(A... a) {
#if defined(__x86_64__) || defined(__i386__)
  const VectorWidth width = LoopVectorWidth();
  if (width == VectorWidth::kAvx512) return OnAvx512<F>(a...);
  if (width == VectorWidth::kAvx2) return OnAvx2<F>(a...);
#endif
  F(a...);
}

}  // namespace bn_wide
}  // namespace halfcaf
