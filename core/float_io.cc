#include "core/float_io.h"

#include <memory>

namespace halfcaf {

namespace {

// The calling thread's pool: buffers_[0 .. next_) are in use by the running operator(s).
struct ScratchPool {
  std::vector<std::unique_ptr<std::vector<float>>> buffers;
  size_t next = 0;
  int depth = 0;  // open FloatScratchScopes
};

ScratchPool& Pool() {
  thread_local ScratchPool pool;
  return pool;
}

// A buffer of n floats: the next pooled one inside an operator, `fallback` outside.
float* ScratchFloats(size_t n, std::vector<float>* fallback) {
  ScratchPool& p = Pool();
  std::vector<float>* buf = fallback;
  if (p.depth > 0) {
    if (p.next == p.buffers.size()) p.buffers.push_back(std::make_unique<std::vector<float>>());
    buf = p.buffers[p.next++].get();
  }
  buf->resize(n);
  return buf->data();
}

}  // namespace

FloatScratchScope::FloatScratchScope() {
  ScratchPool& p = Pool();
  saved_ = p.next;
  ++p.depth;
}

FloatScratchScope::~FloatScratchScope() {
  ScratchPool& p = Pool();
  p.next = saved_;
  --p.depth;
}

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
