// ONNX export of the arithmetic: unary math and activations, element-wise binary ops, Sum / Max /
// Min, Pow, Clip, Softmax, Scale, reductions, ArgMax / ArgMin, PRelu, HardSigmoid, BatchMatMul.
#include <limits>

#include "core/enforce.h"
#include "onnx/export_graph.h"
#include "operators/math/elementwise_broadcast.h"

namespace halfcaf {
namespace onnx_export {

bool Exporter::ConvertMath(const OperatorDef& op) {
  const ArgumentHelper a(op);
  const std::string& t = op.type();
  auto unary = [&](const std::string& onnx_type) {
    return Node(onnx_type, op, {op.input(0)}, {op.output(0)});
  };
  if (t == "Relu") { unary("Relu"); return true; }
  if (t == "Sigmoid") { unary("Sigmoid"); return true; }
  if (t == "Tanh") { unary("Tanh"); return true; }
  if (t == "Exp") { unary("Exp"); return true; }
  if (t == "Log") { unary("Log"); return true; }
  if (t == "Sqrt") { unary("Sqrt"); return true; }
  if (t == "Abs") { unary("Abs"); return true; }
  if (t == "Reciprocal") { unary("Reciprocal"); return true; }
  if (t == "Negative") { unary("Neg"); return true; }
  if (t == "Floor") { unary("Floor"); return true; }
  if (t == "Ceil") { unary("Ceil"); return true; }
  if (t == "LeakyRelu") {
    Float(unary("LeakyRelu"), "alpha", a.GetSingleArgument<float>("alpha", 0.01f));
    return true;
  }
  if (t == "Elu") {
    Float(unary("Elu"), "alpha", a.GetSingleArgument<float>("alpha", 1.f));
    return true;
  }
  if (t == "Softmax") {
    // Caffe2's axis (flatten at axis, softmax of each row) is Softmax's before opset 13.
    Int(unary("Softmax"), "axis", a.GetSingleArgument<int64_t>("axis", 1));
    return true;
  }
  if (t == "Scale") {
    const std::string s = Floats({a.GetSingleArgument<float>("scale", 1.f)}, {}, op.output(0) + "_scale");
    Node("Mul", op, {op.input(0), s}, {op.output(0)});
    return true;
  }
  if (t == "Add" || t == "Sub" || t == "Mul" || t == "Div") {
    std::string b = op.input(1);
    if (a.GetSingleArgument<int64_t>("broadcast", 0) != 0) {
      // Caffe2's legacy broadcast lines B up with A at `axis`; NumPy lines up the trailing dims,
      // so B gains as many trailing 1s as A has dims after B's.
      const int axis = ParseBroadcastAxis(a);
      const std::vector<int64_t> ad = Dims(op.input(0)), bd = Dims(b);
      int64_t numel = 1;
      for (int64_t d : bd) numel *= d;
      const int64_t after = static_cast<int64_t>(ad.size()) - axis - static_cast<int64_t>(bd.size());
      if (axis != -1 && numel != 1 && after != 0) {
        if (after < 0) {
          Refuse(op, "B " + DimsString(bd) + " at axis " + std::to_string(axis) + " of A " +
                         DimsString(ad) + " reaches past A's last dim");
        }
        std::vector<int64_t> dims = bd;
        dims.insert(dims.end(), after, 1);
        b = Reshaped(op, b, dims);
      }
    }
    // fuse_relu (halfcaf's Add + Relu as one op): a Relu after it.
    if (t == "Add" && a.GetSingleArgument<int>("fuse_relu", 0) != 0) {
      const std::string sum = Fresh(op.output(0) + "_add");
      Node(t, op, {op.input(0), b}, {sum});
      Node("Relu", op, {sum}, {op.output(0)});
      return true;
    }
    Node(t, op, {op.input(0), b}, {op.output(0)});
    return true;
  }
  if (t == "Sum" || t == "Max" || t == "Min") {
    Node(t, op, std::vector<std::string>(op.input().begin(), op.input().end()), {op.output(0)});
    return true;
  }
  if (t == "Pow") {
    if (op.input_size() > 1) {
      Node("Pow", op, {op.input(0), op.input(1)}, {op.output(0)});
    } else {
      Node("Pow", op, {op.input(0), Floats({a.GetSingleArgument<float>("exponent", 1.f)}, {},
                                           op.output(0) + "_exponent")},
           {op.output(0)});
    }
    return true;
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
    return true;
  }
  if (t == "ReduceMean" || t == "ReduceSum" || t == "ReduceMax" || t == "ReduceMin") {
    onnx::NodeProto* n = unary(t);
    const std::vector<int64_t> axes = a.GetRepeatedArgument<int64_t>("axes");
    if (!axes.empty()) Ints(n, "axes", axes);
    Int(n, "keepdims", a.GetSingleArgument<int64_t>("keepdims", 1));
    return true;
  }
  if (t == "HardSigmoid") {
    onnx::NodeProto* n = unary("HardSigmoid");
    Float(n, "alpha", a.GetSingleArgument<float>("alpha", 0.2f));
    Float(n, "beta", a.GetSingleArgument<float>("beta", 0.5f));
    return true;
  }
  if (t == "PRelu") {
    // ONNX broadcasts the slope NumPy-style (trailing dims): NCHW's per-channel slope [C] becomes
    // [C, 1, ..., 1]. NHWC's per-channel slope and a shared slope broadcast as they are.
    std::string slope = op.input(1);
    const std::vector<int64_t> x = Dims(op.input(0)), s = Dims(slope);
    const bool nchw = a.GetSingleArgument<std::string>("order", "NCHW") == "NCHW";
    if (nchw && x.size() > 2 && s.size() == 1 && s[0] > 1) {
      std::vector<int64_t> dims(x.size() - 1, 1);
      dims[0] = s[0];
      slope = Reshaped(op, slope, dims);
    }
    Node("PRelu", op, {op.input(0), slope}, {op.output(0)});
    return true;
  }
  if (t == "ArgMax" || t == "ArgMin") {
    if (a.GetSingleArgument<int64_t>("select_last_index", 0) != 0) {
      Refuse(op, "select_last_index needs opset 12; the export writes opset 11");
    }
    onnx::NodeProto* n = unary(t);
    Int(n, "axis", a.GetSingleArgument<int64_t>("axis", -1));
    Int(n, "keepdims", a.GetSingleArgument<int64_t>("keepdims", 1));
    return true;
  }
  if (t == "BatchMatMul") {
    // ONNX MatMul is numpy.matmul: broadcast=1 as it is; without broadcast the batch dims are
    // equal, a case of it. The trans flags become Transposes of the last two dims.
    std::string in[2] = {op.input(0), op.input(1)};
    const char* flags[2] = {"trans_a", "trans_b"};
    for (int k = 0; k < 2; ++k) {
      const size_t rank = Dims(in[k]).size();
      if (a.GetSingleArgument<int64_t>(flags[k], 0) == 0 || rank < 2) continue;
      std::vector<int64_t> perm(rank);
      for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
      std::swap(perm[rank - 2], perm[rank - 1]);
      const std::string tr = Fresh(in[k] + "_t");
      Ints(Node("Transpose", op, {in[k]}, {tr}), "perm", perm);
      in[k] = tr;
    }
    Node("MatMul", op, {in[0], in[1]}, {op.output(0)});
    return true;
  }
  return false;
}

std::string Exporter::Reshaped(const OperatorDef& op, const std::string& x,
                               const std::vector<int64_t>& dims) {
  const std::string out = Fresh(x + "_reshaped");
  Node("Reshape", op, {x, Int64s(dims, x + "_shape")}, {out});
  return out;
}

}  // namespace onnx_export
}  // namespace halfcaf
