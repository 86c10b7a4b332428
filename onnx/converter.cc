#include "onnx/converter.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "core/argument.h"
#include "core/bfloat16.h"
#include "core/checked_math.h"
#include "core/float_io.h"
#include "core/half.h"
#include "core/operator.h"
#include "core/strings.h"

namespace halfcaf {
namespace onnx_import {

namespace {

std::map<std::string, Converter>& Registry() {
  static std::map<std::string, Converter> r;
  return r;
}

const std::string kEmpty;

}  // namespace

ConverterRegistration::ConverterRegistration(const char* op_type, Converter fn) {
  Registry()[op_type] = std::move(fn);
}

const Converter* FindConverter(const std::string& op_type) {
  auto it = Registry().find(op_type);
  return it == Registry().end() ? nullptr : &it->second;
}

std::vector<std::string> ConvertedOpTypes() {
  std::vector<std::string> out;
  for (const auto& kv : Registry()) out.push_back(kv.first);
  return out;
}

// ---- element types and tensors ----------------------------------------------------------------

DataType FromOnnxType(int32_t t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DataType::FLOAT;
    case onnx::TensorProto::UINT8: return DataType::UINT8;
    case onnx::TensorProto::INT8: return DataType::INT8;
    case onnx::TensorProto::UINT16: return DataType::UINT16;
    case onnx::TensorProto::INT16: return DataType::INT16;
    case onnx::TensorProto::INT32: return DataType::INT32;
    case onnx::TensorProto::INT64: return DataType::INT64;
    case onnx::TensorProto::BOOL: return DataType::BOOL;
    case onnx::TensorProto::FLOAT16: return DataType::FLOAT16;
    case onnx::TensorProto::BFLOAT16: return DataType::BFLOAT16;
    case onnx::TensorProto::DOUBLE: return DataType::DOUBLE;
    default: return DataType::UNDEFINED;
  }
}

int32_t ToOnnxType(DataType t) {
  switch (t) {
    case DataType::FLOAT: return onnx::TensorProto::FLOAT;
    case DataType::UINT8: return onnx::TensorProto::UINT8;
    case DataType::INT8: return onnx::TensorProto::INT8;
    case DataType::UINT16: return onnx::TensorProto::UINT16;
    case DataType::INT16: return onnx::TensorProto::INT16;
    case DataType::INT32: return onnx::TensorProto::INT32;
    case DataType::INT64: return onnx::TensorProto::INT64;
    case DataType::BOOL: return onnx::TensorProto::BOOL;
    case DataType::FLOAT16: return onnx::TensorProto::FLOAT16;
    case DataType::BFLOAT16: return onnx::TensorProto::BFLOAT16;
    case DataType::DOUBLE: return onnx::TensorProto::DOUBLE;
    default: return onnx::TensorProto::UNDEFINED;
  }
}

const char* OnnxTypeName(int32_t t) {
  return onnx::TensorProto::DataType_IsValid(t)
             ? onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(t))
                   .c_str()
             : "an unknown type";
}

namespace {

// The raw little-endian bytes of an external-data tensor.
std::string ReadExternal(const onnx::TensorProto& p, const std::string& dir) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    if (kv.key() == "offset") offset = std::stoll(kv.value());
    if (kv.key() == "length") length = std::stoll(kv.value());
  }
  HALFCAF_ENFORCE(!location.empty(), "tensor '", p.name(), "': external data without a location");
  HALFCAF_ENFORCE(location.find("..") == std::string::npos && location[0] != '/',
                  "tensor '", p.name(), "': external data location '", location,
                  "' must be a relative path inside the model's folder");
  const std::string path = (dir.empty() ? std::string(".") : dir) + "/" + location;
  std::ifstream f(path, std::ios::binary);
  HALFCAF_ENFORCE(f.good(), "tensor '", p.name(), "': cannot read its external data file ", path);
  f.seekg(0, std::ios::end);
  const int64_t size = static_cast<int64_t>(f.tellg());
  if (length < 0) length = size - offset;
  HALFCAF_ENFORCE(offset >= 0 && length >= 0 && offset + length <= size, "tensor '", p.name(),
                  "': external data [", offset, ", ", offset + length, ") is past the end of ",
                  path, " (", size, " bytes)");
  std::string bytes(static_cast<size_t>(length), '\0');
  f.seekg(offset);
  f.read(&bytes[0], length);
  return bytes;
}

