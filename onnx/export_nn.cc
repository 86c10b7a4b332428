// ONNX export of the network layers: Conv / ConvTranspose, pools, SpatialBN (inference), FC,
// LRN, ResizeNearest / ResizeBilinear and PadImage.
#include <algorithm>

#include "onnx/export_graph.h"
#include "operators/nn/conv_pool_op_base.h"
#include "operators/tensor/pad_op.h"

namespace halfcaf {
namespace onnx_export {

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

bool Exporter::ConvertNn(const OperatorDef& op) {
  const ArgumentHelper a(op);
  const std::string& t = op.type();
  auto unary = [&](const std::string& onnx_type) {
    return Node(onnx_type, op, {op.input(0)}, {op.output(0)});
  };
  if (t == "Conv" || t == "Conv1D" || t == "Conv2D" || t == "Conv3D") {
    ConvLike(op, false);
    return true;
  }
  if (t == "ConvTranspose") {
    ConvLike(op, true);
    return true;
  }
  if (t == "MaxPool" || t == "MaxPool1D" || t == "MaxPool2D" || t == "MaxPool3D") {
    Pool(op, "MaxPool");
    return true;
  }
  if (t == "AveragePool" || t == "AveragePool1D" || t == "AveragePool2D" ||
      t == "AveragePool3D") {
    Pool(op, "AveragePool");
    return true;
  }
  if (t == "SpatialBN") {
    RequireNCHW(op);
    // Inference: the running statistics (a training-mode op exports its test-mode form). With
    // fuse_relu (halfcaf's BN + ReLU as one op), a Relu after it.
    const bool relu = a.GetSingleArgument<int>("fuse_relu", 0) != 0;
    const std::string y = relu ? Fresh(op.output(0) + "_bn") : op.output(0);
    onnx::NodeProto* n =
        Node("BatchNormalization", op,
             {op.input(0), op.input(1), op.input(2), op.input(3), op.input(4)}, {y});
    Float(n, "epsilon", a.GetSingleArgument<float>("epsilon", 1e-5f));
    if (relu) Node("Relu", op, {y}, {op.output(0)});
    return true;
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
    return true;
  }
  if (t == "LRN") {
    RequireNCHW(op);
    onnx::NodeProto* n = unary("LRN");
    Int(n, "size", a.GetSingleArgument<int64_t>("size", 1));
    Float(n, "alpha", a.GetSingleArgument<float>("alpha", 0.f));
    Float(n, "beta", a.GetSingleArgument<float>("beta", 0.f));
    Float(n, "bias", a.GetSingleArgument<float>("bias", 1.f));
    return true;
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
    return true;
  }
  if (t == "PadImage") {
    const PadImageArgs p = ParsePadImageArgs(op);
    std::vector<int64_t> pads;  // ONNX: every dim's begin, then every dim's end
    if (p.order == StorageOrder::NCHW) {
      pads = {0, 0, p.pad_t, p.pad_l, 0, 0, p.pad_b, p.pad_r};
    } else {
      pads = {0, p.pad_t, p.pad_l, 0, 0, p.pad_b, p.pad_r, 0};
    }
    onnx::NodeProto* n =
        Node("Pad", op,
             {op.input(0), Int64s(pads, op.output(0) + "_pads"),
              Floats({p.value}, {}, op.output(0) + "_value")},
             {op.output(0)});
    String(n, "mode", p.mode == PadMode::kConstant ? "constant"
                      : p.mode == PadMode::kReflect ? "reflect" : "edge");
    return true;
  }
  return false;
}

}  // namespace onnx_export
}  // namespace halfcaf
