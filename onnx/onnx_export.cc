#include "onnx/onnx_export.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <map>
#include <set>

#include "core/strings.h"
#include "onnx/converter.h"
#include "onnx/export_graph.h"

namespace halfcaf {

namespace onnx_export {

void Exporter::Convert(const OperatorDef& op) {
  if (ConvertNn(op) || ConvertMath(op) || ConvertShape(op)) return;
  Refuse(op, "no ONNX export for this operator type");
}

namespace {

// Ops that need labels: dropped (or, SoftmaxWithLoss, replaced) when exporting for inference.
bool IsTrainingOnly(const std::string& type) {
  return type == "Accuracy" || type == "LabelCrossEntropy" || type == "AveragedLoss" ||
         type == "SquaredL2Distance";
}

}  // namespace
}  // namespace onnx_export

using onnx_export::Exporter;
using onnx_export::IsTrainingOnly;
using onnx_export::kOpset;

std::string ExportOnnx(const NetDef& init, const NetDef& predict, const OnnxExportOptions& o,
                       const Workspace* params, int* params_taken) {
  Workspace ws;
  ws.RunNetOnce(init);
  if (params) {
    // Only the init net's blobs (the parameters) are replaced: a checkpoint also holds optimizer
    // state, which the exported graph never reads.
    int taken = 0;
    const std::vector<std::string> parameters = ws.Blobs();
    for (const auto& name : parameters) {
      const Blob* b = params->GetBlob(name);
      if (!b || !b->IsTensor()) continue;
      ws.CreateTensor(name)->CopyFrom(b->GetTensor());
      ++taken;
    }
    HALFCAF_ENFORCE(taken > 0 || parameters.empty(), "the parameters given hold none of the init "
                    "net's ", parameters.size(), " blobs (e.g. '", parameters.front(),
                    "'): they are not this net's");
    if (params_taken) *params_taken = taken;
  }
  // The parameters: what the init net made. Everything else the ops read is an input or an
  // activation.
  const std::vector<std::string> param_list = ws.Blobs();
  const std::set<std::string> parameters(param_list.begin(), param_list.end());
  // The ops to export: training-only ones dropped, SoftmaxWithLoss as Softmax of its logits.
  std::vector<OperatorDef> ops;
  std::set<std::string> labels;
  for (const auto& op : predict.op()) {
    if (o.strip_training && op.type() == "SoftmaxWithLoss") {
      if (op.input_size() > 1) labels.insert(op.input(1));
      ops.push_back(MakeOperatorDef("Softmax", op.name(), {op.input(0)}, {op.output(0)}));
      continue;
    }
    if (o.strip_training && IsTrainingOnly(op.type())) {
      for (int i = 1; i < op.input_size(); ++i) labels.insert(op.input(i));
      continue;
    }
    ops.push_back(op);
  }
  // ONNX graphs are in single static assignment form: every write of a blob but its last gets a
  // new name (in-place ops such as Relu(x) -> x), and reads follow the renaming.
  {
    std::map<std::string, int> writes;
    for (const auto& op : ops) {
      for (const auto& out : op.output()) ++writes[out];
    }
    std::map<std::string, std::string> current;
    std::map<std::string, int> seen;
    for (auto& op : ops) {
      for (auto& in : *op.mutable_input()) {
        auto it = current.find(in);
        if (it != current.end()) in = it->second;
      }
      for (auto& out : *op.mutable_output()) {
        const std::string original = out;
        const bool last = ++seen[original] == writes[original];
        if (!last || parameters.count(original)) {
          out = original + "__v" + std::to_string(seen[original]);
          if (last && !parameters.count(original)) out = original;
        }
        current[original] = out;
      }
    }
  }
  onnx::ModelProto model;
  model.set_ir_version(7);
  model.set_producer_name("halfcaf");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name(o.graph_name);
  // Inputs: the blobs the ops read that no op writes, that the init net did not make and that
  // are not labels of dropped ops.
  std::set<std::string> produced, inputs;
  std::vector<std::string> ordered_inputs;
  for (const auto& op : ops) {
    for (const auto& in : op.input()) {
      if (produced.count(in) || parameters.count(in) || labels.count(in) || inputs.count(in)) continue;
      inputs.insert(in);
      ordered_inputs.push_back(in);
    }
    produced.insert(op.output().begin(), op.output().end());
  }
  HALFCAF_ENFORCE(!ordered_inputs.empty(), "ONNX export: the net reads no input");
  for (const auto& name : ordered_inputs) {
    auto it = o.input_dims.find(name);
    if (it == o.input_dims.end() && ordered_inputs.size() == 1) it = o.input_dims.find("");
    HALFCAF_ENFORCE(it != o.input_dims.end(), "ONNX export: give the shape of input '", name,
                    "' (e.g. --input_shape 1,3,224,224)", ordered_inputs.size() > 1
                        ? MakeString("; the net reads ", ordered_inputs.size(), " inputs")
                        : std::string());
    auto* v = g->add_input();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : it->second) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  // Every blob's dims (the converters' and the outputs'): the ops run once on zeros of the input
  // shapes, SpatialBN and Dropout in test mode (so the parameters stay as they are).
  Workspace& run = ws;
  for (const auto& name : ordered_inputs) {
    Tensor* t = run.CreateTensor(name);
    *t = Tensor(o.input_dims.count(name) ? o.input_dims.at(name) : o.input_dims.at(""),
                DataType::FLOAT);
    std::memset(t->raw_mutable_data(), 0, t->nbytes());
  }
  NetDef once;
  once.set_name("onnx_export_shapes");
  for (OperatorDef op : ops) {
    if (op.type() == "SpatialBN" || op.type() == "Dropout") {
      SetArgument(&op, "is_test", 1);
      while (op.output_size() > 1) op.mutable_output()->RemoveLast();
    }
    *once.add_op() = op;
  }
  run.RunNetOnce(once);
  Exporter ex(o, ws, parameters, g);
  ex.SetInputs(inputs);
  for (const auto& op : ops) ex.Convert(op);
  std::vector<std::string> outputs = o.outputs;
  if (outputs.empty()) {
    for (const auto& name : predict.external_output()) {
      if (produced.count(name)) outputs.push_back(name);
    }
  }
  if (outputs.empty()) outputs.push_back(ops.back().output(0));
  for (const auto& name : outputs) {
    HALFCAF_ENFORCE(produced.count(name), "ONNX export: output '", name, "' is written by no op");
    const Tensor& t = run.GetTensor(name);
    auto* v = g->add_output();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx_import::ToOnnxType(t.dtype()));
    for (int64_t d : t.dims()) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    HALFCAF_THROW("ONNX export: the exported model fails ONNX's checker: ", e.what());
  }
  return model.SerializeAsString();
}

}  // namespace halfcaf
