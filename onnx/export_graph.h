// The ONNX exporter's graph builder, shared by onnx_export.cc (the graph: inputs, SSA renaming,
// outputs, checker) and the per-family converters export_nn.cc, export_math.cc and
// export_shape.cc, each of which returns false for an operator type it does not know.
// Internal to onnx/.
#pragma once

#include <onnx/onnx_pb.h>

#include <set>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/workspace.h"
#include "onnx/converter.h"
#include "onnx/onnx_export.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {
namespace onnx_export {

constexpr int64_t kOpset = 11;

class Exporter {
 public:
  // `ws` holds the parameters (`params`, from the init net or a checkpoint) and the activations
  // of one run of the net on zeros, whose dims Dims() gives.
  Exporter(const OnnxExportOptions& o, const Workspace& ws, const std::set<std::string>& params,
           onnx::GraphProto* g)
      : o_(o), ws_(ws), params_(params), g_(g) {}

  [[noreturn]] void Refuse(const OperatorDef& op, const std::string& what) const {
    HALFCAF_THROW("ONNX export: op ", op.type(), op.name().empty() ? "" : " '" + op.name() + "'",
                  " (output '", op.output_size() ? op.output(0) : "", "'): ", what);
  }

  // A parameter the predict net reads becomes an initializer the first time it is used.
  void Use(const std::string& name) {
    if (done_.count(name) || inputs_.count(name) || !params_.count(name)) return;
    const Blob* b = ws_.GetBlob(name);
    if (!b || !b->IsTensor()) return;
    Tensor cpu;
    cpu.CopyFrom(b->GetTensor());
    AddInitializer(name, cpu);
  }

  void AddInitializer(const std::string& name, const Tensor& t) {
    onnx::TensorProto* p = g_->add_initializer();
    p->set_name(name);
    for (int64_t d : t.dims()) p->add_dims(d);
    const int32_t type = onnx_import::ToOnnxType(t.dtype());
    HALFCAF_ENFORCE(type != onnx::TensorProto::UNDEFINED, "ONNX export: blob '", name, "' is ",
                    DataTypeName(t.dtype()), ", which ONNX cannot hold");
    p->set_data_type(type);
    p->set_raw_data(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
    done_.insert(name);
  }

  std::string Int64s(const std::vector<int64_t>& v, const std::string& hint) {
    Tensor t(std::vector<int64_t>{static_cast<int64_t>(v.size())}, DataType::INT64);
    std::copy(v.begin(), v.end(), t.mutable_data<int64_t>());
    const std::string name = Fresh(hint);
    AddInitializer(name, t);
    return name;
  }

  std::string Floats(const std::vector<float>& v, const std::vector<int64_t>& dims,
                     const std::string& hint) {
    Tensor t(dims, DataType::FLOAT);
    std::copy(v.begin(), v.end(), t.mutable_data<float>());
    const std::string name = Fresh(hint);
    AddInitializer(name, t);
    return name;
  }

  std::string Fresh(const std::string& hint) {
    return hint + "__onnx_" + std::to_string(counter_++);
  }

  onnx::NodeProto* Node(const std::string& type, const OperatorDef& op,
                        const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
    onnx::NodeProto* n = g_->add_node();
    n->set_op_type(type);
    // Node names must be unique in ONNX (in-place ops often share theirs).
    std::string name = op.name().empty() ? (outputs.empty() ? type : outputs[0]) : op.name();
    if (!node_names_.insert(name).second) {
      name += "_" + std::to_string(counter_++);
      node_names_.insert(name);
    }
    n->set_name(name);
    for (const auto& i : inputs) {
      Use(i);
      n->add_input(i);
    }
    for (const auto& out : outputs) n->add_output(out);
    return n;
  }

  static void Ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void Int(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void Float(onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void String(onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }

  void SetInputs(const std::set<std::string>& inputs) { inputs_ = inputs; }
  // Converts `op` or refuses it (Refuse) naming it.
  void Convert(const OperatorDef& op);

 private:
  // Each returns false when it does not know op's type.
  bool ConvertNn(const OperatorDef& op);     // export_nn.cc: conv, pool, BN, FC, LRN, resize, pad
  bool ConvertMath(const OperatorDef& op);   // export_math.cc: element-wise, reductions, matmul
  bool ConvertShape(const OperatorDef& op);  // export_shape.cc: copies, reshapes, slicing, casts
  void ConvLike(const OperatorDef& op, bool transposed);
  void Pool(const OperatorDef& op, const std::string& type);
  // `x` reshaped to `dims` (a Reshape node), for operands ONNX broadcasts differently.
  std::string Reshaped(const OperatorDef& op, const std::string& x, const std::vector<int64_t>& dims);
  void RequireNCHW(const OperatorDef& op) const {
    const std::string order = ArgumentHelper(op).GetSingleArgument<std::string>("order", "NCHW");
    if (order != "NCHW" && order != "nchw") Refuse(op, "only NCHW is exported (order " + order + ")");
  }
  // A blob's dims in the run on zeros (parameters: their own).
  std::vector<int64_t> Dims(const std::string& blob) const {
    const Blob* b = ws_.GetBlob(blob);
    HALFCAF_ENFORCE(b && b->IsTensor(), "ONNX export: blob '", blob, "' has no shape");
    return b->GetTensor().dims();
  }

  const OnnxExportOptions& o_;
  const Workspace& ws_;
  const std::set<std::string>& params_;
  onnx::GraphProto* g_;
  std::set<std::string> done_, inputs_, node_names_;
  int counter_ = 0;
};

}  // namespace onnx_export
}  // namespace halfcaf
