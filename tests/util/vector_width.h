// Tests run halfcaf's own CPU loops at each vector width this CPU has (core/vector_width.h).
#pragma once

#include <vector>

#include "core/vector_width.h"

namespace halfcaf {
namespace testing {

// Caps the loops' vector width for a scope (the previous cap restored after).
class ScopedVectorWidth {
 public:
  explicit ScopedVectorWidth(VectorWidth width) : previous_(CapVectorWidth(width)) {}
  ~ScopedVectorWidth() { CapVectorWidth(previous_); }
  ScopedVectorWidth(const ScopedVectorWidth&) = delete;
  ScopedVectorWidth& operator=(const ScopedVectorWidth&) = delete;

 private:
  VectorWidth previous_;
};

// The widths this CPU has, widest first.
inline std::vector<VectorWidth> AvailableVectorWidths() {
  std::vector<VectorWidth> widths;
  for (const VectorWidth w : {VectorWidth::kAvx512, VectorWidth::kAvx2, VectorWidth::kBaseline}) {
    if (VectorWidthAvailable(w)) widths.push_back(w);
  }
  return widths;
}

}  // namespace testing
}  // namespace halfcaf
