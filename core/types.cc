#include "core/types.h"

#include <algorithm>
#include <cctype>

#include "core/enforce.h"

namespace halfcaf {

size_t DataTypeSize(DataType t) {
  switch (t) {
    case DataType::FLOAT: return 4;
    case DataType::INT32: return 4;
    case DataType::BYTE: return 1;
    case DataType::BOOL: return 1;
    case DataType::UINT8: return 1;
    case DataType::INT8: return 1;
    case DataType::UINT16: return 2;
    case DataType::INT16: return 2;
    case DataType::INT64: return 8;
    case DataType::FLOAT16: return 2;
    case DataType::DOUBLE: return 8;
    case DataType::BFLOAT16: return 2;
    default: return 0;
  }
}

const char* DataTypeName(DataType t) {
  switch (t) {
    case DataType::UNDEFINED: return "undefined";
    case DataType::FLOAT: return "float";
    case DataType::INT32: return "int32";
    case DataType::BYTE: return "byte";
    case DataType::STRING: return "string";
    case DataType::BOOL: return "bool";
    case DataType::UINT8: return "uint8";
    case DataType::INT8: return "int8";
    case DataType::UINT16: return "uint16";
    case DataType::INT16: return "int16";
    case DataType::INT64: return "int64";
    case DataType::FLOAT16: return "float16";
    case DataType::DOUBLE: return "double";
    case DataType::BFLOAT16: return "bfloat16";
  }
  return "unknown";
}

DataType DataTypeFromName(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  if (n == "half" || n == "fp16") n = "float16";
  if (n == "bf16") n = "bfloat16";
  if (n == "float32" || n == "fp32") n = "float";
  for (int v : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 16}) {
    if (n == DataTypeName(static_cast<DataType>(v))) return static_cast<DataType>(v);
  }
  HALFCAF_THROW("unknown data type '", name, "' (expected one of FLOAT, FLOAT16, BFLOAT16, DOUBLE, "
                "INT32, INT64, INT16, INT8, UINT8, UINT16, BOOL, BYTE, STRING)");
}

DataType DataTypeFromInt(int64_t v) {
  HALFCAF_ENFORCE((v >= 0 && v <= 10) || v == 12 || v == 13 || v == 16,
                  "unknown data type value ", v,
                  " (TensorProto.DataType values are 0-10, 12, 13, 16 = BFLOAT16)");
  return static_cast<DataType>(v);
}

const char* DeviceTypeName(DeviceType t) { return t == DeviceType::CUDA ? "CUDA" : "CPU"; }

std::string Device::ToString() const {
  return type == DeviceType::CPU ? std::string("CPU") : MakeString("CUDA:", id);
}

}  // namespace halfcaf
