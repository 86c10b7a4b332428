#include "onnx/onnx_import.h"


#include <algorithm>
#include <set>

#include "core/argument.h"
#include "core/bfloat16.h"
#include "core/half.h"
#include "core/operator.h"
#include "core/proto_io.h"
#include "core/strings.h"
#include "onnx/converter.h"
#include "onnx/isolated_shape_inference.h"

namespace halfcaf {

bool OnnxAvailable() { return true; }

const char* OnnxMissingHint() {
  return "ONNX support needs libonnx-dev (apt; tools/setup_deps.sh installs it) and a rebuild "
         "with HALFCAF_USE_ONNX=AUTO";
}

bool IsOnnxPath(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

namespace {

using onnx_import::ConvertContext;

std::string Dirname(const std::string& path) {
  const size_t k = path.rfind('/');
  return k == std::string::npos ? "." : path.substr(0, k);
}

// Static dims of a value's type (-1 for a symbolic or missing dim); false for a non-tensor.
bool TypeShape(const onnx::TypeProto& type, DataType* dtype, std::vector<int64_t>* dims,
               bool* has_shape) {
  if (!type.has_tensor_type()) return false;
  const auto& tt = type.tensor_type();
  *dtype = onnx_import::FromOnnxType(tt.elem_type());
  dims->clear();
  *has_shape = tt.has_shape();
  for (const auto& d : tt.shape().dim()) dims->push_back(d.has_dim_value() ? d.dim_value() : -1);
  return true;
}

// Fixes symbolic dims of the graph's inputs from the caller's options (before shape inference).
void ApplyInputDims(const OnnxImportOptions& options, const std::set<std::string>& initializers,
                    onnx::GraphProto* graph) {
  for (auto& in : *graph->mutable_input()) {
    if (initializers.count(in.name()) || !in.type().has_tensor_type()) continue;
    auto* tensor_shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (options.batch_size > 0 && tensor_shape->dim_size() > 0) {
      tensor_shape->mutable_dim(0)->set_dim_value(options.batch_size);
    }
    auto it = options.input_dims.find(in.name());
    if (it == options.input_dims.end()) it = options.input_dims.find("");
    if (it == options.input_dims.end()) continue;
    auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    const std::vector<int64_t>& want = it->second;
    const bool partial = it->first.empty();  // "": the leading dims only (the batch)
    HALFCAF_ENFORCE(partial || shape->dim_size() == 0 ||
                        shape->dim_size() == static_cast<int>(want.size()),
                    "input '", in.name(), "' has ", shape->dim_size(), " dims; ", want.size(),
                    " were given");
    if (shape->dim_size() == 0 && !partial) {
      for (int64_t d : want) shape->add_dim()->set_dim_value(d);
      continue;
    }
    for (size_t k = 0; k < want.size() && static_cast<int>(k) < shape->dim_size(); ++k) {
      auto* dim = shape->mutable_dim(static_cast<int>(k));
      if (partial && dim->has_dim_value()) continue;
      dim->set_dim_value(want[k]);
    }
  }
}

// The init-net op that makes constant `t` as blob `name`.
OperatorDef FillOp(const std::string& name, const Tensor& t) {
  std::vector<Argument> args{MakeArgument("shape", t.dims())};
  std::string type = "GivenTensorFill";
  Argument values;
  values.set_name("values");
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case DataType::FLOAT:
      for (int64_t i = 0; i < n; ++i) values.add_floats(t.data<float>()[i]);
      break;
    case DataType::FLOAT16:
      for (int64_t i = 0; i < n; ++i) values.add_floats(static_cast<float>(t.data<Half>()[i]));
      args.push_back(MakeArgument("dtype", "float16"));
      break;
    case DataType::BFLOAT16:  // every bfloat16 value is a float exactly
      for (int64_t i = 0; i < n; ++i) values.add_floats(static_cast<float>(t.data<BFloat16>()[i]));
      args.push_back(MakeArgument("dtype", "bfloat16"));
      break;
    case DataType::DOUBLE:
      type = "GivenTensorDoubleFill";
      for (int64_t i = 0; i < n; ++i) values.add_floats(static_cast<float>(t.data<double>()[i]));
      break;
    case DataType::INT32:
      type = "GivenTensorIntFill";
      for (int64_t i = 0; i < n; ++i) values.add_ints(t.data<int32_t>()[i]);
      break;
    case DataType::INT64:
      type = "GivenTensorInt64Fill";
      for (int64_t i = 0; i < n; ++i) values.add_ints(t.data<int64_t>()[i]);
      break;
    case DataType::BOOL:
      type = "GivenTensorBoolFill";
      for (int64_t i = 0; i < n; ++i) values.add_ints(t.data<bool>()[i] ? 1 : 0);
      break;
    default:
      throw OnnxUnsupported(__FILE__, __LINE__,
                            MakeString("constant '", name, "' has type ", DataTypeName(t.dtype()),
                                       ", which halfcaf's init nets cannot fill"));
  }
  args.push_back(values);
  return MakeOperatorDef(type, "", {}, {name}, args);
}

}  // namespace

ImportedNet ImportOnnxBytes(const std::string& bytes, const std::string& source,
                            const OnnxImportOptions& options) {
  onnx::ModelProto model;
  HALFCAF_ENFORCE(model.ParseFromString(bytes), source, ": not an ONNX model (the protobuf does "
                  "not parse as a ModelProto)");
  HALFCAF_ENFORCE(model.has_graph(), source, ": the ONNX model has no graph");
  ImportedNet out;
  out.ir_version = model.ir_version();
  out.producer = model.producer_name();
  for (const auto& os : model.opset_import()) {
    if (os.domain().empty() || os.domain() == "ai.onnx") out.opset = os.version();
  }
  if (out.opset == 0 && model.opset_import_size() == 0) out.opset = 1;  // IR v1/v2 models
  if (out.opset < 6 || out.opset > 17) {
    throw OnnxUnsupported(__FILE__, __LINE__,
                          MakeString(source, ": opset ", out.opset, " of the default domain; "
                                     "halfcaf imports opsets 6 to 17"));
  }
  onnx::GraphProto* graph = model.mutable_graph();
  std::set<std::string> initializers;
  for (const auto& t : graph->initializer()) initializers.insert(t.name());
  // Inputs fixed by the caller are initializers from here on.
  for (const auto& kv : options.constant_inputs) {
    bool found = false;
    for (const auto& in : graph->input()) found |= in.name() == kv.first;
    HALFCAF_ENFORCE(found, source, ": constant input '", kv.first, "' is not an input of the graph");
    if (initializers.count(kv.first)) continue;
    onnx::TensorProto* t = graph->add_initializer();
    t->set_name(kv.first);
    t->set_data_type(onnx_import::ToOnnxType(kv.second.dtype()));
    for (int64_t d : kv.second.dims()) t->add_dims(d);
    t->set_raw_data(std::string(static_cast<const char*>(kv.second.raw_data()), kv.second.nbytes()));
    initializers.insert(kv.first);
  }
  ApplyInputDims(options, initializers, graph);
  auto progress = [&](const char* stage, int64_t done, int64_t total) {
    if (options.progress) options.progress(stage, done, total);
  };
  // ONNX's shape inference fills value_info (static shapes where they follow from the inputs).
  progress("shape inference", 0, 1);
  onnx_import::InferShapesIsolated(&model, source);
  progress("shape inference", 1, 1);
  graph = model.mutable_graph();

  ConvertContext::Graph g;
  g.opset = out.opset;
  g.predict.set_name(graph->name().empty() ? "onnx_predict" : graph->name());
  const std::string dir =
      options.external_data_dir.empty() ? Dirname(source) : options.external_data_dir;
  int64_t done = 0;
  for (const auto& t : graph->initializer()) {
    Tensor value;
    onnx_import::TensorFromOnnx(t, dir, &value);
    g.consts.CreateTensor(t.name())->CopyFrom(value);
    g.shapes[t.name()] = TensorShape{value.dims(), value.dtype(), false};
    progress("initializers", ++done, graph->initializer_size());
  }
  auto record = [&](const onnx::ValueInfoProto& v, std::vector<OnnxValueInfo>* list) {
    OnnxValueInfo info;
    info.name = v.name();
    bool has_shape = false;
    if (!TypeShape(v.type(), &info.dtype, &info.dims, &has_shape)) {
      throw OnnxUnsupported(__FILE__, __LINE__, MakeString(source, ": graph value '", v.name(),
                                                           "' is not a tensor"));
    }
    if (list) list->push_back(info);
    if (!initializers.count(v.name()) && has_shape) {
      g.shapes[v.name()] = TensorShape{info.dims, info.dtype, false};
    } else if (!initializers.count(v.name()) && info.dtype != DataType::UNDEFINED) {
      g.shapes[v.name()] = TensorShape{{}, info.dtype, true};
    }
  };
  for (const auto& v : graph->input()) {
    if (!initializers.count(v.name())) record(v, &out.inputs);
  }
  for (const auto& v : graph->value_info()) record(v, nullptr);
  for (const auto& v : graph->output()) record(v, &out.outputs);
  for (const auto& in : out.inputs) {
    if (in.dtype == DataType::UNDEFINED) {
      throw OnnxUnsupported(__FILE__, __LINE__,
                            MakeString(source, ": graph input '", in.name,
                                       "' has an element type halfcaf does not hold"));
    }
  }

  for (const auto& node : graph->node()) g.used.insert(node.input().begin(), node.input().end());
  for (const auto& v : graph->output()) g.used.insert(v.name());
  int64_t nodes_done = 0;
  for (const auto& node : graph->node()) {
    ConvertContext c(node, &g);
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      c.Unsupported("domain '" + node.domain() + "' is not supported");
    }
    const onnx_import::Converter* fn = onnx_import::FindConverter(node.op_type());
    if (!fn) c.Unsupported("operator type " + node.op_type() + " is not supported");
    (*fn)(c);
    progress("nodes", ++nodes_done, graph->node_size());
  }

