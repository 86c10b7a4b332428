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
// is valid until the running operator returns: while an operator runs on this thread (inside a
// FloatScratchScope, which Operator::Run opens), copies come from a per-thread pool of buffers
// that every operator reuses, so a net holds the FP32 copies of one operator at a time rather
// than of all of them; outside any operator they go to `scratch`.
const float* ReadAsFloat(const Tensor& t, std::vector<float>* scratch);

// Float buffer for an output of type `dtype` (float or float16) with out's current shape.
// Write into data(), then call Commit() (a no-op for float outputs). A float16 output's buffer
// comes from the same pool as ReadAsFloat's copies (or `scratch` outside an operator).
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

// Marks an operator run on this thread: float16 conversion buffers handed out inside it are
// returned to the thread's pool when it ends. Scopes nest (an op running another op).
class FloatScratchScope {
 public:
  FloatScratchScope();
  ~FloatScratchScope();
  FloatScratchScope(const FloatScratchScope&) = delete;
  FloatScratchScope& operator=(const FloatScratchScope&) = delete;

 private:
  size_t saved_;
};

}  // namespace halfcaf
