// Shape, copy and reduction operators on CUDA against the CPU operators: Concat / Split (and the
// Depth aliases), Flatten, Reshape, ResizeLike, Transpose, NCHW2NHWC / NHWC2NCHW, Copy,
// CopyOnDeviceLike, Alias, StopGradient, EnsureCPUOutput, ReduceSum / ReduceMean (+ gradients).
// Device tests skip without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const DataType kDtypes[] = {DataType::FLOAT, DataType::FLOAT16};
const Device kGpu{DeviceType::CUDA, 0};

TEST(ShapeGpuTest, Registered) {
  for (const char* type :
       {"Concat", "DepthConcat", "Split", "DepthSplit", "Flatten", "Reshape", "ResizeLike",
        "Transpose", "NCHW2NHWC", "NHWC2NCHW", "Copy", "CopyOnDeviceLike", "Alias",
        "StopGradient", "EnsureCPUOutput", "ReduceSum", "ReduceMean", "ReduceSumGradient",
        "ReduceMeanGradient"}) {
    EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, type)) << type;
  }
}

// The same float values as float, float16, int32 and int64 (byte-moving ops work on any type).
std::vector<Tensor> AllTypes(const Tensor& x) {
  return {x, ToHalf(x), CastTensor<int32_t>(x, 100.f), CastTensor<int64_t>(x, 100.f),
          CastTensor<double>(x)};
}

TEST(ShapeGpuTest, ConcatMatchesCpu) {
  REQUIRE_GPU();
  const struct {
    std::vector<std::vector<int64_t>> dims;
    std::vector<Argument> args;
  } cases[] = {
      {{{2, 3, 5}, {2, 4, 5}, {2, 1, 5}}, {}},
      {{{2, 3, 5}, {1, 3, 5}}, {MakeArgument("axis", 0)}},
      {{{2, 3, 5}, {2, 3, 2}}, {MakeArgument("axis", -1)}},
      {{{2, 3, 4, 5}, {2, 3, 4, 1}}, {MakeArgument("order", "NHWC")}},
      {{{2, 3}, {2, 3}, {2, 3}}, {MakeArgument("axis", 1), MakeArgument("add_axis", 1)}},
      {{{2, 0, 5}, {2, 3, 5}}, {}},
  };
  for (const char* type : {"Concat", "DepthConcat"}) {
    for (const auto& c : cases) {
      std::vector<std::string> names;
      std::vector<Tensor> parts;
      for (size_t i = 0; i < c.dims.size(); ++i) {
        names.push_back("X" + std::to_string(i));
        parts.push_back(RandomTensor(c.dims[i], 70 + static_cast<uint32_t>(i)));
      }
      const auto def = MakeOperatorDef(type, "", names, {"Y", "split_info"}, c.args);
      for (size_t t = 0; t < AllTypes(parts[0]).size(); ++t) {
        std::map<std::string, Tensor> in;
        for (size_t i = 0; i < parts.size(); ++i) in[names[i]] = AllTypes(parts[i])[t];
        SCOPED_TRACE(std::string(type) + " " + DataTypeName(in.begin()->second.dtype()));
        const CpuCudaOutputs r = RunCpuAndCuda(def, in);
        ExpectIdentical(r.cuda[0], r.cpu[0], "Y");
        ExpectIdentical(r.cuda[1], r.cpu[1], "split_info");
        EXPECT_EQ(r.cuda_devices[0], kGpu);
        EXPECT_EQ(r.cuda_devices[1], Device()) << "split_info stays on the CPU";
      }
    }
  }
}

TEST(ShapeGpuTest, SplitMatchesCpu) {
  REQUIRE_GPU();
  const Tensor x = RandomTensor({2, 6, 5}, 80);
  const struct {
    int outputs;
    std::vector<Argument> args;
  } cases[] = {
      {3, {}},
      {2, {MakeArgument("split", std::vector<int64_t>{4, 2})}},
      {2, {MakeArgument("axis", -1), MakeArgument("split", std::vector<int64_t>{0, 5})}},
      {2, {MakeArgument("axis", 0), MakeArgument("add_axis", 1)}},
  };
  for (const char* type : {"Split", "DepthSplit"}) {
    for (const auto& c : cases) {
      std::vector<std::string> outs;
      for (int k = 0; k < c.outputs; ++k) outs.push_back("Y" + std::to_string(k));
      for (const Tensor& t : AllTypes(x)) {
        SCOPED_TRACE(std::string(type) + " " + DataTypeName(t.dtype()));
        ExpectCudaIdentical(MakeOperatorDef(type, "", {"X"}, outs, c.args), {{"X", t}});
      }
    }
  }
  // Lengths from a CPU int32 input.
  ExpectCudaIdentical(MakeOperatorDef("Split", "", {"X", "L"}, {"A", "B", "C"}),
                      {{"X", x}, {"L", IntTensor({3}, {1, 3, 2})}}, {"L"});
}

