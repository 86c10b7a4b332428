// Acceptance test: the operator registry holds every operator halfcaf ships on CPU, each with a
// schema and user documentation, and every forward operator says how it is differentiated.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/gradient.h"
#include "core/operator.h"

namespace halfcaf {
namespace {

// Forward operators. Names follow Caffe2 (CAFFE2_OPS.md), including the 1D/2D/3D pooling / conv
// aliases, Load/Save and the typed GivenTensor*Fill variants; CheckFinite, UpdateLossScale,
// MixedPrecisionMomentumSGDUpdate, DataInput, FloatToBFloat16 and BFloat16ToFloat are halfcaf's
// own (mixed precision, data input, bfloat16).
const std::vector<std::string> kForwardOps = {
    "Abs", "Accuracy", "Add", "Alias", "AtomicIter", "AveragePool", "AveragePool1D",
    "AveragePool2D", "AveragePool3D", "AveragedLoss", "Cast", "CheckFinite", "Clip", "Concat",
    "ConstantFill", "Conv", "Conv1D", "Conv2D", "Conv3D", "ConvTranspose", "Copy",
    "CopyFromCPUInput", "CreateDB", "CreateMutex", "DataInput", "DepthConcat", "DepthSplit", "Div",
    "Dropout", "Elu", "EnsureCPUOutput", "Exp", "FC", "FCTransposed", "FP16MomentumSGDUpdate",
    "FP32MomentumSGDUpdate", "Flatten", "FloatToHalf", "Free", "GaussianFill",
    "GivenTensorBoolFill", "GivenTensorDoubleFill", "GivenTensorFill", "GivenTensorInt64Fill",
    "GivenTensorIntFill", "HalfToFloat", "ImageInput", "Iter", "LRN", "LabelCrossEntropy",
    "LeakyRelu", "LearningRate", "Load", "Log", "MSRAFill", "Max", "MaxPool", "MaxPool1D",
    "MaxPool2D", "MaxPool3D", "Min", "MixedPrecisionMomentumSGDUpdate", "MomentumSGD",
    "MomentumSGDUpdate", "Mul", "NCHW2NHWC", "NHWC2NCHW", "Negative", "Pow", "Print", "Reciprocal",
    "ReduceMean", "ReduceSum", "Relu", "Reshape", "ResizeBilinear", "ResizeNearest", "Save",
    "Scale", "Sigmoid", "Slice", "Softmax", "SoftmaxWithLoss", "SpatialBN", "Split", "Sqr", "Sqrt",
    "SquaredL2Distance", "StopGradient", "Sub", "Sum", "Summarize", "Tanh", "TensorProtosDBInput",
    "Transpose", "UniformFill", "UniformIntFill", "UpdateLossScale", "WeightedSum", "XavierFill",
    "ZeroGradient", "FloatToBFloat16", "BFloat16ToFloat",
    // Reductions, indexing and shape ops (SparseToDense is also Gather's dense gradient).
    "ArgMax", "ArgMin", "BatchMatMul", "ExpandDims", "Gather", "MatMul", "PadImage",
    "ReduceMax", "ReduceMin", "SparseToDense", "Squeeze",
    // More activations and rounding (Floor / Ceil have no gradient, as in Caffe2).
    "Ceil", "Floor", "HardSigmoid", "PRelu",
};

// Gradient operators (Caffe2 names; note DropoutGrad, not DropoutGradient).
const std::vector<std::string> kGradientOps = {
    "AbsGradient", "AddGradient", "MulGradient", "SubGradient", "AveragePool1DGradient",
    "AveragePool2DGradient", "AveragePool3DGradient",
    "AveragePoolGradient", "AveragedLossGradient", "ClipGradient", "Conv1DGradient",
    "BatchGatherGradient", "Conv2DGradient", "Conv3DGradient", "ConvGradient",
    "ConvTransposeGradient", "DivGradient", "DropoutGrad", "EluGradient", "FCGradient",
    "FCTransposedGradient", "LRNGradient", "LabelCrossEntropyGradient", "LeakyReluGradient",
    "MaxGradient", "MaxPool1DGradient", "MaxPool2DGradient", "MaxPool3DGradient",
    "MaxPoolGradient", "MinGradient", "PadImageGradient", "ReciprocalGradient",
    "ReduceMaxGradient", "ReduceMeanGradient", "ReduceMinGradient", "ReduceSumGradient",
    "ReluGradient", "ResizeBilinearGradient", "ResizeNearestGradient", "SigmoidGradient",
    "SliceGradient", "SoftmaxGradient", "SoftmaxWithLossGradient", "SpatialBNGradient",
    "SquaredL2DistanceGradient", "TanhGradient", "WeightedSumGradient", "HardSigmoidGradient",
    "PReluGradient",
};

// Operators that only gradient makers emit (Flatten -> ResizeLike, Copy -> CopyOnDeviceLike,
// broadcast Add/Sub/Mul -> SumReduceLike). Like Caffe2, they have no gradient maker themselves.
const std::vector<std::string> kGradientHelperOps = {"CopyOnDeviceLike", "ResizeLike",
                                                     "SumReduceLike"};

// A forward op def and the gradient op types its maker must emit (CAFFE2_OPS.md §4).
struct GradientCase {
  std::string type;
  int inputs, outputs;
  std::vector<Argument> args;
  std::vector<std::string> want;
  std::vector<int> no_grad_outputs = {};  // outputs without a gradient (masks, probabilities)
};

std::vector<GradientCase> GradientCases() {
  Argument bcast = MakeArgument("broadcast", 1);
  return {
      {"Conv", 3, 1, {MakeArgument("kernel", 3)}, {"ConvGradient"}},
      {"Conv1D", 3, 1, {MakeArgument("kernels", std::vector<int64_t>{3})}, {"Conv1DGradient"}},
      {"Conv2D", 3, 1, {MakeArgument("kernel", 3)}, {"Conv2DGradient"}},
      {"Conv3D", 3, 1, {MakeArgument("kernels", std::vector<int64_t>{3, 3, 3})}, {"Conv3DGradient"}},
      {"ConvTranspose", 3, 1, {MakeArgument("kernel", 3)}, {"ConvTransposeGradient"}},
      {"ConvTranspose", 2, 1, {MakeArgument("kernel", 3)}, {"ConvTransposeGradient"}},
      {"LRN", 1, 2, {MakeArgument("size", 3)}, {"LRNGradient"}, {1}},
      {"ResizeNearest", 1, 1, {}, {"ResizeNearestGradient"}},
      {"ResizeNearest", 2, 1, {}, {"ResizeNearestGradient"}},
      {"ResizeBilinear", 1, 1, {}, {"ResizeBilinearGradient"}},
      {"ResizeBilinear", 2, 1, {}, {"ResizeBilinearGradient"}},
      {"FC", 3, 1, {}, {"FCGradient"}},
      {"FCTransposed", 3, 1, {}, {"FCTransposedGradient"}},
      {"MaxPool", 1, 1, {MakeArgument("kernel", 2)}, {"MaxPoolGradient"}},
      {"MaxPool2D", 1, 1, {MakeArgument("kernel", 2)}, {"MaxPool2DGradient"}},
      {"AveragePool", 1, 1, {MakeArgument("kernel", 2)}, {"AveragePoolGradient"}},
      {"AveragePool2D", 1, 1, {MakeArgument("kernel", 2)}, {"AveragePool2DGradient"}},
      {"MaxPool1D", 1, 1, {MakeArgument("kernels", std::vector<int64_t>{2})}, {"MaxPool1DGradient"}},
      {"MaxPool3D", 1, 1, {MakeArgument("kernels", std::vector<int64_t>{2, 2, 2})},
       {"MaxPool3DGradient"}},
      {"AveragePool1D", 1, 1, {MakeArgument("kernels", std::vector<int64_t>{2})},
       {"AveragePool1DGradient"}},
      {"AveragePool3D", 1, 1, {MakeArgument("kernels", std::vector<int64_t>{2, 2, 2})},
       {"AveragePool3DGradient"}},
      {"SpatialBN", 5, 5, {}, {"SpatialBNGradient"}, {1, 2, 3, 4}},
      {"SpatialBN", 5, 1, {MakeArgument("is_test", 1)}, {"SpatialBNGradient"}},
      {"Relu", 1, 1, {}, {"ReluGradient"}},
      {"Sigmoid", 1, 1, {}, {"SigmoidGradient"}},
      {"Tanh", 1, 1, {}, {"TanhGradient"}},
      {"Softmax", 1, 1, {}, {"SoftmaxGradient"}},
      {"SoftmaxWithLoss", 2, 2, {}, {"SoftmaxWithLossGradient"}, {0}},
      {"LabelCrossEntropy", 2, 1, {}, {"LabelCrossEntropyGradient"}},
      {"AveragedLoss", 1, 1, {}, {"AveragedLossGradient"}},
      {"SquaredL2Distance", 2, 1, {}, {"SquaredL2DistanceGradient"}},
      {"WeightedSum", 4, 1, {}, {"WeightedSumGradient"}},
      {"Div", 2, 1, {}, {"DivGradient"}},
      {"Dropout", 1, 2, {}, {"DropoutGrad"}, {1}},
      {"Clip", 1, 1, {MakeArgument("min", 0.f)}, {"ClipGradient"}},
      {"Flatten", 1, 1, {}, {"ResizeLike"}},
      {"Copy", 1, 1, {}, {"CopyOnDeviceLike"}},
      {"Add", 2, 1, {}, {}},
      {"Add", 2, 1, {bcast}, {"SumReduceLike"}},
      {"Sub", 2, 1, {}, {"Negative"}},
      {"Sub", 2, 1, {bcast}, {"Negative", "SumReduceLike"}},
      {"Mul", 2, 1, {}, {"Mul", "Mul"}},
      {"Mul", 2, 1, {bcast}, {"Mul", "Mul", "SumReduceLike"}},
      {"Concat", 2, 2, {}, {"Split"}, {1}},
      {"Split", 1, 2, {}, {"Concat"}},
      {"Reshape", 1, 2, {MakeArgument("shape", std::vector<int64_t>{-1})}, {"Reshape"}, {1}},
      {"Transpose", 1, 1, {}, {"Transpose"}},
      {"NCHW2NHWC", 1, 1, {}, {"NHWC2NCHW"}},
      {"NHWC2NCHW", 1, 1, {}, {"NCHW2NHWC"}},
      {"Cast", 1, 1, {MakeArgument("to", 10), MakeArgument("from_type", 1)}, {"Cast"}},
      {"FloatToHalf", 1, 1, {}, {"HalfToFloat"}},
      {"HalfToFloat", 1, 1, {}, {"FloatToHalf"}},
      {"FloatToBFloat16", 1, 1, {}, {"BFloat16ToFloat"}},
      {"BFloat16ToFloat", 1, 1, {}, {"FloatToBFloat16"}},
      {"Cast", 1, 1, {MakeArgument("to", 16), MakeArgument("from_type", 1)}, {"Cast"}},
      {"Scale", 1, 1, {MakeArgument("scale", 2.f)}, {"Scale"}},
      {"Sqr", 1, 1, {}, {"Scale", "Mul"}},
      {"ReduceSum", 1, 1, {}, {"ReduceSumGradient"}},
      {"ReduceMean", 1, 1, {}, {"ReduceMeanGradient"}},
      {"Sum", 2, 1, {}, {}},
      {"Alias", 1, 1, {}, {}},
      {"StopGradient", 1, 1, {}, {}},
      {"Slice", 1, 1, {MakeArgument("starts", std::vector<int64_t>{1})}, {"SliceGradient"}},
      {"Slice", 3, 1, {}, {"SliceGradient"}},
      {"ZeroGradient", 1, 0, {}, {"ConstantFill"}},
      {"Exp", 1, 1, {}, {"Mul"}},
      {"Log", 1, 1, {}, {"Div"}},
      {"Sqrt", 1, 1, {}, {"Scale", "Div"}},
      {"Abs", 1, 1, {}, {"AbsGradient"}},
      {"Reciprocal", 1, 1, {}, {"ReciprocalGradient"}},
      {"Pow", 1, 1, {MakeArgument("exponent", 3.f)}, {"Pow", "Mul", "Scale"}},
      {"Pow", 2, 1, {}, {"ConstantFill", "Sub", "Pow", "Mul", "Mul", "Log", "Mul", "Mul"}},
      {"LeakyRelu", 1, 1, {MakeArgument("alpha", 0.2f)}, {"LeakyReluGradient"}},
      {"Elu", 1, 1, {}, {"EluGradient"}},
      {"PRelu", 2, 1, {}, {"PReluGradient"}},
      {"PRelu", 2, 1, {MakeArgument("order", std::string("NHWC"))}, {"PReluGradient"}},
      {"HardSigmoid", 1, 1, {MakeArgument("alpha", 0.3f)}, {"HardSigmoidGradient"}},
      {"Max", 3, 1, {}, {"MaxGradient"}},
      {"Min", 2, 1, {}, {"MinGradient"}},
      {"ReduceMax", 1, 1, {}, {"ReduceMaxGradient"}},
      {"ReduceMin", 1, 1, {}, {"ReduceMinGradient"}},
      {"ExpandDims", 1, 1, {MakeArgument("dims", std::vector<int>{0})}, {"Squeeze"}},
      {"Squeeze", 1, 1, {MakeArgument("dims", std::vector<int>{0})}, {"ExpandDims"}},
      {"BatchMatMul", 2, 1, {}, {"BatchMatMul", "BatchMatMul"}},
      {"BatchMatMul", 2, 1, {MakeArgument("trans_a", 1), MakeArgument("trans_b", 1)},
       {"BatchMatMul", "BatchMatMul"}},
      {"MatMul", 2, 1, {}, {"MatMul", "MatMul"}},
      {"MatMul", 2, 1, {MakeArgument("trans_a", 1), MakeArgument("axis_b", 2)},
       {"MatMul", "MatMul"}},
      {"PadImage", 1, 1, {MakeArgument("pad", 1)}, {"PadImageGradient"}},
      {"Gather", 2, 1, {}, {}},  // a sparse gradient (indices, values), as in Caffe2
      {"Gather", 2, 1, {MakeArgument("dense_gradient", 1)}, {"SparseToDense"}},
      {"Gather", 2, 1, {MakeArgument("axis", 1)}, {"BatchGatherGradient"}},
      {"SparseToDense", 2, 1, {}, {"Gather"}},
      {"SparseToDense", 3, 1, {}, {"Gather"}},
  };
}

std::set<std::string> RegisteredCpuTypes() {
  std::set<std::string> types;
  for (const auto& k : OperatorRegistry::Keys()) {
    if (k.device == DeviceType::CPU) types.insert(k.type);
  }
  return types;
}

bool IsGradientName(const std::string& type) {
  auto ends_with = [&](const std::string& s) {
    return type.size() > s.size() && type.compare(type.size() - s.size(), s.size(), s) == 0;
  };
  return ends_with("Gradient") || ends_with("Grad");
}

void ExpectRegisteredWithSchema(const std::string& type) {
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CPU, type)) << type << " not on CPU";
  EXPECT_NE(OperatorRegistry::Find(DeviceType::CPU, type, ""), nullptr)
      << type << " has no default-engine CPU implementation";
  EXPECT_NE(OpSchemaRegistry::Schema(type), nullptr) << type << " has no schema";
}

