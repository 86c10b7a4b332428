// How bfloat16 convolutions and matrix products compute on this CPU, for the oneDNN engines and
// for code outside the operators that chooses a recipe (the trainer's channels-last layout,
// train_net's start-up warning):
//   - oneDNN's BF16 kernels are enabled on CPUs with BF16 instructions (AMX or AVX512_BF16), no
//     ISA cap below them and HALFCAF_DNNL_BF16 not "0" (operators/dnnl_util.h); otherwise bfloat16
//     runs on the default ops (FP32 math over converted copies), slower than FP32 training;
//   - with them, a bfloat16 convolution computes in BF16 where those kernels beat the FP32 ones,
//     and otherwise in FP32 on copies that the reorders into oneDNN's blocked layouts convert
//     anyway (one rounding on output, as the default ops): oneDNN's AVX512_BF16 convolutions run
//     slower than its FP32 ones on Intel Xeons without AMX (ResNet-50 BF16 training 0.76-0.87x
//     FP32 there, against 1.6x with AMX and on AMD Zen 4). AMX computes in BF16; elsewhere a probe
//     at first use times a 3x3 and a 1x1 convolution both ways (about 50 ms, once per process).
//     HALFCAF_DNNL_BF16_MATH=bf16 or f32 decides instead of the probe.
#pragma once

#include <string>

namespace halfcaf {

bool CpuBFloat16KernelsEnabled();

// Why they are off, in a sentence (empty when they are on).
std::string CpuBFloat16KernelsMissing();

struct BFloat16ConvMath {
  bool in_bfloat16 = false;       // BF16 kernels (else FP32 kernels over converted copies)
  std::string why;                // "AMX", "probe: ...", "HALFCAF_DNNL_BF16_MATH=f32", ...
  double bf16_ms = 0, f32_ms = 0;  // the probe's times (0 without a probe)
};

// Meaningful where CpuBFloat16KernelsEnabled(); decided once per process.
const BFloat16ConvMath& CpuBFloat16ConvMath();

}  // namespace halfcaf