TEST(ShapeGpuTest, FlattenResizeLikeReshape) {
  REQUIRE_GPU();
  const Tensor x = RandomTensor({2, 3, 4, 5}, 90);
  for (const Tensor& t : AllTypes(x)) {
    SCOPED_TRACE(DataTypeName(t.dtype()));
    ExpectCudaIdentical(MakeOperatorDef("Flatten", "", {"X"}, {"Y"}), {{"X", t}});
    ExpectCudaIdentical(MakeOperatorDef("Flatten", "", {"X"}, {"Y"}, {MakeArgument("axis", 3)}),
                        {{"X", t}});
    ExpectCudaIdentical(MakeOperatorDef("ResizeLike", "", {"X", "L"}, {"Y"}),
                        {{"X", t}, {"L", RandomTensor({6, 20}, 91)}});
    ExpectCudaIdentical(MakeOperatorDef("ResizeLike", "", {"X", "L"}, {"X"}),
                        {{"X", t}, {"L", RandomTensor({120}, 91)}});
    ExpectCudaIdentical(
        MakeOperatorDef("Reshape", "", {"X"}, {"Y", "old"},
                        {MakeArgument("shape", std::vector<int64_t>{0, -1, 5})}),
        {{"X", t}});
    ExpectCudaIdentical(MakeOperatorDef("Reshape", "", {"X"}, {"X", "old"},
                                        {MakeArgument("shape", std::vector<int64_t>{-1})}),
                        {{"X", t}});
  }
  // The shape as a CPU int32 input; old_shape is then int32 and, as on the CPU, a host tensor.
  const CpuCudaOutputs r = RunCpuAndCuda(MakeOperatorDef("Reshape", "", {"X", "S"}, {"Y", "old"}),
                                         {{"X", x}, {"S", IntTensor({2}, {6, -1})}}, {"S"});
  ExpectIdentical(r.cuda[0], r.cpu[0], "reshaped");
  ExpectIdentical(r.cuda[1], r.cpu[1], "old_shape");
  EXPECT_EQ(r.cuda_devices[1], Device());
  ExpectCudaError(MakeOperatorDef("Reshape", "", {"X"}, {"Y", "old"},
                                  {MakeArgument("shape", std::vector<int64_t>{7, -1})}),
                  {{"X", x}}, "not a multiple of 7");
  ExpectCudaError(MakeOperatorDef("ResizeLike", "", {"X", "L"}, {"Y"}),
                  {{"X", x}, {"L", RandomTensor({7}, 1)}}, "has 120 elements");
}

TEST(ShapeGpuTest, TransposeAndOrderSwitch) {
  REQUIRE_GPU();
  const Tensor x = RandomTensor({2, 3, 7, 9}, 100);
  const std::vector<std::vector<int>> perms = {
      {}, {0, 2, 3, 1}, {0, 3, 1, 2}, {1, 0, 2, 3}, {3, 2, 1, 0}, {0, 1, 2, 3}, {2, 3, 0, 1}};
  for (const Tensor& t : AllTypes(x)) {
    SCOPED_TRACE(DataTypeName(t.dtype()));
    for (const auto& p : perms) {
      std::vector<Argument> args;
      if (!p.empty()) args.push_back(MakeArgument("axes", p));
      ExpectCudaIdentical(MakeOperatorDef("Transpose", "", {"X"}, {"Y"}, args), {{"X", t}});
    }
    ExpectCudaIdentical(MakeOperatorDef("NCHW2NHWC", "", {"X"}, {"Y"}), {{"X", t}});
    ExpectCudaIdentical(MakeOperatorDef("NHWC2NCHW", "", {"X"}, {"Y"}), {{"X", t}});
  }
  // Size-1 dims, 5-d and 1-byte elements.
  const Tensor y = RandomTensor({1, 4, 1, 3, 5}, 101, 0.f, 2.5f);
  ExpectCudaIdentical(MakeOperatorDef("Transpose", "", {"X"}, {"Y"},
                                      {MakeArgument("axes", std::vector<int>{4, 2, 0, 3, 1})}),
                      {{"X", CastTensor<uint8_t>(y, 100.f)}});
  ExpectCudaIdentical(MakeOperatorDef("NCHW2NHWC", "", {"X"}, {"Y"}), {{"X", y}});
  ExpectCudaError(MakeOperatorDef("NCHW2NHWC", "", {"X"}, {"Y"}), {{"X", RandomTensor({2, 3}, 1)}},
                  "at least 3 dims");
}

