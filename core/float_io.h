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
// The float types every CUDA operator computes on: float and float16. bfloat16 reaches CUDA through
// Cast, FloatToBFloat16 / BFloat16ToFloat, the copy operators, and the operators that say so
// (EnforceFloatType's cuda_bfloat16; their list is in its error message): those of the BF16
// training recipe.
inline bool IsCudaFloatType(DataType t) {
  return t == DataType::FLOAT || t == DataType::FLOAT16;
}

// Throws naming `what` unless t is float, float16 or bfloat16; on CUDA float or float16, and
// bfloat16 too when the calling operator takes it there (cuda_bfloat16).
void EnforceFloatType(const Tensor& t, const char* what, bool cuda_bfloat16 = false);

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

// Pieces of a float, float16 or bfloat16 tensor read and written as floats without a tensor-sized
// copy: a 16-bit piece is converted into (or out of) a buffer of the calling thread, so a loop
// over pieces reads and writes 16-bit data once, in cache. Float data is used in place.
//
// Per-thread float buffer `slot` (0 to 3) of at least n floats, valid until this thread asks for
// the same slot again.
float* ThreadFloats(int slot, size_t n);

class FloatIn {
 public:
  explicit FloatIn(const Tensor& t);  // t float, float16 or bfloat16 (throws otherwise)
  // Floats [off, off + n): t's own data for float, else converted into ThreadFloats(slot, n).
  const float* Read(int64_t off, int64_t n, int slot) const;
  DataType dtype() const { return dtype_; }
  const void* raw() const { return data_; }  // the tensor's data as stored

 private:
  DataType dtype_;
  const void* data_;
};

class FloatOut {
 public:
  // Allocates out (its current shape) in `dtype`: float, float16 or bfloat16.
  FloatOut(Tensor* out, DataType dtype);
  // Where to write floats [off, off + n): out's own data for float, else ThreadFloats(slot, n).
  float* Begin(int64_t off, int64_t n, int slot) const;
  // Stores what was written at Begin's pointer (converts it for 16-bit outputs).
  void End(int64_t off, int64_t n, const float* written) const;
  DataType dtype() const { return dtype_; }
  void* raw() const { return data_; }  // the output's data as stored

 private:
  DataType dtype_;
  void* data_;
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
