#include "core/float_io.h"

#include "core/scratch.h"

namespace halfcaf {

void EnforceFloatType(const Tensor& t, const char* what) {
  if (t.device().type != DeviceType::CPU) {
    HALFCAF_ENFORCE(IsCudaFloatType(t.dtype()), what, " must be float or float16 on CUDA",
                    t.dtype() == DataType::BFLOAT16
                        ? " (CUDA operators do not take bfloat16 yet, except Cast, "
                          "BFloat16ToFloat and the copy operators)"
                        : "",
                    ", got ", t.DebugString());
    return;
  }
  HALFCAF_ENFORCE(IsFloatType(t.dtype()), what, " must be float, float16 or bfloat16, got ",
                  t.DebugString());
}

const float* ReadAsFloat(const Tensor& t, std::vector<float>* scratch) {
  if (t.dtype() == DataType::FLOAT) return t.data<float>();
  HALFCAF_ENFORCE(IsFloatType(t.dtype()), "expected a float, float16 or bfloat16 tensor, got ",
                  t.DebugString());
  const size_t n = static_cast<size_t>(t.numel());
  float* out = ScratchFloats(n, scratch);
  if (t.dtype() == DataType::FLOAT16) {
    ToFloatArray(t.data<Half>(), out, n);
  } else {
    ToFloatArray(t.data<BFloat16>(), out, n);
  }
  return out;
}

FloatWriter::FloatWriter(Tensor* out, DataType dtype, std::vector<float>* scratch)
    : out_(out), dtype_(dtype) {
  HALFCAF_ENFORCE(IsFloatType(dtype), "output type must be float, float16 or bfloat16, got ",
                  DataTypeName(dtype));
  if (dtype == DataType::FLOAT) {
    data_ = out->mutable_data<float>();
  } else {
    data_ = ScratchFloats(static_cast<size_t>(out->numel()), scratch);
  }
}

void FloatWriter::Commit() {
  const size_t n = static_cast<size_t>(out_->numel());
  if (dtype_ == DataType::FLOAT16) FromFloatArray(data_, out_->mutable_data<Half>(), n);
  if (dtype_ == DataType::BFLOAT16) FromFloatArray(data_, out_->mutable_data<BFloat16>(), n);
}

}  // namespace halfcaf
