// Element types. Values are TensorProto.DataType's (Caffe2's), so they go on the wire unchanged;
// BFLOAT16 (16) is halfcaf's own: Caffe2 never had bfloat16 (see proto/halfcaf.proto).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/bfloat16.h"
#include "core/enforce.h"
#include "core/half.h"

namespace halfcaf {

enum class DataType : int32_t {
  UNDEFINED = 0,
  FLOAT = 1,
  INT32 = 2,
  BYTE = 3,
  STRING = 4,
  BOOL = 5,
  UINT8 = 6,
  INT8 = 7,
  UINT16 = 8,
  INT16 = 9,
  INT64 = 10,
  FLOAT16 = 12,
  DOUBLE = 13,
  BFLOAT16 = 16,
};

// Bytes per element; 0 for UNDEFINED/STRING (not storable in a Tensor).
size_t DataTypeSize(DataType t);
// "float", "float16", "bfloat16", "int32", ...
const char* DataTypeName(DataType t);
// Accepts Caffe2's enum names in any case ("FLOAT", "float16") and the short names above;
// throws on anything else.
DataType DataTypeFromName(const std::string& name);
// Validates an integer enum value from a proto or an argument.
DataType DataTypeFromInt(int64_t v);

template <typename T>
struct TypeToDataType;
#define HALFCAF_TYPE_MAP(T, E) \
  template <>                  \
  struct TypeToDataType<T> {   \
    static constexpr DataType value = DataType::E; \
  };
HALFCAF_TYPE_MAP(float, FLOAT)
HALFCAF_TYPE_MAP(double, DOUBLE)
HALFCAF_TYPE_MAP(Half, FLOAT16)
HALFCAF_TYPE_MAP(BFloat16, BFLOAT16)
HALFCAF_TYPE_MAP(int32_t, INT32)
HALFCAF_TYPE_MAP(int64_t, INT64)
HALFCAF_TYPE_MAP(int16_t, INT16)
HALFCAF_TYPE_MAP(int8_t, INT8)
HALFCAF_TYPE_MAP(uint8_t, UINT8)
HALFCAF_TYPE_MAP(uint16_t, UINT16)
HALFCAF_TYPE_MAP(bool, BOOL)
#undef HALFCAF_TYPE_MAP

template <typename T>
constexpr DataType DataTypeOf() {
  return TypeToDataType<T>::value;
}

// The 16-bit float storage types (Half, BFloat16): values convert through float.
template <typename T>
constexpr bool kIsFloat16Storage = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

enum class DeviceType : int32_t { CPU = 0, CUDA = 1 };
const char* DeviceTypeName(DeviceType t);

struct Device {
  DeviceType type = DeviceType::CPU;
  int id = 0;
  bool operator==(const Device& o) const { return type == o.type && id == o.id; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string ToString() const;
};

// Calls f(T{}) with T the C++ type of a numeric DataType (float, double, Half, BFloat16, ints,
// bool).
template <typename F>
void DispatchAllTypes(DataType t, F&& f) {
  switch (t) {
    case DataType::FLOAT: f(float{}); return;
    case DataType::DOUBLE: f(double{}); return;
    case DataType::FLOAT16: f(Half{}); return;
    case DataType::BFLOAT16: f(BFloat16{}); return;
    case DataType::INT32: f(int32_t{}); return;
    case DataType::INT64: f(int64_t{}); return;
    case DataType::INT16: f(int16_t{}); return;
    case DataType::INT8: f(int8_t{}); return;
    case DataType::BYTE:
    case DataType::UINT8: f(uint8_t{}); return;
    case DataType::UINT16: f(uint16_t{}); return;
    case DataType::BOOL: f(bool{}); return;
    default: break;
  }
  HALFCAF_THROW("unsupported data type ", DataTypeName(t));
}

}  // namespace halfcaf
