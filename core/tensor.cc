#include "core/tensor.h"

#include <atomic>

#include "core/checked_math.h"

namespace halfcaf {

namespace {
// Sub-products of a shape accepted by Resize cannot overflow (see CheckedNumel).
int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

uint64_t NextStorageId() {
  static std::atomic<uint64_t> next{0};
  return ++next;
}
}  // namespace

Tensor::Tensor(std::vector<int64_t> dims, DataType dtype, Device device) : device_(device) {
  Resize(std::move(dims));
  raw_mutable_data(dtype);
}

int64_t Tensor::dim(int i) const { return dims_[canonical_axis(i)]; }

int Tensor::canonical_axis(int axis) const {
  HALFCAF_ENFORCE(axis >= -ndim() && axis < ndim(), "axis ", axis, " is out of range for a ",
                  ndim(), "-d tensor ", DimsString(dims_));
  return axis < 0 ? axis + ndim() : axis;
}

int64_t Tensor::size_to_dim(int k) const {
  HALFCAF_ENFORCE(k >= 0 && k <= ndim(), "dimension ", k, " out of range for ", DebugString());
  return Product(dims_, 0, k);
}

int64_t Tensor::size_from_dim(int k) const {
  HALFCAF_ENFORCE(k >= 0 && k <= ndim(), "dimension ", k, " out of range for ", DebugString());
  return Product(dims_, k, dims_.size());
}

void Tensor::Resize(std::vector<int64_t> dims) {
  numel_ = CheckedNumel(dims, Label());
  dims_ = std::move(dims);
}

void Tensor::Reshape(std::vector<int64_t> dims) {
  int64_t n = CheckedNumel(dims, Label());
  HALFCAF_ENFORCE(n == numel_, "cannot reshape ", DebugString(), " to ", DimsString(dims),
                  ": element counts differ (", numel_, " vs ", n, ")");
  dims_ = std::move(dims);
}

void Tensor::SetDevice(Device device) {
  if (device == device_) return;
  device_ = device;
  storage_.reset();
  capacity_ = 0;
}

const void* Tensor::raw_data() const {
  HALFCAF_ENFORCE(storage_ != nullptr || numel_ == 0,
                  "tensor ", DebugString(), " is read before any data was written to it");
  return storage_.get();
}

void* Tensor::raw_mutable_data(DataType dtype) {
  size_t item = DataTypeSize(dtype);
  HALFCAF_ENFORCE(item > 0, "tensors cannot hold elements of type ", DataTypeName(dtype));
  const size_t need = CheckedBytes(numel_, item, Label(), " of ", DataTypeName(dtype),
                                   DimsString(dims_));
  if (!storage_ || capacity_ < need) {
    // Drop the old storage first: on failure the tensor holds none, so nothing reads past it.
    storage_.reset();
    capacity_ = 0;
    try {
      storage_ = GetAllocator(device_.type)->Allocate(need, device_);
      storage_id_ = NextStorageId();
    } catch (EnforceNotMet& e) {
      e.AddContext(Label() + " " + DataTypeName(dtype) + DimsString(dims_));
      throw;
    }
    capacity_ = need;
  }
  dtype_ = dtype;
  return storage_.get();
}

void Tensor::CopyFrom(const Tensor& src) {
  if (&src == this) return;
  Resize(src.dims_);
  if (src.dtype_ == DataType::UNDEFINED) {
    dtype_ = DataType::UNDEFINED;
    return;
  }
  void* dst = raw_mutable_data(src.dtype_);
  CopyBytes(nbytes(), src.raw_data(), src.device_, dst, device_);
}

void Tensor::ShareData(const Tensor& src) {
  dims_ = src.dims_;
  numel_ = src.numel_;
  dtype_ = src.dtype_;
  device_ = src.device_;
  storage_ = src.storage_;
  storage_id_ = src.storage_id_;
  capacity_ = src.capacity_;
}

void Tensor::ShareExternalData(std::shared_ptr<void> storage, size_t bytes,
                               std::vector<int64_t> dims, DataType dtype, Device device) {
  HALFCAF_ENFORCE(DataTypeSize(dtype) > 0, "tensors cannot hold elements of type ",
                  DataTypeName(dtype));
  const int64_t n = CheckedNumel(dims, Label());
  HALFCAF_ENFORCE(storage != nullptr || n == 0, Label(), ": shared data is null");
  const size_t need = CheckedBytes(n, DataTypeSize(dtype), Label());
  HALFCAF_ENFORCE(need <= bytes, Label(), ": ", need, " bytes of ", DataTypeName(dtype),
                  DimsString(dims), " do not fit the ", bytes, " bytes shared");
  dims_ = std::move(dims);
  numel_ = n;
  dtype_ = dtype;
  device_ = device;
  storage_ = std::move(storage);
  storage_id_ = NextStorageId();
  capacity_ = bytes;
}

void Tensor::Reset() {
  std::string name = std::move(name_);
  *this = Tensor(device_);
  name_ = std::move(name);
}

std::string Tensor::DebugString() const {
  return MakeString(DataTypeName(dtype_), DimsString(dims_),
                    device_.type == DeviceType::CPU ? "" : " on " + device_.ToString());
}

std::string Tensor::Label() const {
  return name_.empty() ? std::string("tensor") : "blob '" + name_ + "'";
}

void Tensor::CheckType(DataType expected) const {
  HALFCAF_ENFORCE(dtype_ == expected, "tensor holds ", DebugString(), " but is read as ",
                  DataTypeName(expected));
}

}  // namespace halfcaf
