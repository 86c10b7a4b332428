// The vector width of halfcaf's own CPU loops: copies compiled for AVX2 and AVX-512F (SpatialBN's
// channel-blocked and NHWC loops) and explicit AVX-512F kernels (core/bfloat16_avx512.h's users).
// The loops take the widest this CPU has, up to a cap; tests lower the cap to run every width
// against the others (the narrower loops are those of CPUs without the wider vectors).
#pragma once

namespace halfcaf {

enum class VectorWidth { kBaseline, kAvx2, kAvx512 };

// True when this CPU has the width's instructions (kBaseline: always).
bool VectorWidthAvailable(VectorWidth width);

// Caps the width the loops take; returns the previous cap. The default cap is kAvx512.
VectorWidth CapVectorWidth(VectorWidth width);

// The width the loops take now: the widest this CPU has, up to the cap.
VectorWidth LoopVectorWidth();

}  // namespace halfcaf
