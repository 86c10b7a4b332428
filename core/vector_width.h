// The vector width of halfcaf's own CPU loops: copies compiled for AVX2 and AVX-512F (SpatialBN's
// channel-blocked and NHWC loops) and explicit AVX-512F kernels (core/bfloat16_avx512.h's users).
// The loops take the widest this CPU has, up to a cap; tests lower the cap to run every width
// against the others (the narrower loops are those of CPUs without the wider vectors).
#pragma once

#include <string>

namespace halfcaf {

enum class VectorWidth { kBaseline, kAvx2, kAvx512 };

// True when this CPU has the width's instructions (kBaseline: always).
bool VectorWidthAvailable(VectorWidth width);

// Caps the width the loops take; returns the previous cap. The default cap follows oneDNN's
// (ONEDNN_MAX_CPU_ISA, or DNNL_MAX_CPU_ISA): a process told to stay below AVX-512 stays there in
// halfcaf's loops too.
VectorWidth CapVectorWidth(VectorWidth width);

// The cap a oneDNN ISA name implies: AVX2, AVX2_VNNI...: kAvx2; AVX, SSE41: kBaseline; the rest
// (AVX512_*, AMX_*, AVX10_*, ALL, empty): kAvx512. Any letter case.
VectorWidth VectorWidthCapForIsa(const std::string& isa);
// The cap of this process's environment (ONEDNN_MAX_CPU_ISA, else DNNL_MAX_CPU_ISA): the default.
VectorWidth VectorWidthCapFromEnvironment();

// The width the loops take now: the widest this CPU has, up to the cap.
VectorWidth LoopVectorWidth();

}  // namespace halfcaf
