#include "python/src/arrays.h"

#include <cstring>
#include <memory>
#include <vector>

#include "core/bfloat16.h"
#include "core/enforce.h"

namespace nb = nanobind;

namespace halfcaf {
namespace python {

using nb::dlpack::dtype_code;

DataType FromDlpack(nb::dlpack::dtype t) {
  const auto code = static_cast<dtype_code>(t.code);
  HALFCAF_ENFORCE(t.lanes == 1, "arrays of vector elements (", int(t.lanes), " lanes) are not supported");
  switch (code) {
    case dtype_code::Float:
      if (t.bits == 32) return DataType::FLOAT;
      if (t.bits == 16) return DataType::FLOAT16;
      if (t.bits == 64) return DataType::DOUBLE;
      break;
    case dtype_code::Bfloat:
      if (t.bits == 16) return DataType::BFLOAT16;
      break;
    case dtype_code::Int:
      if (t.bits == 32) return DataType::INT32;
      if (t.bits == 64) return DataType::INT64;
      if (t.bits == 16) return DataType::INT16;
      if (t.bits == 8) return DataType::INT8;
      break;
    case dtype_code::UInt:
      if (t.bits == 8) return DataType::UINT8;
      if (t.bits == 16) return DataType::UINT16;
      break;
    case dtype_code::Bool:
      if (t.bits == 8) return DataType::BOOL;
      break;
    default: break;
  }
  static const char* kCodes[] = {"int", "uint", "float", "?", "bfloat", "complex", "bool"};
  HALFCAF_THROW("arrays of ", t.code < 7 ? kCodes[t.code] : "an exotic type", int(t.bits),
                " have no halfcaf type (float32, float16, bfloat16, float64, int8/16/32/64, "
                "uint8/16 and bool do)");
}

nb::dlpack::dtype ToDlpack(DataType t) {
  auto make = [](dtype_code code, int bits) {
    nb::dlpack::dtype d;
    d.code = static_cast<uint8_t>(code);
    d.bits = static_cast<uint8_t>(bits);
    d.lanes = 1;
    return d;
  };
  switch (t) {
    case DataType::FLOAT: return make(dtype_code::Float, 32);
    case DataType::FLOAT16: return make(dtype_code::Float, 16);
    case DataType::DOUBLE: return make(dtype_code::Float, 64);
    case DataType::BFLOAT16: return make(dtype_code::Bfloat, 16);
    case DataType::INT32: return make(dtype_code::Int, 32);
    case DataType::INT64: return make(dtype_code::Int, 64);
    case DataType::INT16: return make(dtype_code::Int, 16);
    case DataType::INT8: return make(dtype_code::Int, 8);
    case DataType::BYTE:
    case DataType::UINT8: return make(dtype_code::UInt, 8);
    case DataType::UINT16: return make(dtype_code::UInt, 16);
    case DataType::BOOL: return make(dtype_code::Bool, 8);
    default: HALFCAF_THROW("tensors of ", DataTypeName(t), " have no array type");
  }
}

namespace {

bool IsCContiguous(const nb::ndarray<nb::ro>& a) {
  int64_t expect = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expect) return false;
    expect *= static_cast<int64_t>(a.shape(i));
  }
  return true;
}

Device ArrayDevice(const nb::ndarray<nb::ro>& a) {
  if (a.device_type() == nb::device::cpu::value) return Device{};
  if (a.device_type() == nb::device::cuda::value) return Device{DeviceType::CUDA, a.device_id()};
  HALFCAF_THROW("arrays on DLPack device type ", a.device_type(),
                " are not supported (CPU and CUDA are)");
}

// Releases a Python object from any thread, with the GIL (nothing once the interpreter is gone).
struct HeldArray {
  nb::ndarray<nb::ro> array;
};
void ReleaseHeldArray(HeldArray* held) {
  if (!Py_IsInitialized()) return;  // at exit: leave it
  nb::gil_scoped_acquire gil;
  delete held;
}

}  // namespace

