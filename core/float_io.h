// FP16 on CPU: operators compute in FP32. These views read a float or float16 tensor as floats
// (no copy for float) and write float results into a float or float16 output, rounding once.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace halfcaf {

inline bool IsFloatType(DataType t) { return t == DataType::FLOAT || t == DataType::FLOAT16; }

// Throws naming `what` unless t is float or float16.
void EnforceFloatType(const Tensor& t, const char* what);

// Float pointer to t's data: t's own storage for float, a converted copy for float16. The copy
// is valid until the running operator returns: inside an operator the copies are scratch
// (core/scratch.h), so a net holds the FP32 copies of one operator at a time rather than of all
// of them; outside any operator they go to `scratch`.
const float* ReadAsFloat(const Tensor& t, std::vector<float>* scratch);

// Float buffer for an output of type `dtype` (float or float16) with out's current shape.
// Write into data(), then call Commit() (a no-op for float outputs). A float16 output's buffer
// is scratch too (or `scratch` outside an operator).
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

}  // namespace halfcaf