TEST(ShapeGpuTest, CopiesAndAliases) {
  REQUIRE_GPU();
  const Tensor x = RandomTensor({3, 4, 5}, 110);
  for (const Tensor& t : AllTypes(x)) {
    SCOPED_TRACE(DataTypeName(t.dtype()));
    ExpectCudaIdentical(MakeOperatorDef("Copy", "", {"X"}, {"Y"}), {{"X", t}});
    ExpectCudaIdentical(MakeOperatorDef("StopGradient", "", {"X"}, {"Y"}), {{"X", t}});
    ExpectCudaIdentical(MakeOperatorDef("StopGradient", "", {"X"}, {"X"}), {{"X", t}});
    ExpectCudaIdentical(MakeOperatorDef("Alias", "", {"X"}, {"Y"}), {{"X", t}});
    // `like` on the GPU: a GPU copy; `like` on the CPU: the result is a host tensor.
    ExpectCudaIdentical(MakeOperatorDef("CopyOnDeviceLike", "", {"X", "L"}, {"Y"}),
                        {{"X", t}, {"L", RandomTensor({1}, 1)}});
    const CpuCudaOutputs r =
        RunCpuAndCuda(MakeOperatorDef("CopyOnDeviceLike", "", {"X", "L"}, {"Y"}),
                      {{"X", t}, {"L", RandomTensor({1}, 1)}}, {"L"});
    ExpectIdentical(r.cuda[0], r.cpu[0], "Y");
    EXPECT_EQ(r.cuda_devices[0], Device());
  }
  // Alias shares storage on the device.
  Workspace ws;
  ws.CreateTensor("X", kGpu)->CopyFrom(x);
  CreateOperator(OnCuda(MakeOperatorDef("Alias", "", {"X"}, {"Y"})), &ws)->Run(0);
  EXPECT_TRUE(ws.GetTensor("Y").SharesStorageWith(ws.GetTensor("X")));
}

TEST(ShapeGpuTest, EnsureCPUOutput) {
  // The schema and the CPU version exist in every build.
  EXPECT_NE(OpSchemaRegistry::Schema("EnsureCPUOutput"), nullptr);
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CPU, "EnsureCPUOutput"));
  REQUIRE_GPU();
  const Tensor x = RandomTensor({3, 4}, 120);
  for (const Tensor& t : AllTypes(x)) {
    SCOPED_TRACE(DataTypeName(t.dtype()));
    for (bool host_input : {false, true}) {
      std::set<std::string> host;
      if (host_input) host.insert("X");
      const CpuCudaOutputs r =
          RunCpuAndCuda(MakeOperatorDef("EnsureCPUOutput", "", {"X"}, {"Y"}), {{"X", t}}, host);
      ExpectIdentical(r.cuda[0], r.cpu[0], "Y");
      EXPECT_EQ(r.cuda_devices[0], Device()) << "EnsureCPUOutput must produce a CPU tensor";
    }
  }
}

TEST(ShapeGpuTest, ReduceMatchesCpu) {
  REQUIRE_GPU();
  const std::vector<std::vector<int>> axes_cases = {
      {}, {0}, {1}, {-1}, {1, 3}, {0, 2}, {0, 1, 2, 3}, {2, 0}};
  const Tensor x = RandomTensor({2, 3, 7, 9}, 130);
  DeviceCheckOptions opts;
  opts.atol16 = 3e-2f;  // sums rounded once to float16
  for (const char* type : {"ReduceSum", "ReduceMean"}) {
    for (const auto& axes : axes_cases) {
      for (int keepdims : {0, 1}) {
        SCOPED_TRACE(std::string(type) + " axes " + DimsString(axes) + " keepdims " +
                     std::to_string(keepdims));
        std::vector<Argument> args{MakeArgument("keepdims", keepdims)};
        if (!axes.empty()) args.push_back(MakeArgument("axes", axes));
        const auto fwd = MakeOperatorDef(type, "", {"X"}, {"Y"}, args);
        for (DataType dt : kDtypes) DeviceChecker(opts).Check(fwd, AsDtype({{"X", x}}, dt));
        // The gradient, with dY shaped like the forward output.
        Workspace ws;
        RunOp(fwd, {{"X", x}}, &ws);
        const Tensor dy = RandomTensor(ws.GetTensor("Y").dims(), 131);
        const auto grad = MakeOperatorDef(std::string(type) + "Gradient", "", {"dY", "X", "Y"},
                                          {"dX"}, args);
        for (DataType dt : kDtypes) {
          auto in = AsDtype({{"dY", dy}, {"X", x}}, dt);
          in["Y"].CopyFrom(ws.GetTensor("Y"));
          DeviceChecker().Check(grad, in);
        }
      }
    }
  }
  // Long rows, many short rows, an empty reduction (the mean is NaN on both).
  DeviceChecker().Check(MakeOperatorDef("ReduceSum", "", {"X"}, {"Y"},
                                        {MakeArgument("axes", std::vector<int>{1})}),
                        {{"X", RandomTensor({3, 5000}, 132)}});
  DeviceChecker().Check(MakeOperatorDef("ReduceMean", "", {"X"}, {"Y"},
                                        {MakeArgument("axes", std::vector<int>{1})}),
                        {{"X", RandomTensor({5000, 3}, 133)}});
  const CpuCudaOutputs r =
      RunCpuAndCuda(MakeOperatorDef("ReduceMean", "", {"X"}, {"Y"},
                                    {MakeArgument("axes", std::vector<int>{1})}),
                    {{"X", RandomTensor({3, 0}, 134)}});
  ASSERT_EQ(r.cuda[0].numel(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(r.cuda[0].data<float>()[i]));
  ExpectCudaError(MakeOperatorDef("ReduceSum", "", {"X"}, {"Y"},
                                  {MakeArgument("axes", std::vector<int>{4})}),
                  {{"X", x}}, "out of range");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
