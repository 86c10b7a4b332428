// Tensor: an n-d array of one data type on one device. Dims are int64; storage is shared between
// tensors that alias (Alias op, ShareData) and allocated lazily by mutable_data<T>(): Resize only
// records the shape, and storage is reused while it is large enough. Shapes are checked: a
// negative dim or an element or byte count that overflows fails naming the blob and the dims.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/enforce.h"
#include "core/types.h"

namespace halfcaf {

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Device device) : device_(device) {}
  Tensor(std::vector<int64_t> dims, DataType dtype, Device device = Device());

  // Shape.
  const std::vector<int64_t>& dims() const { return dims_; }
  int ndim() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const;  // negative i counts from the end
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * DataTypeSize(dtype_); }
  int64_t size_to_dim(int k) const;    // product of dims[0:k]
  int64_t size_from_dim(int k) const;  // product of dims[k:]
  // Canonical axis: accepts -ndim..ndim-1.
  int canonical_axis(int axis) const;

  DataType dtype() const { return dtype_; }
  Device device() const { return device_; }
  // True once storage for the current shape and type exists.
  bool initialized() const { return storage_ != nullptr && dtype_ != DataType::UNDEFINED; }

  void Resize(std::vector<int64_t> dims);
  void ResizeLike(const Tensor& other) { Resize(other.dims_); }
  // Changes the dims without touching storage; numel must stay the same.
  void Reshape(std::vector<int64_t> dims);
  // Moves the (empty) tensor to a device; existing storage on another device is dropped.
  void SetDevice(Device device);

  template <typename T>
  const T* data() const {
    CheckType(DataTypeOf<T>());
    return static_cast<const T*>(raw_data());
  }
  template <typename T>
  T* mutable_data() {
    return static_cast<T*>(raw_mutable_data(DataTypeOf<T>()));
  }
  const void* raw_data() const;
  // Sets the type and makes sure storage for numel elements exists.
  void* raw_mutable_data(DataType dtype);
  void* raw_mutable_data() { return raw_mutable_data(dtype_); }

  // Deep copy (shape, type, data), across devices if needed.
  void CopyFrom(const Tensor& src);
  // Makes this tensor view src's storage (same shape, type and device).
  void ShareData(const Tensor& src);
  // Makes this tensor view memory it does not allocate (e.g. a NumPy or PyTorch array shared
  // through DLPack): `storage` holds `bytes` bytes on `device` and its deleter releases the owner.
  // Ops may write into it; one that needs more room than `bytes` reallocates as usual.
  void ShareExternalData(std::shared_ptr<void> storage, size_t bytes, std::vector<int64_t> dims,
                         DataType dtype, Device device);
  // The shared storage (null when none), for views that must keep it alive.
  const std::shared_ptr<void>& storage() const { return storage_; }
  bool SharesStorageWith(const Tensor& other) const {
    return storage_ != nullptr && storage_ == other.storage_;
  }
  // Identifies the current storage: unique in the process for each allocation (0: none), the
  // same for tensors that share it. An address can be reused after a free; this cannot (caches
  // of derived data, such as oneDNN's reordered filters, key on it).
  uint64_t storage_id() const { return storage_ ? storage_id_ : 0; }
  // Drops shape, type and storage.
  void Reset();

  // "float16[64, 3, 224, 224]".
  std::string DebugString() const;

  // The blob holding this tensor (set by Blob; empty for free tensors), for error messages.
  const std::string& name() const { return name_; }
  void set_name(const std::string& name) { name_ = name; }

 private:
  void CheckType(DataType expected) const;
  // "blob 'x'" or "tensor", to start error messages.
  std::string Label() const;

  std::vector<int64_t> dims_;
  int64_t numel_ = 0;
  DataType dtype_ = DataType::UNDEFINED;
  Device device_;
  std::shared_ptr<void> storage_;
  uint64_t storage_id_ = 0;
  size_t capacity_ = 0;
  std::string name_;
};

}  // namespace halfcaf
