// Shared by the binding files of halfcaf._C.
#pragma once

#include <string>

#include <nanobind/nanobind.h>

#include "core/enforce.h"
#include "core/types.h"

namespace halfcaf {
namespace python {

// A message parsed from serialized bytes; throws naming `what` when the bytes are not one.
template <typename Message>
Message ParseProto(const nanobind::bytes& bytes, const char* what) {
  Message m;
  HALFCAF_ENFORCE(m.ParseFromArray(bytes.c_str(), static_cast<int>(bytes.size())),
                  "the bytes given are not a serialized ", what);
  return m;
}

template <typename Message>
nanobind::bytes ToBytes(const Message& m) {
  const std::string s = m.SerializeAsString();
  return nanobind::bytes(s.data(), s.size());
}

Device MakeDevice(int device_type, int device_id);

void BindModels(nanobind::module_& m);  // gradients, mixed precision, data parallel, inference
void BindOnnx(nanobind::module_& m);    // ONNX import and export

}  // namespace python
}  // namespace halfcaf