// The number of values a tensor stored in the typed fields carries (float16 and bfloat16 as their
// bit patterns in int32_data), or -1 for a type without a typed field.
int64_t TypedFieldSize(const onnx::TensorProto& p, DataType dtype) {
  switch (dtype) {
    case DataType::FLOAT: return p.float_data_size();
    case DataType::DOUBLE: return p.double_data_size();
    case DataType::INT64: return p.int64_data_size();
    case DataType::INT32:
    case DataType::INT16:
    case DataType::INT8:
    case DataType::UINT16:
    case DataType::UINT8:
    case DataType::BOOL:
    case DataType::FLOAT16:
    case DataType::BFLOAT16: return p.int32_data_size();
    default: return -1;
  }
}

template <typename T, typename Field>
void CopyField(const Field& field, int64_t n, Tensor* out) {
  T* d = static_cast<T*>(out->raw_mutable_data());
  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(field.Get(static_cast<int>(i)));
}

}  // namespace

void TensorFromOnnx(const onnx::TensorProto& p, const std::string& dir, Tensor* out) {
  const DataType dtype = FromOnnxType(p.data_type());
  if (dtype == DataType::UNDEFINED) {
    throw OnnxUnsupported(__FILE__, __LINE__,
                          MakeString("tensor '", p.name(), "' has element type ",
                                     OnnxTypeName(p.data_type()),
                                     ", which halfcaf does not hold"));
  }
  HALFCAF_ENFORCE(!p.has_segment(), "tensor '", p.name(), "' is segmented (not supported)");
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  for (int64_t d : dims) HALFCAF_ENFORCE(d >= 0, "tensor '", p.name(), "' has a negative dim");
  // The data present is checked against the dims before anything is allocated: a malformed file
  // claiming a huge shape is an error, not an allocation of that size.
  const int64_t n = CheckedNumel(dims, "tensor '", p.name(), "'");
  const size_t bytes = CheckedBytes(n, DataTypeSize(dtype), "tensor '", p.name(), "'");
  const bool external = p.data_location() == onnx::TensorProto::EXTERNAL;
  if (external || p.has_raw_data()) {
    const std::string raw = external ? ReadExternal(p, dir) : p.raw_data();
    HALFCAF_ENFORCE(raw.size() == bytes, "tensor '", p.name(), "' has ", raw.size(),
                    " bytes of data for ", n, " elements of ", DataTypeName(dtype));
    *out = Tensor(dims, dtype);
    if (bytes > 0) std::memcpy(out->raw_mutable_data(), raw.data(), bytes);
    return;
  }
  const int64_t values = TypedFieldSize(p, dtype);
  if (values < 0) HALFCAF_THROW("tensor '", p.name(), "': unexpected type");
  HALFCAF_ENFORCE(values == n, "tensor '", p.name(), "' has ", values, " values for ", n,
                  " elements");
  *out = Tensor(dims, dtype);
  switch (dtype) {
    case DataType::FLOAT: CopyField<float>(p.float_data(), n, out); break;
    case DataType::DOUBLE: CopyField<double>(p.double_data(), n, out); break;
    case DataType::INT64: CopyField<int64_t>(p.int64_data(), n, out); break;
    case DataType::INT32: CopyField<int32_t>(p.int32_data(), n, out); break;
    case DataType::INT16: CopyField<int16_t>(p.int32_data(), n, out); break;
    case DataType::INT8: CopyField<int8_t>(p.int32_data(), n, out); break;
    case DataType::UINT16: CopyField<uint16_t>(p.int32_data(), n, out); break;
    case DataType::UINT8: CopyField<uint8_t>(p.int32_data(), n, out); break;
    case DataType::BOOL: CopyField<bool>(p.int32_data(), n, out); break;
    case DataType::FLOAT16:
    case DataType::BFLOAT16: CopyField<uint16_t>(p.int32_data(), n, out); break;
    default: HALFCAF_THROW("tensor '", p.name(), "': unexpected type");
  }
}

// ---- the context -------------------------------------------------------------------------------

std::string ConvertContext::Describe() const {
  return MakeString("node '", node_.name().empty() ? Output(0) : node_.name(), "' (",
                    node_.op_type(), ", opset ", g_->opset, ")");
}

void ConvertContext::Unsupported(const std::string& what) const {
  throw OnnxUnsupported(__FILE__, __LINE__, Describe() + ": " + what);
}

