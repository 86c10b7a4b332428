#include "core/tensor_proto.h"

#include <cstring>
#include <vector>

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

void TensorFromProto(const TensorProto& proto, Tensor* tensor) {
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  for (int64_t d : dims) {
    HALFCAF_ENFORCE(d >= 0, Label(proto), " has a negative dimension in ", DimsString(dims));
  }
  HALFCAF_ENFORCE(!proto.has_segment(), Label(proto), " is a segment; segments are not supported");
  const DataType dt = DataTypeFromInt(proto.data_type());
  HALFCAF_ENFORCE(dt != DataType::STRING && dt != DataType::UNDEFINED, Label(proto), " has type ",
                  DataTypeName(dt), ", which tensors cannot hold");
  tensor->SetDevice(Device());
  tensor->Resize(dims);
  const int64_t n = tensor->numel();
  void* raw = tensor->raw_mutable_data(dt);
  if (proto.has_raw_data()) {
    HALFCAF_ENFORCE(static_cast<int64_t>(proto.raw_data().size()) ==
                        n * static_cast<int64_t>(DataTypeSize(dt)),
                    Label(proto), " has dims ", DimsString(dims), " (", n, " elements of ",
                    DataTypeName(dt), ") but raw_data holds ", proto.raw_data().size(), " bytes");
    std::memcpy(raw, proto.raw_data().data(), proto.raw_data().size());
    return;
  }
  auto check = [&](int64_t got, const char* field) {
    HALFCAF_ENFORCE(got == n, Label(proto), " has dims ", DimsString(dims), " (", n,
                    " elements) but ", got, " values in ", field);
  };
  switch (dt) {
    case DataType::FLOAT:
      check(proto.float_data_size(), "float_data");
      CopyConverted(proto.float_data(), static_cast<float*>(raw));
      return;
    case DataType::DOUBLE:
      check(proto.double_data_size(), "double_data");
      CopyConverted(proto.double_data(), static_cast<double*>(raw));
      return;
    case DataType::INT64:
      check(proto.int64_data_size(), "int64_data");
      CopyConverted(proto.int64_data(), static_cast<int64_t*>(raw));
      return;
    case DataType::FLOAT16: {
      check(proto.int32_data_size(), "int32_data");
      Half* d = static_cast<Half*>(raw);
      for (int64_t i = 0; i < n; ++i) d[i].x = static_cast<uint16_t>(proto.int32_data(i));
      return;
    }
    case DataType::BYTE:
    case DataType::UINT8:
      if (proto.has_byte_data()) {
        check(static_cast<int64_t>(proto.byte_data().size()), "byte_data");
        std::memcpy(raw, proto.byte_data().data(), n);
        return;
      }
      break;
    default:
      break;
  }
  check(proto.int32_data_size(), "int32_data");
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
