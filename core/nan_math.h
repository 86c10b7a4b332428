// Comparisons that keep NaN, shared by the CPU operators and the CUDA kernels (host + device).
// IEEE arithmetic propagates NaN, but a select built on a comparison drops it: `x > 0 ? x : 0`,
// std::max(acc, x) and fmaxf all turn a NaN into a number, so a diverged weight could give a
// finite output. Operators that select (Relu, Clip, MaxPool, their gradients, ...) use these so
// that NaN in gives NaN out, as in PyTorch and ONNX Runtime.
#pragma once

#ifdef __CUDACC__
#define HALFCAF_HOST_DEVICE __host__ __device__
#else
#define HALFCAF_HOST_DEVICE
#endif

namespace halfcaf {

HALFCAF_HOST_DEVICE inline bool IsNaN(float x) { return x != x; }

// max(x, 0) that maps NaN to NaN (and -0 to 0, like `x > 0 ? x : 0`).
HALFCAF_HOST_DEVICE inline float ReluNaN(float x) { return x <= 0.f ? 0.f : x; }

// True when `v` should replace `best` in a running maximum: larger, or the first NaN (which then
// stays, since nothing compares greater than it).
HALFCAF_HOST_DEVICE inline bool BeatsMax(float v, float best) {
  return v > best || (IsNaN(v) && !IsNaN(best));
}

// max(a, b) that is NaN when either is.
HALFCAF_HOST_DEVICE inline float MaxNaN(float a, float b) { return BeatsMax(b, a) ? b : a; }

// A gradient that flows where `pass` holds and is 0 elsewhere, except that a NaN forward output
// `y` or a NaN incoming gradient `dy` stays NaN (dY * 0 would be NaN too).
HALFCAF_HOST_DEVICE inline float GatedGradient(bool pass, float y, float dy) {
  return pass ? dy : IsNaN(y) ? y : IsNaN(dy) ? dy : 0.f;
}

}  // namespace halfcaf