const onnx::AttributeProto* ConvertContext::Attr(const std::string& name) const {
  for (const auto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

bool ConvertContext::Has(const std::string& name) const { return Attr(name) != nullptr; }

int64_t ConvertContext::Int(const std::string& name, int64_t dflt) const {
  const auto* a = Attr(name);
  if (!a) return dflt;
  if (a->type() != onnx::AttributeProto::INT) Unsupported("attribute " + name + " is not an int");
  return a->i();
}

float ConvertContext::Float(const std::string& name, float dflt) const {
  const auto* a = Attr(name);
  if (!a) return dflt;
  if (a->type() == onnx::AttributeProto::INT) return static_cast<float>(a->i());
  if (a->type() != onnx::AttributeProto::FLOAT) Unsupported("attribute " + name + " is not a float");
  return a->f();
}

std::string ConvertContext::String(const std::string& name, const std::string& dflt) const {
  const auto* a = Attr(name);
  if (!a) return dflt;
  if (a->type() != onnx::AttributeProto::STRING) Unsupported("attribute " + name + " is not a string");
  return a->s();
}

std::vector<int64_t> ConvertContext::Ints(const std::string& name) const {
  const auto* a = Attr(name);
  if (!a) return {};
  if (a->type() != onnx::AttributeProto::INTS) Unsupported("attribute " + name + " is not ints");
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<float> ConvertContext::Floats(const std::string& name) const {
  const auto* a = Attr(name);
  if (!a) return {};
  if (a->type() != onnx::AttributeProto::FLOATS) Unsupported("attribute " + name + " is not floats");
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

bool ConvertContext::TensorAttr(const std::string& name, Tensor* out) const {
  const auto* a = Attr(name);
  if (!a) return false;
  if (a->type() != onnx::AttributeProto::TENSOR) Unsupported("attribute " + name + " is not a tensor");
  try {
    TensorFromOnnx(a->t(), "", out);
  } catch (OnnxUnsupported& e) {
    Unsupported(std::string("attribute ") + name + ": " + e.message());
  }
  return true;
}

void ConvertContext::OnlyAttributes(const std::set<std::string>& known) const {
  for (const auto& a : node_.attribute()) {
    if (!known.count(a.name())) Unsupported("attribute '" + a.name() + "' is not supported");
  }
}

int ConvertContext::NumInputs() const {
  int n = node_.input_size();
  while (n > 0 && node_.input(n - 1).empty()) --n;
  return n;
}

const std::string& ConvertContext::Input(int i) const {
  return i < node_.input_size() ? node_.input(i) : kEmpty;
}

int ConvertContext::NumOutputs() const {
  int n = node_.output_size();
  while (n > 0 && node_.output(n - 1).empty()) --n;
  return n;
}

const std::string& ConvertContext::Output(int i) const {
  return i < node_.output_size() ? node_.output(i) : kEmpty;
}

const Tensor* ConvertContext::Const(int i) const {
  if (!HasInput(i) || g_->variables.count(Input(i))) return nullptr;
  const Blob* b = g_->consts.GetBlob(Input(i));
  return b && b->IsTensor() ? &b->GetTensor() : nullptr;
}

std::vector<int64_t> ConvertContext::ConstInts(int i, const std::string& what) const {
  const Tensor* t = Const(i);
  if (!t) Unsupported(what + " '" + Input(i) + "' is computed at run time; halfcaf needs it as a constant");
  std::vector<int64_t> out(static_cast<size_t>(t->numel()));
  for (int64_t k = 0; k < t->numel(); ++k) {
    switch (t->dtype()) {
      case DataType::INT64: out[k] = t->data<int64_t>()[k]; break;
      case DataType::INT32: out[k] = t->data<int32_t>()[k]; break;
      case DataType::BOOL: out[k] = t->data<bool>()[k] ? 1 : 0; break;
      case DataType::FLOAT: out[k] = static_cast<int64_t>(t->data<float>()[k]); break;
      case DataType::DOUBLE: out[k] = static_cast<int64_t>(t->data<double>()[k]); break;
      default: Unsupported(what + " has type " + DataTypeName(t->dtype()));
    }
  }
  return out;
}

std::vector<float> ConvertContext::ConstFloats(int i, const std::string& what) const {
  const Tensor* t = Const(i);
  if (!t) Unsupported(what + " '" + Input(i) + "' is computed at run time; halfcaf needs it as a constant");
  std::vector<float> out(static_cast<size_t>(t->numel()));
  for (int64_t k = 0; k < t->numel(); ++k) {
    switch (t->dtype()) {
      case DataType::FLOAT: out[k] = t->data<float>()[k]; break;
      case DataType::FLOAT16: out[k] = static_cast<float>(t->data<Half>()[k]); break;
      case DataType::BFLOAT16: out[k] = static_cast<float>(t->data<BFloat16>()[k]); break;
      case DataType::DOUBLE: out[k] = static_cast<float>(t->data<double>()[k]); break;
      case DataType::INT64: out[k] = static_cast<float>(t->data<int64_t>()[k]); break;
      case DataType::INT32: out[k] = static_cast<float>(t->data<int32_t>()[k]); break;
      default: Unsupported(what + " has type " + DataTypeName(t->dtype()));
    }
  }
  return out;
}

const TensorShape* ConvertContext::Shape(int i) const {
  if (!HasInput(i)) return nullptr;
  if (const Tensor* t = Const(i)) {
    TensorShape& s = g_->shapes[Input(i)];
    s.dims = t->dims();
    s.dtype = t->dtype();
    s.unknown = false;
    return &s;
  }
  auto it = g_->shapes.find(Input(i));
  if (it == g_->shapes.end() || it->second.unknown) return nullptr;
  for (int64_t d : it->second.dims) {
    if (d < 0) return nullptr;
  }
  return &it->second;
}

const std::vector<int64_t>& ConvertContext::Dims(int i, const std::string& why) const {
  const TensorShape* s = Shape(i);
  if (!s) {
    Unsupported("the shape of input '" + Input(i) + "' is not known at import (" + why +
                "); give the model's input shapes (e.g. a fixed batch size)");
  }
  return s->dims;
}

DataType ConvertContext::DType(int i) const {
  if (const Tensor* t = Const(i)) return t->dtype();
  auto it = g_->shapes.find(Input(i));
  return it == g_->shapes.end() ? DataType::UNDEFINED : it->second.dtype;
}

void ConvertContext::RequireFloat(int i) const {
  const DataType t = DType(i);
  if (t != DataType::UNDEFINED && !IsFloatType(t)) {
    Unsupported(MakeString("input '", Input(i), "' has type ", DataTypeName(t),
                           "; halfcaf's ", op_type(), " takes float, float16 or bfloat16"));
  }
}

OperatorDef ConvertContext::Op(const std::string& type, const std::vector<std::string>& inputs,
                               const std::vector<std::string>& outputs,
                               const std::vector<Argument>& args) const {
  return MakeOperatorDef(type, node_.name(), inputs, outputs, args);
}

std::string ConvertContext::Temp(const std::string& what) {
  return (Output(0).empty() ? node_.name() : Output(0)) + "__" + what + "_" +
         std::to_string(g_->temp_counter++);
}

void ConvertContext::SetConst(const std::string& name, const Tensor& value) {
  g_->consts.CreateTensor(name)->CopyFrom(value);
  TensorShape& s = g_->shapes[name];
  s.dims = value.dims();
  s.dtype = value.dtype();
  s.unknown = false;
}

void ConvertContext::Emit(const OperatorDef& op) {
  bool all_const = op.input_size() > 0;
  for (const auto& in : op.input()) {
    const Blob* b = g_->consts.GetBlob(in);
    all_const &= b != nullptr && b->IsTensor() && !g_->variables.count(in);
  }
  if (all_const) {
    try {
      auto instance = CreateOperator(op, &g_->consts);
      instance->Run();
    } catch (EnforceNotMet& e) {
      e.AddContext("folding " + Describe() + " at import");
      throw;
    }
    for (const auto& out : op.output()) SetConst(out, g_->consts.GetTensor(out));
    return;
  }
  *g_->predict.add_op() = op;
  // Output shapes from the operator's schema where the model did not give them.
  const OpSchema* schema = OpSchemaRegistry::Schema(op.type());
  if (!schema || !schema->HasShapeInference()) return;
  std::vector<TensorShape> in;
  for (const auto& name : op.input()) {
    auto it = g_->shapes.find(name);
    if (it == g_->shapes.end()) return;
    in.push_back(it->second);
  }
  std::vector<TensorShape> out;
  try {
    out = schema->InferShapes(op, in);
  } catch (const EnforceNotMet&) {
    return;  // the run will say what is wrong
  }
  for (int k = 0; k < op.output_size() && k < static_cast<int>(out.size()); ++k) {
    if (!g_->shapes.count(op.output(k)) && !out[k].unknown) g_->shapes[op.output(k)] = out[k];
  }
}

}  // namespace onnx_import
}  // namespace halfcaf
