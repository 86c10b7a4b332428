// MaxPool / AveragePool (+ 1D/2D/3D aliases) and their gradients on CUDA against the CPU
// operators: float and float16, NCHW and NHWC (2-D), 1-D and 3-D NCHW, symmetric and asymmetric pads, legacy padding, global
// pooling, dilated windows (which cuDNN leaves to the own kernels); engine CUDNN (cuDNN or its
// run-time fallback) and the own kernels (the default CUDA implementation, created directly so
// that they run even where cuDNN would be chosen).
// Device tests skip without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "tests/gpu/gpu_op_test_util.h"
#include "tests/util/device_checker.h"

namespace halfcaf {
namespace testing {
namespace {

// bfloat16 on the 2-D cases, whose DistinctTensor values (k / 64, |k| < 256) bfloat16 holds
// exactly: no ties, so cuDNN's max-gradient choice is the CPU's.
const DataType kDtypes[] = {DataType::FLOAT, DataType::FLOAT16, DataType::BFLOAT16};
const DataType kNdDtypes[] = {DataType::FLOAT, DataType::FLOAT16};
const char* const kOrders[] = {"NCHW", "NHWC"};

struct PoolCase {
  const char* name;
  int64_t N, C, H, W;
  std::vector<Argument> args;  // besides order
  bool cudnn_declines;         // explicit asymmetric pads
};

std::vector<PoolCase> Cases() {
  using V = std::vector<int64_t>;
  return {
      {"3x3 stride 2 pad 1",
       2,
       3,
       9,
       8,
       {MakeArgument("kernel", 3), MakeArgument("stride", 2), MakeArgument("pad", 1)},
       false},
      {"2x2 stride 2", 2, 3, 7, 9, {MakeArgument("kernel", 2), MakeArgument("stride", 2)}, false},
      {"3x2 strides (1,2) pads (1,0,1,0)",
       1,
       5,
       7,
       9,
       {MakeArgument("kernels", V{3, 2}), MakeArgument("strides", V{1, 2}),
        MakeArgument("pads", V{1, 0, 1, 0})},
       false},
      {"asymmetric pads (0,1,1,0)",
       2,
       3,
       7,
       9,
       {MakeArgument("kernel", 3), MakeArgument("stride", 2), MakeArgument("pads", V{0, 1, 1, 0})},
       true},
      {"caffe legacy pooling",
       2,
       3,
       8,
       7,
       {MakeArgument("kernel", 3), MakeArgument("stride", 2), MakeArgument("pad", 1),
        MakeArgument("legacy_pad", 3)},
       false},
      {"SAME, even kernel",
       2,
       3,
       7,
       9,
       {MakeArgument("kernel", 2), MakeArgument("legacy_pad", 2)},
       false},
      {"global", 2, 4, 5, 7, {MakeArgument("global_pooling", 1)}, false},
      {"3x2 dilations (2,3) strides (2,1) pads (2,1,1,0)",
       2,
       3,
       10,
       9,
       {MakeArgument("kernels", V{3, 2}), MakeArgument("dilations", V{2, 3}),
        MakeArgument("strides", V{2, 1}), MakeArgument("pads", V{2, 1, 1, 0})},
       true},
      {"2x2 dilation 2 (ONNX's test_maxpool_2d_dilations)",
       1,
       2,
       4,
       4,
       {MakeArgument("kernel", 2), MakeArgument("dilation", 2)},
       false},
  };
}

std::vector<int64_t> XDims(const PoolCase& c, bool nchw) {
  return nchw ? std::vector<int64_t>{c.N, c.C, c.H, c.W} : std::vector<int64_t>{c.N, c.H, c.W, c.C};
}

// Distinct values, exact in float16 (multiples of 1/64 below 32): no ties for max pooling, whose
// tie-breaking cuDNN does not document.
Tensor DistinctTensor(const std::vector<int64_t>& dims, uint32_t seed) {
  Tensor t(dims, DataType::FLOAT);
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  std::iota(v.begin(), v.end(), -t.numel() / 2);
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = v[i] / 64.f;
  return t;
}

OperatorDef PoolDef(const std::string& type, const PoolCase& c, const char* order,
                    std::vector<std::string> in, std::vector<std::string> out) {
  std::vector<Argument> args = c.args;
  args.push_back(MakeArgument("order", std::string(order)));
  return MakeOperatorDef(type, "", in, out, args);
}

// CPU reference vs the default CUDA implementation (engine ""), created from the registry.
void CheckOwnKernels(const OperatorDef& def, const std::map<std::string, Tensor>& inputs) {
  SCOPED_TRACE(def.type() + " own CUDA kernels vs CPU");
  Workspace ws_cpu;
  RunOp(def, inputs, &ws_cpu);
  Workspace ws;
  const Device gpu{DeviceType::CUDA, 0};
  for (const auto& kv : inputs) ws.CreateTensor(kv.first, gpu)->CopyFrom(kv.second);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  OperatorDef gpu_def = def;
  gpu_def.mutable_device_option()->set_device_type(1);
  const OperatorCreator* create = OperatorRegistry::Find(DeviceType::CUDA, def.type(), "");
  ASSERT_NE(create, nullptr);
  auto op = (*create)(gpu_def, &ws);
  op->Run(0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const Tensor& want = ws_cpu.GetTensor(def.output(0));
  Tensor got;
  got.CopyFrom(ws.GetTensor(def.output(0)));
  ASSERT_EQ(got.dims(), want.dims());
  ASSERT_EQ(got.dtype(), want.dtype());
  const bool half = want.dtype() == DataType::FLOAT16;
  const bool bf16 = want.dtype() == DataType::BFLOAT16;
  const float tol = half ? 1e-2f : bf16 ? 3e-2f : 1e-5f;
  ExpectNear(ToFloatVector(got), ToFloatVector(want), tol, tol, def.type());
}

// Every pool op of both kinds on every case, order and dtype; `own` selects the own kernels.
void CheckAll(bool own) {
  for (const PoolCase& c : Cases()) {
    for (const char* order : kOrders) {
      const bool nchw = std::string(order) == "NCHW";
      const Tensor x = DistinctTensor(XDims(c, nchw), 1);
      for (const char* kind : {"MaxPool", "AveragePool"}) {
        const std::string type = kind;
        Workspace ws;  // the CPU forward gives Y (and its shape) for the gradient
        RunOp(PoolDef(type, c, order, {"X"}, {"Y"}), {{"X", x}}, &ws);
        Tensor y;
        y.CopyFrom(ws.GetTensor("Y"));
        const std::map<std::string, Tensor> in{
            {"X", x}, {"Y", y}, {"dY", RandomTensor(y.dims(), 2)}};
        for (DataType dt : kDtypes) {
          SCOPED_TRACE(MakeString(c.name, " ", order, " ", type, " ", DataTypeName(dt)));
          const auto data = AsDtype(in, dt);
          const OperatorDef fwd = PoolDef(type, c, order, {"X"}, {"Y"});
          const OperatorDef grad = PoolDef(type + "Gradient", c, order, {"X", "Y", "dY"}, {"dX"});
          if (own) {
            CheckOwnKernels(fwd, data);
            CheckOwnKernels(grad, data);
          } else {
            DeviceCheckOptions opts;
            opts.engine = "CUDNN";
            DeviceChecker(opts).Check(fwd, data);
            DeviceChecker(opts).Check(grad, data);
          }
        }
        if (own) {
          // Mixed dtypes (X float16, dY float and the reverse): own kernels on every engine.
          SCOPED_TRACE(MakeString(c.name, " ", order, " ", type, " mixed dtypes"));
          const OperatorDef grad = PoolDef(type + "Gradient", c, order, {"X", "Y", "dY"}, {"dX"});
          DeviceChecker().Check(grad, {{"X", ToHalf(x)}, {"Y", ToHalf(y)}, {"dY", in.at("dY")}});
          DeviceChecker().Check(grad, {{"X", x}, {"Y", y}, {"dY", ToHalf(in.at("dY"))}});
          // bfloat16 goes with bfloat16 only.
          ExpectCudaError(grad, {{"X", ToBFloat16(x)}, {"Y", ToBFloat16(y)}, {"dY", in.at("dY")}},
                          "takes bfloat16 X, Y and dY together");
        }
      }
    }
  }
}

// Host-only: both implementations are registered for every type.
TEST(PoolGpuTest, Registered) {
  for (const std::string kind : {"MaxPool", "AveragePool"}) {
    for (const std::string alias : {"", "1D", "2D", "3D"}) {
      for (const std::string suffix : {"", "Gradient"}) {
        const std::string type = kind + alias + suffix;
        EXPECT_NE(OperatorRegistry::Find(DeviceType::CUDA, type, "CUDNN"), nullptr) << type;
        EXPECT_NE(OperatorRegistry::Find(DeviceType::CUDA, type, ""), nullptr) << type;
      }
    }
  }
}

// 1-D and 3-D NCHW pooling (1-D runs in cuDNN as 2-D with a unit leading dim; the own kernels
// take 3-D windows): cuDNN engine and own kernels against the CPU, float and float16.
TEST(PoolGpuTest, OneAndThreeDMatchCpu) {
  REQUIRE_GPU();
  using V = std::vector<int64_t>;
  struct NdCase {
    const char* name;
    V x_dims;
    std::vector<Argument> args;
  };
  const std::vector<NdCase> cases{
      {"1-D k3 s2 p1", {2, 3, 11},
       {MakeArgument("kernels", V{3}), MakeArgument("strides", V{2}), MakeArgument("pads", V{1, 1})}},
      {"1-D asymmetric pads", {2, 3, 10},
       {MakeArgument("kernels", V{4}), MakeArgument("strides", V{3}), MakeArgument("pads", V{2, 0})}},
      {"1-D global", {2, 3, 9}, {MakeArgument("global_pooling", 1)}},
      {"3-D symmetric pads", {2, 3, 4, 5, 6},
       {MakeArgument("kernels", V{2, 3, 2}), MakeArgument("strides", V{1, 2, 2}),
        MakeArgument("pads", V{1, 1, 0, 1, 1, 0})}},
      {"3-D asymmetric pads", {2, 3, 5, 4, 7},
       {MakeArgument("kernels", V{3, 2, 3}), MakeArgument("strides", V{2, 1, 2}),
        MakeArgument("pads", V{1, 0, 1, 1, 1, 0})}},
      {"3-D caffe legacy pooling", {1, 2, 6, 5, 6},
       {MakeArgument("kernels", V{3, 3, 3}), MakeArgument("strides", V{2, 2, 2}),
        MakeArgument("pads", V{1, 1, 1, 1, 1, 1}), MakeArgument("legacy_pad", 3)}},
      {"3-D global", {2, 3, 4, 5, 3}, {MakeArgument("global_pooling", 1)}},
      {"1-D dilated", {2, 3, 13},
       {MakeArgument("kernels", V{3}), MakeArgument("dilations", V{3}),
        MakeArgument("strides", V{2}), MakeArgument("pads", V{2, 1})}},
      {"3-D dilated", {2, 3, 6, 5, 7},
       {MakeArgument("kernels", V{2, 2, 3}), MakeArgument("dilations", V{2, 3, 2}),
        MakeArgument("strides", V{1, 2, 2}), MakeArgument("pads", V{1, 0, 1, 1, 1, 0})}},
  };
  for (const NdCase& c : cases) {
    const Tensor x = DistinctTensor(c.x_dims, 11);
    for (const std::string kind : {"MaxPool", "AveragePool"}) {
      const std::string type = kind + (c.x_dims.size() == 3 ? "1D" : "3D");
      Workspace ws;
      RunOp(MakeOperatorDef(type, "", {"X"}, {"Y"}, c.args), {{"X", x}}, &ws);
      Tensor y;
      y.CopyFrom(ws.GetTensor("Y"));
      const std::map<std::string, Tensor> in{{"X", x}, {"Y", y}, {"dY", RandomTensor(y.dims(), 12)}};
      const OperatorDef fwd = MakeOperatorDef(type, "", {"X"}, {"Y"}, c.args);
      const OperatorDef grad =
          MakeOperatorDef(type + "Gradient", "", {"X", "Y", "dY"}, {"dX"}, c.args);
      for (DataType dt : kNdDtypes) {
        SCOPED_TRACE(MakeString(c.name, " ", type, " ", DataTypeName(dt)));
        const auto data = AsDtype(in, dt);
        DeviceCheckOptions opts;
        opts.engine = "CUDNN";
        DeviceChecker(opts).Check(fwd, data);
        DeviceChecker(opts).Check(grad, data);
        CheckOwnKernels(fwd, data);
        CheckOwnKernels(grad, data);
      }
    }
  }
}

TEST(PoolGpuTest, CudnnEngineMatchesCpu) {
  REQUIRE_GPU();
  CheckAll(false);
}

TEST(PoolGpuTest, OwnKernelsMatchCpu) {
  REQUIRE_GPU();
  CheckAll(true);
}

TEST(PoolGpuTest, Aliases) {
  REQUIRE_GPU();
  const PoolCase c = Cases()[0];
  const Tensor x = DistinctTensor(XDims(c, true), 3);
  for (const std::string type : {"MaxPool2D", "AveragePool2D"}) {
    Workspace ws;
    RunOp(PoolDef(type, c, "NCHW", {"X"}, {"Y"}), {{"X", x}}, &ws);
    Tensor y;
    y.CopyFrom(ws.GetTensor("Y"));
    const std::map<std::string, Tensor> in{{"X", x}, {"Y", y}, {"dY", RandomTensor(y.dims(), 4)}};
    DeviceChecker().Check(PoolDef(type, c, "NCHW", {"X"}, {"Y"}), in);
    DeviceChecker().Check(PoolDef(type + "Gradient", c, "NCHW", {"X", "Y", "dY"}, {"dX"}), in);
  }
}

// Max pooling with ties (all-equal windows): the own kernels send the gradient to the first
// maximum in scan order, as the CPU op does.
TEST(PoolGpuTest, MaxGradientTiesGoToFirstMaximum) {
  REQUIRE_GPU();
  const PoolCase c = Cases()[1];
  for (const char* order : kOrders) {
    SCOPED_TRACE(order);
    Tensor x(XDims(c, std::string(order) == "NCHW"), DataType::FLOAT);
    for (int64_t i = 0; i < x.numel(); ++i) x.mutable_data<float>()[i] = (i % 3 == 0) ? 0.5f : 0.f;
    Workspace ws;
    RunOp(PoolDef("MaxPool", c, order, {"X"}, {"Y"}), {{"X", x}}, &ws);
    Tensor y;
    y.CopyFrom(ws.GetTensor("Y"));
    CheckOwnKernels(PoolDef("MaxPoolGradient", c, order, {"X", "Y", "dY"}, {"dX"}),
                    {{"X", x}, {"Y", y}, {"dY", RandomTensor(y.dims(), 5)}});
  }
}

TEST(PoolGpuTest, EmptyBatch) {
  REQUIRE_GPU();
  const PoolCase c = Cases()[0];
  DeviceChecker().Check(PoolDef("MaxPool", c, "NCHW", {"X"}, {"Y"}),
                        {{"X", RandomTensor({0, 3, 9, 8}, 6)}});
}

TEST(PoolGpuTest, Errors) {
  REQUIRE_GPU();
  Workspace ws;
  const Device gpu{DeviceType::CUDA, 0};
  ws.CreateTensor("X", gpu)->CopyFrom(RandomTensor({1, 2, 6, 6}, 7));
  ws.CreateTensor("I", gpu)->CopyFrom(IntTensor({1, 1, 2, 2}, {1, 2, 3, 4}));
  ws.CreateTensor("Y", gpu)->CopyFrom(RandomTensor({1, 2, 2, 2}, 8));
  auto expect_error = [&](OperatorDef def, const std::string& needle) {
    def.mutable_device_option()->set_device_type(1);
    try {
      CreateOperator(def, &ws)->Run(0);
      FAIL() << "accepted: " << def.ShortDebugString();
    } catch (const EnforceNotMet& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const Argument k2 = MakeArgument("kernel", 2);
  expect_error(MakeOperatorDef("MaxPool", "", {"I"}, {"O"}, {k2}), "int32");
  // Y of the wrong shape for a 2x2 stride-1 pool of 6x6 (5x5).
  expect_error(MakeOperatorDef("MaxPoolGradient", "", {"X", "Y", "Y"}, {"dX"}, {k2}),
               "pooled shape");
  expect_error(MakeOperatorDef("AveragePool", "", {"X"}, {"O"},
                               {MakeArgument("kernels", std::vector<int64_t>{2, 2, 2})}),
               "X must have 5 dims");
  expect_error(MakeOperatorDef("AveragePool3D", "", {"X"}, {"O"},
                               {MakeArgument("kernels", std::vector<int64_t>{2, 2, 2}),
                                MakeArgument("order", "NHWC")}),
               "NHWC order supports only 2-D pooling");
  expect_error(MakeOperatorDef("MaxPool", "", {"X"}, {"O"},
                               {MakeArgument("kernels", std::vector<int64_t>{1, 1, 1, 1})}),
               "CUDA pooling handles 1-D to 3-D windows");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
