#include "core/vector_width.h"

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <string>

#include "core/bfloat16.h"

namespace halfcaf {

namespace {

std::atomic<VectorWidth>& Cap() {
  static std::atomic<VectorWidth> cap{VectorWidthCapFromEnvironment()};
  return cap;
}

}  // namespace

VectorWidth VectorWidthCapForIsa(const std::string& isa) {
  std::string v(isa);
  for (char& c : v) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const auto starts = [&](const char* p) { return v.rfind(p, 0) == 0; };
  if (starts("AVX2")) return VectorWidth::kAvx2;
  if ((starts("AVX") && !starts("AVX512") && !starts("AVX10")) || starts("SSE")) {
    return VectorWidth::kBaseline;
  }
  return VectorWidth::kAvx512;
}

VectorWidth VectorWidthCapFromEnvironment() {
  const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (isa == nullptr || *isa == '\0') isa = std::getenv("DNNL_MAX_CPU_ISA");
  return VectorWidthCapForIsa(isa == nullptr ? "" : isa);
}

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

VectorWidth CapVectorWidth(VectorWidth width) { return Cap().exchange(width); }

VectorWidth LoopVectorWidth() {
  const VectorWidth cap = Cap().load(std::memory_order_relaxed);
  if (cap == VectorWidth::kAvx512 && CpuHasAvx512F()) return VectorWidth::kAvx512;
  if (cap != VectorWidth::kBaseline && CpuHasAvx2()) return VectorWidth::kAvx2;
  return VectorWidth::kBaseline;
}

}  // namespace halfcaf