TEST(RegistryTest, EveryForwardOpIsRegisteredWithSchemaAndGradientMaker) {
  for (const auto& type : kForwardOps) {
    ExpectRegisteredWithSchema(type);
    EXPECT_NE(GradientRegistry::Find(type), nullptr)
        << type << " has no gradient registration (use NO_GRADIENT / SHOULD_NOT_DO_GRADIENT)";
  }
}

TEST(RegistryTest, EveryGradientOpIsRegisteredWithSchema) {
  for (const auto& type : kGradientOps) ExpectRegisteredWithSchema(type);
  for (const auto& type : kGradientHelperOps) ExpectRegisteredWithSchema(type);
}

TEST(RegistryTest, ListsAreDisjoint) {
  std::set<std::string> seen;
  for (const auto* list : {&kForwardOps, &kGradientOps, &kGradientHelperOps}) {
    for (const auto& type : *list) EXPECT_TRUE(seen.insert(type).second) << type << " twice";
  }
}

// Each maker emits the Caffe2 gradient op types, and every emitted op is registered on CPU and
// passes its schema's checks (input/output counts, in-place rules).
TEST(RegistryTest, GradientMakersEmitRegisteredValidOps) {
  for (const auto& c : GradientCases()) {
    std::vector<std::string> in, out;
    for (int i = 0; i < c.inputs; ++i) in.push_back("in" + std::to_string(i));
    for (int i = 0; i < c.outputs; ++i) out.push_back("out" + std::to_string(i));
    // SpatialBN's running mean / var are updated in place.
    if (c.type == "SpatialBN" && c.outputs == 5) {
      out[1] = in[3];
      out[2] = in[4];
    }
    OperatorDef def = MakeOperatorDef(c.type, "", in, out, c.args);
    std::vector<GradientWrapper> g_out(c.outputs);
    for (int i = 0; i < c.outputs; ++i) {
      if (std::find(c.no_grad_outputs.begin(), c.no_grad_outputs.end(), i) ==
          c.no_grad_outputs.end()) {
        g_out[i].dense = out[i] + "_grad";
      }
    }
    SCOPED_TRACE(def.ShortDebugString());
    GradientOpsMeta meta;
    ASSERT_NO_THROW(meta = GetGradientForOp(def, g_out));
    std::vector<std::string> got;
    for (const auto& op : meta.ops) {
      got.push_back(op.type());
      EXPECT_TRUE(op.is_gradient_op()) << op.ShortDebugString();
      EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CPU, op.type())) << op.type();
      const OpSchema* schema = OpSchemaRegistry::Schema(op.type());
      ASSERT_NE(schema, nullptr) << op.type();
      EXPECT_NO_THROW(schema->Verify(op)) << op.ShortDebugString();
    }
    EXPECT_EQ(got, c.want);
  }
}