  // The predict net reads the real inputs and writes the outputs; constants it reads (and outputs
  // that folded to constants) come from the init net.
  for (const auto& in : out.inputs) g.predict.add_external_input(in.name);
  std::set<std::string> produced, needed;
  for (const auto& op : g.predict.op()) {
    for (const auto& i : op.input()) {
      if (!produced.count(i)) needed.insert(i);
    }
    produced.insert(op.output().begin(), op.output().end());
  }
  for (const auto& o : out.outputs) {
    g.predict.add_external_output(o.name);
    if (!produced.count(o.name)) needed.insert(o.name);
  }
  out.init.set_name(g.predict.name() + "_init");
  std::set<std::string> real_inputs;
  for (const auto& in : out.inputs) real_inputs.insert(in.name);
  for (const auto& name : needed) {
    if (real_inputs.count(name)) continue;
    const Blob* b = g.consts.GetBlob(name);
    HALFCAF_ENFORCE(b && b->IsTensor(), source, ": value '", name,
                    "' is read but neither an input, an initializer nor any node's output");
    *out.init.add_op() = FillOp(name, b->GetTensor());
    g.predict.add_external_input(name);
  }
  // Static dims of the values, for the gradient makers (a NumPy broadcast shows in them).
  for (const auto& kv : g.shapes) {
    if (kv.second.unknown) continue;
    if (std::all_of(kv.second.dims.begin(), kv.second.dims.end(), [](int64_t d) { return d >= 0; })) {
      out.blob_dims[kv.first] = kv.second.dims;
    }
  }
  for (const auto& op : out.init.op()) {
    const Blob* b = g.consts.GetBlob(op.output(0));
    if (b && b->IsTensor()) out.blob_dims[op.output(0)] = b->GetTensor().dims();
  }
  out.predict = std::move(g.predict);
  return out;
}

