// Blob: a named slot in a Workspace holding a Tensor or any other object (a data reader, a queue).
#pragma once

#include <memory>
#include <string>
#include <typeindex>
#include <typeinfo>

#include "core/enforce.h"
#include "core/tensor.h"

namespace halfcaf {

class Blob {
 public:
  Blob() = default;
  // `name` labels the held tensor in error messages (Workspace passes the blob's name).
  explicit Blob(std::string name) : name_(std::move(name)) {}
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
    if (t->name() != name_) t->set_name(name_);
    return t;
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::shared_ptr<void> obj_;
  std::type_index type_ = std::type_index(typeid(void));
};

}  // namespace halfcaf
