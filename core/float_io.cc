#include "core/float_io.h"

#include "core/scratch.h"

namespace halfcaf {

void EnforceFloatType(const Tensor& t, const char* what) {
  HALFCAF_ENFORCE(IsFloatType(t.dtype()), what, " must be float or float16, got ",
                  t.DebugString());
}

const float* ReadAsFloat(const Tensor& t, std::vector<float>* scratch) {
  if (t.dtype() == DataType::FLOAT) return t.data<float>();
  HALFCAF_ENFORCE(t.dtype() == DataType::FLOAT16, "expected a float or float16 tensor, got ",
                  t.DebugString());
  const size_t n = static_cast<size_t>(t.numel());
  float* out = ScratchFloats(n, scratch);
  HalfToFloatArray(t.data<Half>(), out, n);
  return out;
}

FloatWriter::FloatWriter(Tensor* out, DataType dtype, std::vector<float>* scratch)
    : out_(out), dtype_(dtype) {
  HALFCAF_ENFORCE(IsFloatType(dtype), "output type must be float or float16, got ",
                  DataTypeName(dtype));
  if (dtype == DataType::FLOAT) {
    data_ = out->mutable_data<float>();
  } else {
    data_ = ScratchFloats(static_cast<size_t>(out->numel()), scratch);
  }
}

void FloatWriter::Commit() {
  if (dtype_ == DataType::FLOAT16) {
    FloatToHalfArray(data_, out_->mutable_data<Half>(), static_cast<size_t>(out_->numel()));
  }
}

}  // namespace halfcaf
