// FP16 and BF16 on CPU: operators compute in FP32. These views read a float, float16 or bfloat16
// tensor as floats (no copy for float) and write float results into a float, float16 or bfloat16
// output, rounding once (to nearest even).
#pragma once

#include <vector>

#include "core/tensor.h"

namespace halfcaf {

// float, float16 or bfloat16: the types ReadAsFloat and FloatWriter take.
inline bool IsFloatType(DataType t) {
  return t == DataType::FLOAT || t == DataType::FLOAT16 || t == DataType::BFLOAT16;
}
// The float types CUDA operators compute on: float and float16. bfloat16 tensors reach CUDA only
// through Cast, FloatToBFloat16 / BFloat16ToFloat and the copy operators, so far.
inline bool IsCudaFloatType(DataType t) {
  return t == DataType::FLOAT || t == DataType::FLOAT16;
}

// Throws naming `what` unless t is float, float16 or bfloat16 (on CUDA: float or float16).
void EnforceFloatType(const Tensor& t, const char* what);

// Float pointer to t's data: t's own storage for float, a converted copy for float16 and
// bfloat16. The copy is valid until the running operator returns: inside an operator the copies
// are scratch (core/scratch.h), so a net holds the FP32 copies of one operator at a time rather
// than of all of them; outside any operator they go to `scratch`.
const float* ReadAsFloat(const Tensor& t, std::vector<float>* scratch);

// Float buffer for an output of type `dtype` (float, float16 or bfloat16) with out's current
// shape. Write into data(), then call Commit() (a no-op for float outputs). A 16-bit output's
// buffer is scratch too (or `scratch` outside an operator).
class FloatWriter {
 public:
  FloatWriter(Tensor* out, DataType dtype, std::vector<float>* scratch);
  float* data() { return data_; }
  void Commit();

 private:
  Tensor* out_;
  DataType dtype_;
  float* data_;
};

// The bulk conversions of the 16-bit float types by overload (templates over Half / BFloat16).
inline void ToFloatArray(const Half* src, float* dst, size_t n) { HalfToFloatArray(src, dst, n); }
inline void ToFloatArray(const BFloat16* src, float* dst, size_t n) {
  BFloat16ToFloatArray(src, dst, n);
}
inline void FromFloatArray(const float* src, Half* dst, size_t n) { FloatToHalfArray(src, dst, n); }
inline void FromFloatArray(const float* src, BFloat16* dst, size_t n) {
  FloatToBFloat16Array(src, dst, n);
}

}  // namespace halfcaf
