#include "core/tensor_proto.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include <google/protobuf/text_format.h>

#include "core/checked_math.h"
#include "core/proto_io.h"

namespace halfcaf {

namespace {

template <typename T, typename Src>
void CopyConverted(const Src& src, T* dst) {
  int64_t i = 0;
  for (const auto& v : src) dst[i++] = static_cast<T>(v);
}

std::string Label(const TensorProto& p) {
  return p.name().empty() ? std::string("TensorProto") : "TensorProto '" + p.name() + "'";
}

}  // namespace

void TensorToProto(const Tensor& tensor, const std::string& name, TensorProto* proto) {
  Tensor cpu;
  const Tensor* src = &tensor;
  if (tensor.device().type != DeviceType::CPU) {
    cpu.CopyFrom(tensor);
    src = &cpu;
  }
  proto->Clear();
  proto->set_name(name);
  for (int64_t d : src->dims()) proto->add_dims(d);
  const DataType dt = src->dtype();
  HALFCAF_ENFORCE(dt != DataType::UNDEFINED, "blob '", name, "' holds no data to save");
  proto->set_data_type(static_cast<TensorProto::DataType>(dt));
  const int64_t n = src->numel();
  switch (dt) {
    case DataType::FLOAT: {
      const float* d = src->data<float>();
      proto->mutable_float_data()->Add(d, d + n);
      break;
    }
    case DataType::DOUBLE: {
      const double* d = src->data<double>();
      proto->mutable_double_data()->Add(d, d + n);
      break;
    }
    case DataType::INT64: {
      const int64_t* d = src->data<int64_t>();
      proto->mutable_int64_data()->Add(d, d + n);
      break;
    }
    case DataType::FLOAT16: {
      const Half* d = src->data<Half>();
      for (int64_t i = 0; i < n; ++i) proto->add_int32_data(d[i].x);
      break;
    }
    case DataType::BFLOAT16: {
      const BFloat16* d = src->data<BFloat16>();
      for (int64_t i = 0; i < n; ++i) proto->add_int32_data(d[i].x);
      break;
    }
    case DataType::BYTE: {
      proto->set_byte_data(std::string(static_cast<const char*>(src->raw_data()), n));
      break;
    }
    default:
      DispatchAllTypes(dt, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral_v<T> && sizeof(T) <= 4) {
          const T* d = src->data<T>();
          for (int64_t i = 0; i < n; ++i) proto->add_int32_data(static_cast<int32_t>(d[i]));
        }
      });
  }
}

namespace {

// Number of values `proto` stores for type `dt` (raw_data: bytes), and the field holding them.
int64_t StoredCount(const TensorProto& proto, DataType dt, const char** field) {
  if (proto.has_raw_data()) {
    *field = "raw_data";
    return static_cast<int64_t>(proto.raw_data().size());
  }
  switch (dt) {
    case DataType::FLOAT:
      *field = "float_data";
      return proto.float_data_size();
    case DataType::DOUBLE:
      *field = "double_data";
      return proto.double_data_size();
    case DataType::INT64:
      *field = "int64_data";
      return proto.int64_data_size();
    case DataType::BYTE:
    case DataType::UINT8:
      if (proto.has_byte_data()) {
        *field = "byte_data";
        return static_cast<int64_t>(proto.byte_data().size());
      }
      break;
    default:
      break;
  }
  *field = "int32_data";
  return proto.int32_data_size();
}

}  // namespace

