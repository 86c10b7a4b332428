// ONNX export of the data movement: copies (Identity), Flatten, Transpose, Reshape, Concat,
// Split, Slice, Gather, Squeeze / ExpandDims and Cast.
#include <algorithm>

#include "core/enforce.h"
#include "onnx/converter.h"
#include "onnx/export_graph.h"

namespace halfcaf {
namespace onnx_export {

bool Exporter::ConvertShape(const OperatorDef& op) {
  const ArgumentHelper a(op);
  const std::string& t = op.type();
  auto unary = [&](const std::string& onnx_type) {
    return Node(onnx_type, op, {op.input(0)}, {op.output(0)});
  };
  if (t == "Copy" || t == "Alias" || t == "StopGradient" || t == "Dropout") {
    unary("Identity");
    return true;
  }
  if (t == "Flatten") {
    Int(unary("Flatten"), "axis", a.GetSingleArgument<int64_t>("axis", 1));
    return true;
  }
  if (t == "Transpose") {
    onnx::NodeProto* n = unary("Transpose");
    const std::vector<int64_t> axes = a.GetRepeatedArgument<int64_t>("axes");
    if (!axes.empty()) Ints(n, "perm", axes);
    return true;
  }
  if (t == "Reshape") {
    if (op.input_size() > 1) {
      Node("Reshape", op, {op.input(0), op.input(1)}, {op.output(0)});
    } else {
      Node("Reshape", op, {op.input(0), Int64s(a.GetRepeatedArgument<int64_t>("shape"),
                                                 op.output(0) + "_shape")},
           {op.output(0)});
    }
    return true;
  }
  if (t == "Concat" || t == "DepthConcat") {
    if (a.HasArgument("add_axis") && a.GetSingleArgument<int64_t>("add_axis", 0) != 0) {
      Refuse(op, "add_axis is not exported");
    }
    Int(Node("Concat", op, std::vector<std::string>(op.input().begin(), op.input().end()),
             {op.output(0)}),
        "axis", a.GetSingleArgument<int64_t>("axis", 1));
    return true;
  }
  if (t == "Split" || t == "DepthSplit") {
    if (op.input_size() > 1) Refuse(op, "a run-time split input is not exported");
    onnx::NodeProto* n = Node("Split", op, {op.input(0)},
                              std::vector<std::string>(op.output().begin(), op.output().end()));
    Int(n, "axis", a.GetSingleArgument<int64_t>("axis", 1));
    const std::vector<int64_t> split = a.GetRepeatedArgument<int64_t>("split");
    if (!split.empty()) Ints(n, "split", split);
    return true;
  }
  if (t == "Cast") {
    DataType to = DataType::FLOAT;
    if (a.HasSingleArgumentOfType<std::string>("to")) {
      to = DataTypeFromName(a.GetSingleArgument<std::string>("to", "float"));
    } else {
      to = DataTypeFromInt(a.GetSingleArgument<int64_t>("to", 1));
    }
    Int(unary("Cast"), "to", onnx_import::ToOnnxType(to));
    return true;
  }
  if (t == "Slice") {
    if (op.input_size() > 1) Refuse(op, "run-time starts / ends are not exported");
    // Caffe2's indices, resolved against the data's dims: negative v is dim + 1 + v, values past
    // the dim are clamped; ONNX then gets plain [start, end) per leading dim.
    const std::vector<int64_t> dims = Dims(op.input(0));
    const std::vector<int64_t> starts = a.GetRepeatedArgument<int64_t>("starts");
    const std::vector<int64_t> ends = a.GetRepeatedArgument<int64_t>("ends");
    if (starts.size() != ends.size() || starts.size() > dims.size()) {
      Refuse(op, "starts and ends must have one entry per leading dim of " + DimsString(dims));
    }
    auto resolve = [](int64_t v, int64_t dim) { return std::min(v < 0 ? dim + 1 + v : v, dim); };
    std::vector<int64_t> s(starts.size()), e(ends.size()), axes(starts.size());
    for (size_t i = 0; i < starts.size(); ++i) {
      s[i] = resolve(starts[i], dims[i]);
      e[i] = resolve(ends[i], dims[i]);
      axes[i] = static_cast<int64_t>(i);
    }
    Node("Slice", op,
         {op.input(0), Int64s(s, op.output(0) + "_starts"), Int64s(e, op.output(0) + "_ends"),
          Int64s(axes, op.output(0) + "_axes")},
         {op.output(0)});
    return true;
  }
  if (t == "Gather") {
    Int(Node("Gather", op, {op.input(0), op.input(1)}, {op.output(0)}), "axis",
        a.GetSingleArgument<int64_t>("axis", 0));
    return true;
  }
  if (t == "Squeeze" || t == "ExpandDims") {
    // Caffe2's dims are ONNX's axes (positions in the input for Squeeze, in the output for
    // ExpandDims / Unsqueeze); opset 11 takes them as an attribute.
    Ints(unary(t == "Squeeze" ? "Squeeze" : "Unsqueeze"), "axes",
         a.GetRepeatedArgument<int64_t>("dims"));
    return true;
  }
  return false;
}

}  // namespace onnx_export
}  // namespace halfcaf