// The converse: whatever is registered on CPU is documented, and every operator that is neither
// a gradient op nor a gradient helper has a gradient registration.
TEST(RegistryTest, EveryRegisteredCpuOpHasDocumentedSchema) {
  const std::set<std::string> types = RegisteredCpuTypes();
  EXPECT_GE(types.size(), kForwardOps.size() + kGradientOps.size() + kGradientHelperOps.size());
  for (const auto& type : types) {
    const OpSchema* schema = OpSchemaRegistry::Schema(type);
    ASSERT_NE(schema, nullptr) << type << " is registered on CPU without a schema";
    EXPECT_FALSE(schema->doc().empty()) << type << " has an empty doc (SetDoc)";
    EXPECT_FALSE(schema->FormattedDoc().empty()) << type;
  }
}

TEST(RegistryTest, EveryRegisteredForwardOpHasGradientRegistration) {
  for (const auto& type : RegisteredCpuTypes()) {
    if (IsGradientName(type)) continue;
    if (std::find(kGradientHelperOps.begin(), kGradientHelperOps.end(), type) !=
        kGradientHelperOps.end()) {
      continue;
    }
    EXPECT_NE(GradientRegistry::Find(type), nullptr)
        << type << " is registered on CPU without a gradient registration";
  }
}

}  // namespace
}  // namespace halfcaf