void TensorFromProto(const TensorProto& proto, Tensor* tensor) {
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  const int64_t n = CheckedNumel(dims, Label(proto));
  HALFCAF_ENFORCE(!proto.has_segment(), Label(proto), " is a segment; segments are not supported");
  const DataType dt = DataTypeFromInt(proto.data_type());
  HALFCAF_ENFORCE(dt != DataType::STRING && dt != DataType::UNDEFINED, Label(proto), " has type ",
                  DataTypeName(dt), ", which tensors cannot hold");
  // Check the stored values against the dims before allocating anything for them.
  const char* field = "";
  const int64_t got = StoredCount(proto, dt, &field);
  if (proto.has_raw_data()) {
    HALFCAF_ENFORCE(got == static_cast<int64_t>(CheckedBytes(n, DataTypeSize(dt), Label(proto))),
                    Label(proto), " has dims ", DimsString(dims), " (", n, " elements of ",
                    DataTypeName(dt), ") but raw_data holds ", got, " bytes");
  } else {
    HALFCAF_ENFORCE(got == n, Label(proto), " has dims ", DimsString(dims), " (", n,
                    " elements) but ", got, " values in ", field);
  }
  tensor->SetDevice(Device());
  tensor->Resize(dims);
  void* raw = tensor->raw_mutable_data(dt);
  if (proto.has_raw_data()) {
    std::memcpy(raw, proto.raw_data().data(), proto.raw_data().size());
    return;
  }
  switch (dt) {
    case DataType::FLOAT:
      CopyConverted(proto.float_data(), static_cast<float*>(raw));
      return;
    case DataType::DOUBLE:
      CopyConverted(proto.double_data(), static_cast<double*>(raw));
      return;
    case DataType::INT64:
      CopyConverted(proto.int64_data(), static_cast<int64_t*>(raw));
      return;
    case DataType::FLOAT16: {
      Half* d = static_cast<Half*>(raw);
      for (int64_t i = 0; i < n; ++i) d[i].x = static_cast<uint16_t>(proto.int32_data(i));
      return;
    }
    case DataType::BFLOAT16: {
      BFloat16* d = static_cast<BFloat16*>(raw);
      for (int64_t i = 0; i < n; ++i) d[i].x = static_cast<uint16_t>(proto.int32_data(i));
      return;
    }
    default:
      break;
  }
  if (proto.has_byte_data() && (dt == DataType::BYTE || dt == DataType::UINT8)) {
    std::memcpy(raw, proto.byte_data().data(), n);
    return;
  }
  DispatchAllTypes(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      CopyConverted(proto.int32_data(), static_cast<T*>(raw));
    }
  });
}

namespace {

// Binary record: tag of field 2^29 - 1 with wire type 2, length 12, magic, CRC (little-endian).
const char kBinaryTag[] = "\xFA\xFF\xFF\xFF\x0F\x0C";
const size_t kBinaryTagSize = sizeof(kBinaryTag) - 1;
const char kMagic[] = "HCAFCRC1";
const size_t kMagicSize = sizeof(kMagic) - 1;
const size_t kBinaryRecordSize = kBinaryTagSize + kMagicSize + 4;
const char kTextMarker[] = "# halfcaf-crc32 ";
const size_t kTextMarkerSize = sizeof(kTextMarker) - 1;
const size_t kTextRecordSize = kTextMarkerSize + 8 + 1;  // 8 hex digits and a newline

uint32_t Crc32(const char* data, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    const uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), chunk);
    data += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

std::string Hex(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof(buf), "%08x", v);
  return buf;
}

// Where the checksum record starts and the CRC it holds; false when there is none.
bool FindChecksum(const std::string& c, size_t* payload, uint32_t* stored) {
  if (c.size() >= kBinaryRecordSize) {
    const size_t at = c.size() - kBinaryRecordSize;
    if (c.compare(at, kBinaryTagSize, kBinaryTag) == 0 &&
        c.compare(at + kBinaryTagSize, kMagicSize, kMagic) == 0) {
      const auto* b = reinterpret_cast<const unsigned char*>(c.data() + c.size() - 4);
      *stored = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
      *payload = at;
      return true;
    }
  }
  if (c.size() >= kTextRecordSize && c.back() == '\n') {
    const size_t at = c.size() - kTextRecordSize;
    if (c.compare(at, kTextMarkerSize, kTextMarker) == 0) {
      const std::string hex = c.substr(at + kTextMarkerSize, 8);
      if (hex.find_first_not_of("0123456789abcdef") != std::string::npos) return false;
      *stored = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
      *payload = at;
      return true;
    }
  }
  return false;
}

}  // namespace

