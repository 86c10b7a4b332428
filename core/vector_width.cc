#include "core/vector_width.h"

#include <atomic>

#include "core/bfloat16.h"

namespace halfcaf {

namespace {
std::atomic<VectorWidth> width_cap{VectorWidth::kAvx512};
}  // namespace

bool VectorWidthAvailable(VectorWidth width) {
  switch (width) {
    case VectorWidth::kBaseline:
      return true;
    case VectorWidth::kAvx2:
      return CpuHasAvx2();
    case VectorWidth::kAvx512:
      return CpuHasAvx512F();
  }
  return false;
}

VectorWidth CapVectorWidth(VectorWidth width) { return width_cap.exchange(width); }

VectorWidth LoopVectorWidth() {
  const VectorWidth cap = width_cap.load(std::memory_order_relaxed);
  if (cap == VectorWidth::kAvx512 && CpuHasAvx512F()) return VectorWidth::kAvx512;
  if (cap != VectorWidth::kBaseline && CpuHasAvx2()) return VectorWidth::kAvx2;
  return VectorWidth::kBaseline;
}

}  // namespace halfcaf
