// One-operator nets for the ONNX export tests: each operator the exporter knows beyond the zoo
// nets' (pads, PRelu, HardSigmoid, Floor / Ceil, ArgMax / ArgMin, BatchMatMul, Slice, Gather,
// Squeeze / ExpandDims, legacy broadcast at a middle axis, SpatialBN with fuse_relu), with the
// arguments that change how it maps. Shared by the round-trip test (tests/onnx) and the ONNX
// Runtime test (tests/tools).
#pragma once

#include <random>
#include <string>
#include <vector>

#include "core/argument.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {
namespace testing {

struct ExportCase {
  std::string name;
  NetDef init;     // the parameters (GivenTensorFill)
  NetDef predict;  // reads "x", writes "y"
  std::vector<int64_t> x_dims;
};

inline OperatorDef RandomFill(const std::string& blob, const std::vector<int64_t>& dims,
                              uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> values(n);
  for (auto& v : values) v = u(rng);
  return MakeOperatorDef("GivenTensorFill", "", {}, {blob},
                         {MakeArgument("shape", dims), MakeArgument("values", values)});
}

inline std::vector<ExportCase> ExportCases() {
  std::vector<ExportCase> cases;
  auto add = [&](const std::string& name, std::vector<int64_t> x_dims,
                 std::vector<OperatorDef> init, std::vector<OperatorDef> ops) {
    ExportCase c;
    c.name = name;
    c.x_dims = std::move(x_dims);
    for (auto& op : init) *c.init.add_op() = op;
    for (auto& op : ops) *c.predict.add_op() = op;
    c.predict.add_external_output("y");
    cases.push_back(c);
  };
  const std::vector<int64_t> image{2, 3, 6, 5};
  add("pad_reflect", image, {},
      {MakeOperatorDef("PadImage", "", {"x"}, {"y"},
                       {MakeArgument("pad", 2), MakeArgument("mode", "reflect")})});
  add("pad_constant_asymmetric", image, {},
      {MakeOperatorDef("PadImage", "", {"x"}, {"y"},
                       {MakeArgument("pad_t", 1), MakeArgument("pad_l", 2), MakeArgument("pad_b", 0),
                        MakeArgument("pad_r", 1), MakeArgument("value", 0.5f)})});
  add("pad_edge_nhwc", {2, 6, 5, 3}, {},
      {MakeOperatorDef("PadImage", "", {"x"}, {"y"},
                       {MakeArgument("pad", 1), MakeArgument("mode", "edge"),
                        MakeArgument("order", "NHWC")})});
  add("prelu_per_channel", image, {RandomFill("slope", {3}, 1)},
      {MakeOperatorDef("PRelu", "", {"x", "slope"}, {"y"})});
  add("prelu_shared", image, {RandomFill("slope", {1}, 2)},
      {MakeOperatorDef("PRelu", "", {"x", "slope"}, {"y"})});
  add("prelu_nhwc", {2, 6, 5, 3}, {RandomFill("slope", {3}, 3)},
      {MakeOperatorDef("PRelu", "", {"x", "slope"}, {"y"}, {MakeArgument("order", "NHWC")})});
  add("hard_sigmoid", image, {},
      {MakeOperatorDef("HardSigmoid", "", {"x"}, {"y"},
                       {MakeArgument("alpha", 0.7f), MakeArgument("beta", 0.4f)})});
  add("floor_ceil", image, {},
      {MakeOperatorDef("Scale", "", {"x"}, {"x3"}, {MakeArgument("scale", 3.f)}),
       MakeOperatorDef("Floor", "", {"x3"}, {"f"}), MakeOperatorDef("Ceil", "", {"x3"}, {"c"}),
       MakeOperatorDef("Add", "", {"f", "c"}, {"y"})});
  add("argmax", image, {},
      {MakeOperatorDef("ArgMax", "", {"x"}, {"y"},
                       {MakeArgument("axis", 1), MakeArgument("keepdims", 0)})});
  add("argmin", image, {}, {MakeOperatorDef("ArgMin", "", {"x"}, {"y"})});
  // halfcaf's batch normalization with its ReLU fused in: BatchNormalization, then Relu.
  add("spatial_bn_fused_relu", image,
      {RandomFill("s", {3}, 6), RandomFill("b", {3}, 7), RandomFill("m", {3}, 8),
       MakeOperatorDef("GivenTensorFill", "", {}, {"v"},
                       {MakeArgument("shape", std::vector<int64_t>{3}),
                        MakeArgument("values", std::vector<float>{0.7f, 1.3f, 0.4f})})},
      {MakeOperatorDef("SpatialBN", "", {"x", "s", "b", "m", "v"}, {"y"},
                       {MakeArgument("is_test", 1), MakeArgument("fuse_relu", 1)})});
  add("batch_matmul_trans", {2, 3, 4}, {RandomFill("w", {2, 5, 4}, 4)},
      {MakeOperatorDef("BatchMatMul", "", {"x", "w"}, {"y"}, {MakeArgument("trans_b", 1)})});
  add("batch_matmul_trans_a", {2, 4, 3}, {RandomFill("w", {2, 4, 5}, 5)},
      {MakeOperatorDef("BatchMatMul", "", {"x", "w"}, {"y"}, {MakeArgument("trans_a", 1)})});
  add("batch_matmul_broadcast", {2, 3, 4}, {RandomFill("w", {4, 5}, 6)},
      {MakeOperatorDef("BatchMatMul", "", {"x", "w"}, {"y"}, {MakeArgument("broadcast", 1)})});
  add("slice", image, {},
      {MakeOperatorDef("Slice", "", {"x"}, {"y"},
                       {MakeArgument("starts", std::vector<int64_t>{0, 1, 0}),
                        MakeArgument("ends", std::vector<int64_t>{-1, -2, -1})})});
  add("slice_clamped", image, {},
      {MakeOperatorDef("Slice", "", {"x"}, {"y"},
                       {MakeArgument("starts", std::vector<int64_t>{0, 0, 2}),
                        MakeArgument("ends", std::vector<int64_t>{-1, -1, 100})})});
  add("gather_rows", {5, 4},
      {MakeOperatorDef("GivenTensorInt64Fill", "", {}, {"idx"},
                       {MakeArgument("shape", std::vector<int64_t>{3}),
                        MakeArgument("values", std::vector<int64_t>{4, 0, 2})})},
      {MakeOperatorDef("Gather", "", {"x", "idx"}, {"y"})});
  add("gather_axis1", {5, 4},
      {MakeOperatorDef("GivenTensorInt64Fill", "", {}, {"idx"},
                       {MakeArgument("shape", std::vector<int64_t>{2, 2}),
                        MakeArgument("values", std::vector<int64_t>{3, 1, 1, 0})})},
      {MakeOperatorDef("Gather", "", {"x", "idx"}, {"y"}, {MakeArgument("axis", 1)})});
  add("squeeze_expand", {2, 1, 4}, {},
      {MakeOperatorDef("Squeeze", "", {"x"}, {"s"}, {MakeArgument("dims", std::vector<int>{1})}),
       MakeOperatorDef("ExpandDims", "", {"s"}, {"y"},
                       {MakeArgument("dims", std::vector<int>{0, 3})})});
  // halfcaf's Add with its ReLU fused in (a residual merge): Add, then Relu.
  add("add_fused_relu", image, {RandomFill("r", {2, 3, 6, 5}, 9)},
      {MakeOperatorDef("Add", "", {"x", "r"}, {"y"}, {MakeArgument("fuse_relu", 1)})});
  add("add_channel_broadcast", image, {RandomFill("b", {3}, 7)},
      {MakeOperatorDef("Add", "", {"x", "b"}, {"y"},
                       {MakeArgument("broadcast", 1), MakeArgument("axis", 1)})});
  add("mul_axis_str", image, {RandomFill("b", {3, 6}, 8)},
      {MakeOperatorDef("Mul", "", {"x", "b"}, {"y"},
                       {MakeArgument("broadcast", 1), MakeArgument("axis_str", "C")})});
  return cases;
}

}  // namespace testing
}  // namespace halfcaf