std::string AppendChecksum(const std::string& bytes, bool text) {
  std::string out = bytes;
  if (text) {
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out + kTextMarker + Hex(Crc32(out.data(), out.size())) + "\n";
  }
  const uint32_t crc = Crc32(out.data(), out.size());
  out.append(kBinaryTag, kBinaryTagSize).append(kMagic, kMagicSize);
  for (int i = 0; i < 4; ++i) out += static_cast<char>((crc >> (8 * i)) & 0xff);
  return out;
}

void ParseTensorProtos(const std::string& content, const std::string& source, Checksum checksum,
                       TensorProtos* protos) {
  size_t payload = 0;
  uint32_t stored = 0;
  if (!FindChecksum(content, &payload, &stored)) {
    HALFCAF_ENFORCE(checksum != Checksum::kRequired, source,
                    ": the file has no checksum record, so its integrity cannot be verified (it "
                    "is corrupt, or was not written by halfcaf)");
    ParseProtoFromString(content, source, protos);
    return;
  }
  const uint32_t computed = Crc32(content.data(), payload);
  HALFCAF_ENFORCE(computed == stored, source, ": the file is corrupt: its checksum does not "
                  "match its content (crc32 ", Hex(computed), ", recorded ", Hex(stored), ")");
  ParseProtoFromString(content.substr(0, payload), source, protos);
}

void ReadTensorProtosFile(const std::string& path, Checksum checksum, TensorProtos* protos) {
  ParseTensorProtos(ReadFileBytes(path, "TensorProtos"), path, checksum, protos);
}

void WriteTensorProtosFile(const TensorProtos& protos, const std::string& path) {
  const bool text = PathWantsText(path);
  std::string bytes;
  if (text) {
    HALFCAF_ENFORCE(google::protobuf::TextFormat::PrintToString(protos, &bytes), path,
                    ": cannot format TensorProtos as text");
  } else {
    HALFCAF_ENFORCE(protos.SerializeToString(&bytes), path, ": cannot serialize TensorProtos");
  }
  WriteFileAtomically(path, AppendChecksum(bytes, text));
}

int FeedTensorProtosFile(const std::string& path, Workspace* ws, Checksum checksum) {
  TensorProtos protos;
  ReadTensorProtosFile(path, checksum, &protos);
  for (int i = 0; i < protos.protos_size(); ++i) {
    const TensorProto& p = protos.protos(i);
    HALFCAF_ENFORCE(!p.name().empty(), path, ": tensor #", i,
                    " has no name, so it cannot be fed to a blob");
    try {
      TensorFromProto(p, ws->CreateTensor(p.name()));
    } catch (EnforceNotMet& e) {
      e.AddContext(path);
      throw;
    }
  }
  return protos.protos_size();
}

void WriteBlobsToFile(const Workspace& ws, const std::vector<std::string>& names,
                      const std::string& path) {
  TensorProtos protos;
  for (const auto& name : names) TensorToProto(ws.GetTensor(name), name, protos.add_protos());
  WriteTensorProtosFile(protos, path);
}

int64_t CountNonFinite(const TensorProto& proto) {
  int64_t n = 0;
  for (float v : proto.float_data()) n += !std::isfinite(v);
  for (double v : proto.double_data()) n += !std::isfinite(v);
  if (proto.data_type() == TensorProto::FLOAT16) {
    for (int32_t v : proto.int32_data()) n += (v & 0x7c00) == 0x7c00;  // exponent all ones
  }
  if (proto.data_type() == TensorProto::BFLOAT16) {
    for (int32_t v : proto.int32_data()) n += (v & 0x7f80) == 0x7f80;
  }
  return n;
}

}  // namespace halfcaf
