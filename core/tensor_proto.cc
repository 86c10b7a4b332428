#include "core/tensor_proto.h"

#include <cstring>
#include <vector>

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

int FeedTensorProtosFile(const std::string& path, Workspace* ws) {
  TensorProtos protos;
  ReadProtoFromFile(path, &protos);
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
  WriteProtoToFile(protos, path, PathWantsText(path));
}

}  // namespace halfcaf