void TensorFromArray(const nb::ndarray<nb::ro>& array, Device device, bool copy, DataType as_type,
                     Tensor* out) {
  const DataType type = FromDlpack(array.dtype());
  std::vector<int64_t> dims(array.ndim());
  for (size_t i = 0; i < array.ndim(); ++i) dims[i] = static_cast<int64_t>(array.shape(i));
  HALFCAF_ENFORCE(IsCContiguous(array), "the array is not C-contiguous (make it so first, e.g. "
                  "numpy.ascontiguousarray)");
  const Device from = ArrayDevice(array);
  const void* data = array.data();
  if (!copy) {
    HALFCAF_ENFORCE(as_type == DataType::UNDEFINED || as_type == type,
                    "an array shared without a copy keeps its type (", DataTypeName(type),
                    "); converting to ", DataTypeName(as_type), " needs a copy");
    HALFCAF_ENFORCE(reinterpret_cast<uintptr_t>(data) % DataTypeSize(type) == 0,
                    "the array's data is not aligned to its element size");
    auto* held = new HeldArray{array};
    std::shared_ptr<void> storage(const_cast<void*>(data),
                                  [held](void*) { ReleaseHeldArray(held); });
    out->ShareExternalData(std::move(storage), array.nbytes(), std::move(dims), type, from);
    return;
  }
  // A view of the array, then a copy of it onto the device (converted when asked).
  Tensor view;
  view.ShareExternalData(std::shared_ptr<void>(const_cast<void*>(data), [](void*) {}),
                         array.nbytes(), dims, type, from);
  if (as_type == DataType::UNDEFINED || as_type == type) {
    out->SetDevice(device);
    out->CopyFrom(view);
    return;
  }
  HALFCAF_ENFORCE(from.type == DeviceType::CPU, "converting types needs the array on the CPU");
  HALFCAF_ENFORCE(type == DataType::FLOAT && as_type == DataType::BFLOAT16,
                  "feeding ", DataTypeName(type), " as ", DataTypeName(as_type),
                  " is not supported (float32 as bfloat16 is)");
  Tensor converted(dims, DataType::BFLOAT16);
  const float* src = static_cast<const float*>(data);
  BFloat16* dst = converted.mutable_data<BFloat16>();
  for (int64_t i = 0; i < converted.numel(); ++i) dst[i] = BFloat16(src[i]);
  out->SetDevice(device);
  out->CopyFrom(converted);
}

nb::object ArrayFromTensor(const Tensor& tensor, bool copy) {
  std::unique_ptr<Tensor> held(new Tensor());
  if (copy || tensor.dtype() == DataType::UNDEFINED) {
    held->SetDevice(Device{});
    if (tensor.dtype() == DataType::BFLOAT16) {
      Tensor cpu;
      cpu.CopyFrom(tensor);
      held->Resize(tensor.dims());
      float* dst = held->mutable_data<float>();
      const BFloat16* src = cpu.data<BFloat16>();
      for (int64_t i = 0; i < cpu.numel(); ++i) dst[i] = static_cast<float>(src[i]);
    } else if (tensor.dtype() == DataType::UNDEFINED) {
      held->Resize(tensor.dims());  // never written: zeros of its shape, as float32
      std::memset(held->mutable_data<float>(), 0, held->nbytes());
    } else {
      held->CopyFrom(tensor);
    }
  } else {
    held->ShareData(tensor);
  }
  std::vector<size_t> shape(held->dims().begin(), held->dims().end());
  const int device_type =
      held->device().type == DeviceType::CUDA ? nb::device::cuda::value : nb::device::cpu::value;
  void* data = held->numel() > 0 ? const_cast<void*>(held->raw_data()) : nullptr;
  const bool numpy_type = held->dtype() != DataType::BFLOAT16;
  const nb::dlpack::dtype dtype = ToDlpack(held->dtype());
  const int device_id = held->device().id;
  nb::capsule owner(held.release(), [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  if (numpy_type && device_type == nb::device::cpu::value) {
    return nb::cast(nb::ndarray<nb::numpy>(data, shape.size(), shape.data(), owner, nullptr,
                                           dtype, device_type, device_id));
  }
  return nb::cast(nb::ndarray<>(data, shape.size(), shape.data(), owner, nullptr,
                                dtype, device_type, device_id));
}

}  // namespace python
}  // namespace halfcaf