ImportedNet ImportOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  try {
    return ImportOnnxBytes(ReadFileBytes(path, "ONNX model"), path, options);
  } catch (EnforceNotMet& e) {
    if (e.message().find(path) == std::string::npos) e.AddContext("importing " + path);
    throw;
  }
}

void ReadOnnxTensorFile(const std::string& path, Tensor* tensor, std::string* name) {
  onnx::TensorProto p;
  HALFCAF_ENFORCE(p.ParseFromString(ReadFileBytes(path, "ONNX tensor")), path,
                  ": not an ONNX TensorProto (the protobuf does not parse)");
  // Other messages (a ModelProto) may parse too; a tensor has a known type and a plain name.
  bool plain = onnx::TensorProto::DataType_IsValid(p.data_type()) &&
               p.data_type() != onnx::TensorProto::UNDEFINED;
  for (unsigned char ch : p.name()) plain &= ch >= 0x20 && ch < 0x7f;
  HALFCAF_ENFORCE(plain, path, ": not an ONNX TensorProto (no element type, or a name that is "
                  "not text)");
  try {
    onnx_import::TensorFromOnnx(p, Dirname(path), tensor);
  } catch (EnforceNotMet& e) {
    e.AddContext("reading " + path);
    throw;
  }
  if (name) *name = p.name();
}

}  // namespace halfcaf
