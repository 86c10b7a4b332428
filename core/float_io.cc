#include "core/float_io.h"

#include "core/scratch.h"

namespace halfcaf {

void EnforceFloatType(const Tensor& t, const char* what, bool cuda_bfloat16) {
  if (t.device().type != DeviceType::CPU) {
    if (cuda_bfloat16 && t.dtype() == DataType::BFLOAT16) return;
    HALFCAF_ENFORCE(IsCudaFloatType(t.dtype()), what, " must be float or float16 on CUDA",
                    t.dtype() == DataType::BFLOAT16
                        ? " (this CUDA operator does not take bfloat16 yet; those that do: "
                          "Cast, FloatToBFloat16, BFloat16ToFloat, the copy operators, Conv, FC, "
                          "FCTransposed, Relu, MaxPool, AveragePool, SpatialBN and their "
                          "gradients, Add, Sub, Mul, Div, Sum, CheckFinite and "
                          "MixedPrecisionMomentumSGDUpdate)"
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

float* ThreadFloats(int slot, size_t n) {
  thread_local std::vector<float> buffers[4];
  HALFCAF_ENFORCE(slot >= 0 && slot < 4, "ThreadFloats: slot ", slot, " is not 0 to 3");
  std::vector<float>& b = buffers[slot];
  if (b.size() < n) b.resize(n);
  return b.data();
}

FloatIn::FloatIn(const Tensor& t) : dtype_(t.dtype()) {
  HALFCAF_ENFORCE(IsFloatType(dtype_), "expected a float, float16 or bfloat16 tensor, got ",
                  t.DebugString());
  data_ = t.raw_data();
}

const float* FloatIn::Read(int64_t off, int64_t n, int slot) const {
  if (dtype_ == DataType::FLOAT) return static_cast<const float*>(data_) + off;
  float* buf = ThreadFloats(slot, static_cast<size_t>(n));
  if (dtype_ == DataType::FLOAT16) {
    ToFloatArray(static_cast<const Half*>(data_) + off, buf, static_cast<size_t>(n));
  } else {
    ToFloatArray(static_cast<const BFloat16*>(data_) + off, buf, static_cast<size_t>(n));
  }
  return buf;
}

FloatOut::FloatOut(Tensor* out, DataType dtype) : dtype_(dtype) {
  HALFCAF_ENFORCE(IsFloatType(dtype), "output type must be float, float16 or bfloat16, got ",
                  DataTypeName(dtype));
  data_ = out->raw_mutable_data(dtype);
}

float* FloatOut::Begin(int64_t off, int64_t n, int slot) const {
  if (dtype_ == DataType::FLOAT) return static_cast<float*>(data_) + off;
  return ThreadFloats(slot, static_cast<size_t>(n));
}

void FloatOut::End(int64_t off, int64_t n, const float* written) const {
  if (dtype_ == DataType::FLOAT16) {
    FromFloatArray(written, static_cast<Half*>(data_) + off, static_cast<size_t>(n));
  } else if (dtype_ == DataType::BFLOAT16) {
    FromFloatArray(written, static_cast<BFloat16*>(data_) + off, static_cast<size_t>(n));
  }
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
