#include "onnx/onnx_export.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "core/argument.h"
#include "core/half.h"
#include "core/strings.h"
#include "onnx/converter.h"
#include "operators/conv_pool_op_base.h"

namespace halfcaf {

namespace {

constexpr int64_t kOpset = 11;

// Ops that need labels: dropped (or, SoftmaxWithLoss, replaced) when exporting for inference.
bool IsTrainingOnly(const std::string& type) {
  return type == "Accuracy" || type == "LabelCrossEntropy" || type == "AveragedLoss" ||
         type == "SquaredL2Distance";
}

class Exporter {
 public:
  Exporter(const OnnxExportOptions& o, const Workspace& ws, onnx::GraphProto* g)
      : o_(o), ws_(ws), g_(g) {}

  [[noreturn]] void Refuse(const OperatorDef& op, const std::string& what) const {
    HALFCAF_THROW("ONNX export: op ", op.type(), op.name().empty() ? "" : " '" + op.name() + "'",
                  " (output '", op.output_size() ? op.output(0) : "", "'): ", what);
  }

  // A parameter the predict net reads becomes an initializer the first time it is used.
  void Use(const std::string& name) {
    if (done_.count(name) || inputs_.count(name)) return;
    const Blob* b = ws_.GetBlob(name);
    if (!b || !b->IsTensor()) return;  // an activation
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
  void Convert(const OperatorDef& op);

 private:
  void ConvLike(const OperatorDef& op, bool transposed);
  void Pool(const OperatorDef& op, const std::string& type);
  void RequireNCHW(const OperatorDef& op) const {
    const std::string order = ArgumentHelper(op).GetSingleArgument<std::string>("order", "NCHW");
    if (order != "NCHW" && order != "nchw") Refuse(op, "only NCHW is exported (order " + order + ")");
  }
  std::vector<int64_t> Dims(const std::string& blob) const {
    const Blob* b = ws_.GetBlob(blob);
    return b && b->IsTensor() ? b->GetTensor().dims() : std::vector<int64_t>{};
  }

  const OnnxExportOptions& o_;
  const Workspace& ws_;
  onnx::GraphProto* g_;
  std::set<std::string> done_, inputs_, node_names_;
  int counter_ = 0;
};

void Exporter::ConvLike(const OperatorDef& op, bool transposed) {
  RequireNCHW(op);
  const ArgumentHelper a(op);
  ConvPoolArgs p = ParseConvPoolArgs(op, ConvPoolKind::kConv);
  if (p.legacy_pad != LegacyPadding::NOTSET) Refuse(op, "legacy_pad is not exported");
  if (p.kernel.empty()) {
    const std::vector<int64_t> w = Dims(op.input(1));
    if (w.size() < 3) Refuse(op, "the kernel size is not known (no kernel argument, no weight)");
    p.kernel.assign(w.begin() + 2, w.end());
  }
  std::vector<std::string> in(op.input().begin(), op.input().end());
  onnx::NodeProto* n =
      Node(transposed ? "ConvTranspose" : "Conv", op, in, {op.output(0)});
  Ints(n, "kernel_shape", p.kernel);
  Ints(n, "strides", p.stride);
  Ints(n, "pads", p.pads);
  Ints(n, "dilations", p.dilation);
  Int(n, "group", p.group);
  if (transposed) {
    std::vector<int64_t> adj = a.GetRepeatedArgument<int64_t>("adjs");
    if (adj.empty() && a.HasArgument("adj")) adj.assign(p.kernel.size(), a.GetSingleArgument<int64_t>("adj", 0));
    if (adj.empty() && a.HasArgument("adj_h")) {
      adj = {a.GetSingleArgument<int64_t>("adj_h", 0), a.GetSingleArgument<int64_t>("adj_w", 0)};
    }
    if (!adj.empty()) Ints(n, "output_padding", adj);
  }
}

void Exporter::Pool(const OperatorDef& op, const std::string& type) {
  RequireNCHW(op);
  const ConvPoolArgs p = ParseConvPoolArgs(op, ConvPoolKind::kPool);
  if (p.legacy_pad != LegacyPadding::NOTSET) Refuse(op, "legacy_pad is not exported");
  if (p.global_pooling) {
    Node(type == "MaxPool" ? "GlobalMaxPool" : "GlobalAveragePool", op, {op.input(0)},
         {op.output(0)});
    return;
  }
  const bool dilated =
      std::any_of(p.dilation.begin(), p.dilation.end(), [](int64_t d) { return d != 1; });
  // ONNX's AveragePool has dilations from opset 19 only.
  if (dilated && type != "MaxPool") Refuse(op, "dilated average pooling is not exported");
  onnx::NodeProto* n = Node(type, op, {op.input(0)}, {op.output(0)});
  Ints(n, "kernel_shape", p.kernel);
  Ints(n, "strides", p.stride);
  Ints(n, "pads", p.pads);
  if (dilated) Ints(n, "dilations", p.dilation);
  // halfcaf's AveragePool divides by the window's elements inside the input (ONNX's default,
  // count_include_pad = 0).
}

void Exporter::Convert(const OperatorDef& op) {
  const ArgumentHelper a(op);
  const std::string& t = op.type();
  auto unary = [&](const std::string& onnx_type) {
    return Node(onnx_type, op, {op.input(0)}, {op.output(0)});
  };
  if (t == "Conv" || t == "Conv1D" || t == "Conv2D" || t == "Conv3D") return ConvLike(op, false);
  if (t == "ConvTranspose") return ConvLike(op, true);
  if (t == "MaxPool" || t == "MaxPool1D" || t == "MaxPool2D" || t == "MaxPool3D") {
    return Pool(op, "MaxPool");
  }
  if (t == "AveragePool" || t == "AveragePool1D" || t == "AveragePool2D" ||
      t == "AveragePool3D") {
    return Pool(op, "AveragePool");
  }
  if (t == "SpatialBN") {
    RequireNCHW(op);
    // Inference: the running statistics (a training-mode op exports its test-mode form).
    onnx::NodeProto* n = Node("BatchNormalization", op,
                              {op.input(0), op.input(1), op.input(2), op.input(3), op.input(4)},
                              {op.output(0)});
    Float(n, "epsilon", a.GetSingleArgument<float>("epsilon", 1e-5f));
    return;
  }
  if (t == "FC" || t == "FCTransposed") {
    if (a.GetSingleArgument<int64_t>("axis_w", 1) != 1) Refuse(op, "axis_w != 1 is not exported");
    const int64_t axis = a.GetSingleArgument<int64_t>("axis", 1);
    std::string x = op.input(0);
    if (axis != 1 || Dims(x).size() != 2) {
      // Gemm takes 2-D A: flatten at the FC's axis (a no-op for 2-D inputs).
      const std::string flat = Fresh(op.output(0) + "_flat");
      onnx::NodeProto* f = Node("Flatten", op, {x}, {flat});
      Int(f, "axis", axis);
      x = flat;
    }
    std::vector<std::string> in{x, op.input(1)};
    if (op.input_size() > 2) in.push_back(op.input(2));
    onnx::NodeProto* n = Node("Gemm", op, in, {op.output(0)});
    Int(n, "transB", t == "FC" ? 1 : 0);
    return;
  }
  if (t == "Relu") { unary("Relu"); return; }
  if (t == "Sigmoid") { unary("Sigmoid"); return; }
  if (t == "Tanh") { unary("Tanh"); return; }
  if (t == "Exp") { unary("Exp"); return; }
  if (t == "Log") { unary("Log"); return; }
  if (t == "Sqrt") { unary("Sqrt"); return; }
  if (t == "Abs") { unary("Abs"); return; }
  if (t == "Reciprocal") { unary("Reciprocal"); return; }
  if (t == "Negative") { unary("Neg"); return; }
  if (t == "Copy" || t == "Alias" || t == "StopGradient" || t == "Dropout") {
    unary("Identity");
    return;
  }
  if (t == "LeakyRelu") {
    Float(unary("LeakyRelu"), "alpha", a.GetSingleArgument<float>("alpha", 0.01f));
    return;
  }
  if (t == "Elu") {
    Float(unary("Elu"), "alpha", a.GetSingleArgument<float>("alpha", 1.f));
    return;
  }
  if (t == "Softmax") {
    // Caffe2's axis (flatten at axis, softmax of each row) is Softmax's before opset 13.
    Int(unary("Softmax"), "axis", a.GetSingleArgument<int64_t>("axis", 1));
    return;
  }
  if (t == "Flatten") {
    Int(unary("Flatten"), "axis", a.GetSingleArgument<int64_t>("axis", 1));
    return;
  }
  if (t == "Transpose") {
    onnx::NodeProto* n = unary("Transpose");
    const std::vector<int64_t> axes = a.GetRepeatedArgument<int64_t>("axes");
    if (!axes.empty()) Ints(n, "perm", axes);
    return;
  }
  if (t == "Reshape") {
    if (op.input_size() > 1) {
      Node("Reshape", op, {op.input(0), op.input(1)}, {op.output(0)});
    } else {
      Node("Reshape", op, {op.input(0), Int64s(a.GetRepeatedArgument<int64_t>("shape"),
                                                 op.output(0) + "_shape")},
           {op.output(0)});
    }
    return;
  }
  if (t == "Scale") {
    const std::string s = Floats({a.GetSingleArgument<float>("scale", 1.f)}, {}, op.output(0) + "_scale");
    Node("Mul", op, {op.input(0), s}, {op.output(0)});
    return;
  }
  if (t == "Add" || t == "Sub" || t == "Mul" || t == "Div") {
    if (a.GetSingleArgument<int64_t>("broadcast", 0) != 0) {
      const int64_t axis = a.GetSingleArgument<int64_t>("axis", -1);
      const std::vector<int64_t> ad = Dims(op.input(0)), bd = Dims(op.input(1));
      const bool trailing = axis == -1 || (!ad.empty() && !bd.empty() &&
                                           axis == static_cast<int64_t>(ad.size() - bd.size()));
      if (!trailing) {
        Refuse(op, "broadcast along a middle axis is not exported (NumPy aligns trailing dims)");
      }
    }
    Node(t, op, {op.input(0), op.input(1)}, {op.output(0)});
    return;
  }
  if (t == "Sum" || t == "Max" || t == "Min") {
    Node(t, op, std::vector<std::string>(op.input().begin(), op.input().end()), {op.output(0)});
    return;
  }
  if (t == "Pow") {
    if (op.input_size() > 1) {
      Node("Pow", op, {op.input(0), op.input(1)}, {op.output(0)});
    } else {
      Node("Pow", op, {op.input(0), Floats({a.GetSingleArgument<float>("exponent", 1.f)}, {},
                                           op.output(0) + "_exponent")},
           {op.output(0)});
    }
    return;
  }
  if (t == "Concat" || t == "DepthConcat") {
    if (a.HasArgument("add_axis") && a.GetSingleArgument<int64_t>("add_axis", 0) != 0) {
      Refuse(op, "add_axis is not exported");
    }
    Int(Node("Concat", op, std::vector<std::string>(op.input().begin(), op.input().end()),
             {op.output(0)}),
        "axis", a.GetSingleArgument<int64_t>("axis", 1));
    return;
  }
  if (t == "Split" || t == "DepthSplit") {
    if (op.input_size() > 1) Refuse(op, "a run-time split input is not exported");
    onnx::NodeProto* n = Node("Split", op, {op.input(0)},
                              std::vector<std::string>(op.output().begin(), op.output().end()));
    Int(n, "axis", a.GetSingleArgument<int64_t>("axis", 1));
    const std::vector<int64_t> split = a.GetRepeatedArgument<int64_t>("split");
    if (!split.empty()) Ints(n, "split", split);
    return;
  }
  if (t == "Clip") {
    onnx::NodeProto* n = Node(
        "Clip", op,
        {op.input(0), Floats({a.GetSingleArgument<float>("min", -std::numeric_limits<float>::infinity())}, {},
                             op.output(0) + "_min"),
         Floats({a.GetSingleArgument<float>("max", std::numeric_limits<float>::infinity())}, {},
                op.output(0) + "_max")},
        {op.output(0)});
    (void)n;
    return;
  }
  if (t == "ReduceMean" || t == "ReduceSum" || t == "ReduceMax" || t == "ReduceMin") {
    onnx::NodeProto* n = unary(t);
    const std::vector<int64_t> axes = a.GetRepeatedArgument<int64_t>("axes");
    if (!axes.empty()) Ints(n, "axes", axes);
    Int(n, "keepdims", a.GetSingleArgument<int64_t>("keepdims", 1));
    return;
  }
  if (t == "LRN") {
    RequireNCHW(op);
    onnx::NodeProto* n = unary("LRN");
    Int(n, "size", a.GetSingleArgument<int64_t>("size", 1));
    Float(n, "alpha", a.GetSingleArgument<float>("alpha", 0.f));
    Float(n, "beta", a.GetSingleArgument<float>("beta", 0.f));
    Float(n, "bias", a.GetSingleArgument<float>("bias", 1.f));
    return;
  }
  if (t == "ResizeNearest" || t == "ResizeBilinear") {
    RequireNCHW(op);
    if (op.input_size() > 1) Refuse(op, "run-time scales are not exported");
    const float h = a.GetSingleArgument<float>("height_scale", 1.f);
    const float w = a.GetSingleArgument<float>("width_scale", 1.f);
    onnx::NodeProto* n =
        Node("Resize", op,
             {op.input(0), Floats({}, {0}, op.output(0) + "_roi"),
              Floats({1.f, 1.f, h, w}, {4}, op.output(0) + "_scales")},
             {op.output(0)});
    if (t == "ResizeNearest") {
      String(n, "mode", "nearest");
      String(n, "coordinate_transformation_mode",
             a.GetSingleArgument<std::string>("coordinate_transformation_mode", "asymmetric"));
      String(n, "nearest_mode", a.GetSingleArgument<std::string>("nearest_mode", "floor"));
    } else {
      String(n, "mode", "linear");
      String(n, "coordinate_transformation_mode",
             a.GetSingleArgument<std::string>("coordinate_transformation_mode", "align_corners"));
    }
    return;
  }
  if (t == "Cast") {
    DataType to = DataType::FLOAT;
    if (a.HasSingleArgumentOfType<std::string>("to")) {
      to = DataTypeFromName(a.GetSingleArgument<std::string>("to", "float"));
    } else {
      to = DataTypeFromInt(a.GetSingleArgument<int64_t>("to", 1));
    }
    Int(unary("Cast"), "to", onnx_import::ToOnnxType(to));
    return;
  }
  Refuse(op, "no ONNX export for this operator type");
}

}  // namespace

std::string ExportOnnx(const NetDef& init, const NetDef& predict, const OnnxExportOptions& o,
                       const Workspace* params) {
  Workspace ws;
  ws.RunNetOnce(init);
  if (params) {
    for (const auto& name : params->Blobs()) {
      const Blob* b = params->GetBlob(name);
      if (b && b->IsTensor()) ws.CreateTensor(name)->CopyFrom(b->GetTensor());
    }
  }
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
        if (!last || ws.HasBlob(original)) {
          out = original + "__v" + std::to_string(seen[original]);
          if (last && !ws.HasBlob(original)) out = original;
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
      if (produced.count(in) || ws.HasBlob(in) || labels.count(in) || inputs.count(in)) continue;
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
  Exporter ex(o, ws, g);
  ex.SetInputs(inputs);
  for (const auto& op : ops) ex.Convert(op);
  std::vector<std::string> outputs = o.outputs;
  if (outputs.empty()) {
    for (const auto& name : predict.external_output()) {
      if (produced.count(name)) outputs.push_back(name);
    }
  }
  if (outputs.empty()) outputs.push_back(ops.back().output(0));
  // The outputs' types and shapes: the ops run once on zeros of the input shapes.
  // (After Convert took the parameters; SpatialBN and Dropout run in test mode.)
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
