// Blob: a named slot in a Workspace holding a Tensor or any other object (a data reader, a queue).
#pragma once

#include <memory>
#include <typeindex>
#include <typeinfo>

#include "core/enforce.h"
#include "core/tensor.h"

namespace halfcaf {

class Blob {
 public:
  Blob() = default;
  Blob(const Blob&) = delete;
  Blob& operator=(const Blob&) = delete;

  bool empty() const { return obj_ == nullptr; }
  template <typename T>
  bool IsType() const {
    return obj_ != nullptr && type_ == std::type_index(typeid(T));
  }
  bool IsTensor() const { return IsType<Tensor>(); }
  const char* TypeName() const { return obj_ ? type_.name() : "nothing"; }

  template <typename T>
  const T& Get() const {
    HALFCAF_ENFORCE(IsType<T>(), "blob holds ", empty() ? "nothing" : "another type", " (",
                    TypeName(), "), not the requested ", typeid(T).name());
    return *static_cast<const T*>(obj_.get());
  }
  // The held T as a shared pointer that shares ownership with the blob: the object lives on while
  // the pointer does, even if the blob is reset (e.g. a background reader still using a DB
  // reader). Throws like Get<T> if the blob holds something else.
  template <typename T>
  std::shared_ptr<T> GetShared() const {
    Get<T>();  // type check
    return std::shared_ptr<T>(obj_, static_cast<T*>(obj_.get()));
  }
  // Returns the held T, replacing whatever else the blob held by a default-constructed T.
  template <typename T>
  T* GetMutable() {
    if (!IsType<T>()) Reset(std::make_shared<T>());
    return static_cast<T*>(obj_.get());
  }
  template <typename T>
  void Reset(std::shared_ptr<T> obj) {
    obj_ = std::move(obj);
    type_ = std::type_index(typeid(T));
  }
  void Reset() { obj_.reset(); }

  const Tensor& GetTensor() const { return Get<Tensor>(); }
  // The held tensor, moved to `device` (keeping storage if it is already there).
  Tensor* GetMutableTensor(Device device) {
    Tensor* t = GetMutable<Tensor>();
    t->SetDevice(device);
    return t;
  }

 private:
  std::shared_ptr<void> obj_;
  std::type_index type_ = std::type_index(typeid(void));
};

}  // namespace halfcaf
