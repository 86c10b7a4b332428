// Conv / ConvGradient on cuDNN against the CPU operators: float, float16 and bfloat16, NCHW and
// NHWC, group, stride, pads, dilation, bias / no bias, heuristic and exhaustive algorithm search, tensor cores
// on and off; argument errors. Device tests skip without a GPU.
#include <glog/logging.h>
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "tests/util/conv_case.h"
#include "tests/util/device_checker.h"

namespace halfcaf {
namespace testing {
namespace {

const DataType kDtypes[] = {DataType::FLOAT, DataType::FLOAT16, DataType::BFLOAT16};
const char* const kOrders[] = {"NCHW", "NHWC"};

struct ConvCase {
  const char* name;
  int64_t N, C, H, W, M, kh, kw;
  std::vector<Argument> args;  // besides kernel and order
};

std::vector<ConvCase> Cases() {
  return {
      {"3x3 pad 1", 2, 3, 7, 9, 4, 3, 3, {MakeArgument("pad", 1)}},
      {"stride 2 pad 1 group 2",
       2,
       4,
       9,
       8,
       6,
       3,
       3,
       {MakeArgument("stride", 2), MakeArgument("pad", 1), MakeArgument("group", 2)}},
      {"dilation 2 pad 2",
       2,
       3,
       11,
       9,
       5,
       3,
       3,
       {MakeArgument("dilation", 2), MakeArgument("pad", 2)}},
      {"1x1", 3, 8, 5, 7, 16, 1, 1, {}},
      {"3x5 pads (1,2,1,2) strides (1,2)",
       2,
       3,
       7,
       10,
       4,
       3,
       5,
       {MakeArgument("pads", std::vector<int64_t>{1, 2, 1, 2}),
        MakeArgument("strides", std::vector<int64_t>{1, 2})}},
  };
}

std::vector<int64_t> XDims(const ConvCase& c, bool nchw) {
  return nchw ? std::vector<int64_t>{c.N, c.C, c.H, c.W} : std::vector<int64_t>{c.N, c.H, c.W, c.C};
}

std::vector<int64_t> FilterDims(const ConvCase& c, bool nchw, int group) {
  return nchw ? std::vector<int64_t>{c.M, c.C / group, c.kh, c.kw}
              : std::vector<int64_t>{c.M, c.kh, c.kw, c.C / group};
}

int GroupOf(const ConvCase& c) {
  for (const auto& a : c.args) {
    if (a.name() == "group") return static_cast<int>(a.i());
  }
  return 1;
}

OperatorDef ConvDef(const std::string& type, const ConvCase& c, const char* order,
                    std::vector<std::string> in, std::vector<std::string> out,
                    std::vector<Argument> extra = {}) {
  std::vector<Argument> args = c.args;
  args.push_back(MakeArgument("kernels", std::vector<int64_t>{c.kh, c.kw}));
  args.push_back(MakeArgument("order", std::string(order)));
  args.insert(args.end(), extra.begin(), extra.end());
  return MakeOperatorDef(type, "", in, out, args);
}

// Output dims of the case, computed by the CPU op (the reference for shapes too).
std::vector<int64_t> OutputDims(const ConvCase& c, const char* order,
                                const std::map<std::string, Tensor>& in) {
  Workspace ws;
  RunOp(ConvDef("Conv", c, order, {"X", "w"}, {"Y"}), in, &ws);
  return ws.GetTensor("Y").dims();
}

// Forward (with and without bias) and every gradient form, for each case, order and dtype.
void CheckAll(const std::vector<Argument>& extra, const std::string& engine,
              const std::vector<ConvCase>& cases = Cases()) {
  DeviceCheckOptions opts;
  opts.engine = engine;
  opts.atol16 = 2e-2f;  // float16 outputs of sums over up to a few hundred products
  for (const ConvCase& c : cases) {
    for (const char* order : kOrders) {
      const bool nchw = std::string(order) == "NCHW";
      std::map<std::string, Tensor> in{{"X", RandomTensor(XDims(c, nchw), 1)},
                                       {"w", RandomTensor(FilterDims(c, nchw, GroupOf(c)), 2)},
                                       {"b", RandomTensor({c.M}, 3)}};
      in["dY"] = RandomTensor(OutputDims(c, order, in), 4);
      for (DataType dt : kDtypes) {
        SCOPED_TRACE(
            MakeString(c.name, " ", order, " ", DataTypeName(dt), " engine '", engine, "'"));
        const auto data = AsDtype(in, dt);
        DeviceChecker checker(opts);
        checker.Check(ConvDef("Conv", c, order, {"X", "w", "b"}, {"Y"}, extra), data);
        checker.Check(ConvDef("Conv", c, order, {"X", "w"}, {"Y"}, extra), data);
        checker.Check(
            ConvDef("ConvGradient", c, order, {"X", "w", "dY"}, {"dw", "db", "dX"}, extra), data);
        checker.Check(ConvDef("ConvGradient", c, order, {"X", "w", "dY"}, {"dw", "db"}, extra),
                      data);
        std::vector<Argument> no_bias = extra;
        no_bias.push_back(MakeArgument("no_bias", 1));
        checker.Check(ConvDef("ConvGradient", c, order, {"X", "w", "dY"}, {"dw", "dX"}, no_bias),
                      data);
        checker.Check(ConvDef("ConvGradient", c, order, {"X", "w", "dY"}, {"dw"}, no_bias), data);
      }
    }
  }
}

// Host-only: the CUDA build registers the cuDNN engine and the plain CUDA implementation.
TEST(ConvCudnnTest, Registered) {
  for (const char* type : {"Conv", "Conv1D", "Conv2D", "Conv3D", "ConvGradient", "Conv1DGradient",
                           "Conv2DGradient", "Conv3DGradient"}) {
    EXPECT_NE(OperatorRegistry::Find(DeviceType::CUDA, type, "CUDNN"), nullptr) << type;
    EXPECT_NE(OperatorRegistry::Find(DeviceType::CUDA, type, ""), nullptr) << type;
  }
}

TEST(ConvCudnnTest, MatchesCpuHeuristicSearch) {
  REQUIRE_GPU();
  CheckAll({}, "CUDNN");
}

TEST(ConvCudnnTest, MatchesCpuPlainCudaEngine) {
  REQUIRE_GPU();
  CheckAll({}, "");
}

TEST(ConvCudnnTest, MatchesCpuExhaustiveSearch) {
  REQUIRE_GPU();
  // Timed search is slow: two cases are enough to exercise it.
  CheckAll({MakeArgument("exhaustive_search", 1)}, "CUDNN", {Cases()[0], Cases()[1]});
}

TEST(ConvCudnnTest, MatchesCpuWithoutTensorCores) {
  REQUIRE_GPU();
  CheckAll({MakeArgument("enable_tensor_core", 0), MakeArgument("deterministic", 1)}, "CUDNN");
}

TEST(ConvCudnnTest, Conv2DAlias) {
  REQUIRE_GPU();
  const ConvCase c = Cases()[0];
  std::map<std::string, Tensor> in{{"X", RandomTensor(XDims(c, true), 5)},
                                   {"w", RandomTensor(FilterDims(c, true, 1), 6)},
                                   {"b", RandomTensor({c.M}, 7)}};
  in["dY"] = RandomTensor(OutputDims(c, "NCHW", in), 8);
  DeviceChecker().Check(ConvDef("Conv2D", c, "NCHW", {"X", "w", "b"}, {"Y"}), in);
  DeviceChecker().Check(ConvDef("Conv2DGradient", c, "NCHW", {"X", "w", "dY"}, {"dw", "db", "dX"}),
                        in);
}

// The FP32 path must be real FP32 math: with TF32 the errors over C * 9 = 288 products per output
// would be ~1e-3, well over this tolerance.
TEST(ConvCudnnTest, Fp32IsNotTf32) {
  REQUIRE_GPU();
  const ConvCase c{"fp32", 2, 32, 12, 12, 16, 3, 3, {MakeArgument("pad", 1)}};
  DeviceCheckOptions opts;
  opts.atol = 3e-4f;
  opts.rtol = 0.f;
  for (const char* order : kOrders) {
    SCOPED_TRACE(order);
    const bool nchw = std::string(order) == "NCHW";
    std::map<std::string, Tensor> in{{"X", RandomTensor(XDims(c, nchw), 9)},
                                     {"w", RandomTensor(FilterDims(c, nchw, 1), 10)}};
    in["dY"] = RandomTensor(OutputDims(c, order, in), 11);
    DeviceChecker(opts).Check(ConvDef("Conv", c, order, {"X", "w"}, {"Y"}), in);
    DeviceChecker(opts).Check(ConvDef("ConvGradient", c, order, {"X", "w", "dY"}, {"dw", "dX"},
                                      {MakeArgument("no_bias", 1)}),
                              in);
  }
}

// The "cuDNN conv algo: ..." lines the ops log while alive (glog sink).
class AlgoLog : public google::LogSink {
 public:
  AlgoLog() { google::AddLogSink(this); }
  ~AlgoLog() override { google::RemoveLogSink(this); }
  using google::LogSink::send;
  void send(google::LogSeverity, const char*, const char*, int, const google::LogMessageTime&,
            const char* message, size_t len) override {
    const std::string m(message, len);
    std::lock_guard<std::mutex> lk(mu_);
    if (m.find("cuDNN conv algo: ") != std::string::npos) lines_.push_back(m);
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lk(mu_);
    return lines_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

// The math type a "cuDNN conv algo" line reports ("... math CUDNN_FMA_MATH workspace ...").
std::string MathOf(const std::string& line) {
  const size_t at = line.find(" math ");
  if (at == std::string::npos) return "";
  const size_t from = at + 6;
  return line.substr(from, line.find(' ', from) - from);
}

// The math type each chosen algorithm runs with is the one cuDNN reported for it, and it is
// allowed for the case: FP32 only FMA (no TF32), FP16 without tensor cores never tensor-op math.
// Covers NCHW and NHWC, grouped and depthwise NHWC, all three directions, heuristic and timed
// search; the results must still match the CPU.
TEST(ConvCudnnTest, ChosenMathTypeIsAllowed) {
  REQUIRE_GPU();
  std::vector<ConvCase> cases = {Cases()[0], Cases()[1]};
  cases.push_back({"group 4", 2, 8, 9, 9, 8, 3, 3,
                   {MakeArgument("pad", 1), MakeArgument("group", 4)}});
  cases.push_back({"depthwise", 2, 16, 10, 10, 16, 3, 3,
                   {MakeArgument("pad", 1), MakeArgument("group", 16)}});
  struct Mode {
    DataType dt;
    bool tensor_cores;
    bool exhaustive;
  };
  const Mode modes[] = {{DataType::FLOAT, true, false},   {DataType::FLOAT, true, true},
                        {DataType::FLOAT16, false, false}, {DataType::FLOAT16, false, true},
                        {DataType::FLOAT16, true, false},  {DataType::FLOAT16, true, true},
                        {DataType::BFLOAT16, false, false}, {DataType::BFLOAT16, true, false},
                        {DataType::BFLOAT16, true, true}};
  DeviceCheckOptions opts;
  opts.engine = "CUDNN";
  opts.atol16 = 2e-2f;
  for (const Mode& m : modes) {
    for (const ConvCase& c : cases) {
      for (const char* order : kOrders) {
        const bool nchw = std::string(order) == "NCHW";
        std::map<std::string, Tensor> in{{"X", RandomTensor(XDims(c, nchw), 1)},
                                         {"w", RandomTensor(FilterDims(c, nchw, GroupOf(c)), 2)}};
        in["dY"] = RandomTensor(OutputDims(c, order, in), 4);
        const std::vector<Argument> extra{
            MakeArgument("enable_tensor_core", m.tensor_cores ? 1 : 0),
            MakeArgument("exhaustive_search", m.exhaustive ? 1 : 0)};
        std::vector<Argument> no_bias = extra;
        no_bias.push_back(MakeArgument("no_bias", 1));
        SCOPED_TRACE(MakeString(c.name, " ", order, " ", DataTypeName(m.dt), " tensor cores ",
                                m.tensor_cores, " exhaustive ", m.exhaustive));
        AlgoLog log;
        const auto data = AsDtype(in, m.dt);
        DeviceChecker checker(opts);
        checker.Check(ConvDef("Conv", c, order, {"X", "w"}, {"Y"}, extra), data);
        checker.Check(
            ConvDef("ConvGradient", c, order, {"X", "w", "dY"}, {"dw", "dX"}, no_bias), data);
        const std::vector<std::string> lines = log.lines();
        ASSERT_EQ(lines.size(), 3u) << "one line per direction (fwd, bwd filter, bwd data)";
        for (const std::string& line : lines) {
          const std::string math = MathOf(line);
          if (m.dt == DataType::FLOAT) {
            EXPECT_EQ(math, "CUDNN_FMA_MATH") << line;
          } else if (!m.tensor_cores) {
            EXPECT_TRUE(math == "CUDNN_DEFAULT_MATH" || math == "CUDNN_FMA_MATH") << line;
          } else {
            EXPECT_NE(math, "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION") << line;
            EXPECT_FALSE(math.empty()) << line;
          }
          EXPECT_NE(line.find(m.exhaustive ? "(exhaustive)" : "(heuristic)"), std::string::npos)
              << line;
        }
      }
    }
  }
}

// force_algo runs the forced algorithm with the math type cuDNN reports for it.
TEST(ConvCudnnTest, ForcedAlgorithmRuns) {
  REQUIRE_GPU();
  const ConvCase c = Cases()[0];
  std::map<std::string, Tensor> in{{"X", RandomTensor(XDims(c, true), 1)},
                                   {"w", RandomTensor(FilterDims(c, true, 1), 2)}};
  AlgoLog log;
  // IMPLICIT_GEMM (0): supported for every float NCHW convolution.
  DeviceChecker().Check(
      ConvDef("Conv", c, "NCHW", {"X", "w"}, {"Y"}, {MakeArgument("force_algo_fwd", 0)}), in);
  const std::vector<std::string> lines = log.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("fwd IMPLICIT_GEMM math CUDNN_FMA_MATH"), std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("(forced)"), std::string::npos) << lines[0];
}

// The algorithm is chosen per input shape: one op instance run on two shapes.
TEST(ConvCudnnTest, NewShapeNewAlgorithm) {
  REQUIRE_GPU();
  Workspace ws;
  const Device gpu{DeviceType::CUDA, 0};
  auto def = MakeOperatorDef("Conv", "", {"X", "w"}, {"Y"},
                             {MakeArgument("kernel", 3), MakeArgument("pad", 1)});
  def.mutable_device_option()->set_device_type(1);
  ws.CreateTensor("w", gpu)->CopyFrom(RandomTensor({4, 3, 3, 3}, 12));
  ws.CreateTensor("X", gpu)->CopyFrom(RandomTensor({1, 3, 5, 5}, 13));
  auto op = CreateOperator(def, &ws);
  for (int64_t hw : {5, 9, 5}) {
    const Tensor x = RandomTensor({2, 3, hw, hw + 1}, 14 + static_cast<uint32_t>(hw));
    ws.CreateTensor("X", gpu)->CopyFrom(x);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    op->Run(0);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    Tensor got;
    got.CopyFrom(ws.GetTensor("Y"));
    Workspace cpu;
    Tensor w;
    w.CopyFrom(ws.GetTensor("w"));
    auto cpu_def = def;
    cpu_def.mutable_device_option()->set_device_type(0);
    RunOp(cpu_def, {{"X", x}, {"w", w}}, &cpu);
    EXPECT_EQ(got.dims(), cpu.GetTensor("Y").dims());
    ExpectNear(ToFloatVector(got), ToFloatVector(cpu.GetTensor("Y")), 1e-4f, 1e-4f);
  }
}

// X without channels: Y is the bias alone, so dbias is the sum of dY (not zero) while dfilter and
// dX are empty; cuDNN cannot describe the empty X, so the op sums dY by itself.
TEST(ConvCudnnTest, NoInputChannels) {
  REQUIRE_GPU();
  const ConvCase c{"C = 0", 2, 0, 5, 6, 4, 3, 3, {MakeArgument("pad", 1)}};
  for (const char* order : kOrders) {
    const bool nchw = std::string(order) == "NCHW";
    std::map<std::string, Tensor> in{{"X", RandomTensor(XDims(c, nchw), 1)},
                                     {"w", RandomTensor(FilterDims(c, nchw, 1), 2)},
                                     {"b", RandomTensor({c.M}, 3)}};
    in["dY"] = RandomTensor(OutputDims(c, order, in), 4);
    for (DataType dt : kDtypes) {
      SCOPED_TRACE(MakeString(order, " ", DataTypeName(dt)));
      const auto data = AsDtype(in, dt);
      DeviceChecker().Check(ConvDef("Conv", c, order, {"X", "w", "b"}, {"Y"}), data);
      DeviceChecker().Check(
          ConvDef("ConvGradient", c, order, {"X", "w", "dY"}, {"dw", "db", "dX"}), data);
    }
  }
}

void ExpectConvError(const OperatorDef& def_in, const std::map<std::string, Tensor>& in,
                     const std::string& needle) {
  Workspace ws;
  for (const auto& kv : in)
    ws.CreateTensor(kv.first, Device{DeviceType::CUDA, 0})->CopyFrom(kv.second);
  OperatorDef def = def_in;
  def.mutable_device_option()->set_device_type(1);
  try {
    CreateOperator(def, &ws)->Run(0);
    FAIL() << "accepted: " << def.ShortDebugString();
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ConvCudnnTest, Errors) {
  REQUIRE_GPU();
  std::map<std::string, Tensor> in{{"X", RandomTensor({1, 3, 6, 6}, 1)},
                                   {"w", RandomTensor({4, 3, 3, 3}, 2)},
                                   {"w2", RandomTensor({4, 3, 2, 2}, 2)},
                                   {"Xh", ToHalf(RandomTensor({1, 3, 6, 6}, 1))}};
  const Argument k3 = MakeArgument("kernel", 3);
  // Asymmetric explicit pads: every engine declines.
  ExpectConvError(MakeOperatorDef("Conv", "", {"X", "w"}, {"Y"},
                                  {k3, MakeArgument("pads", std::vector<int64_t>{0, 0, 1, 1})}),
                  in, "symmetric pads");
  // SAME with an even kernel pads asymmetrically: found when the shape is known.
  ExpectConvError(MakeOperatorDef("Conv", "", {"X", "w2"}, {"Y"},
                                  {MakeArgument("kernel", 2), MakeArgument("legacy_pad", 2)}),
                  in, "symmetric pads");
  ExpectConvError(MakeOperatorDef("Conv", "", {"Xh", "w"}, {"Y"}, {k3}), in, "of one dtype");
  ExpectConvError(MakeOperatorDef("Conv", "", {"X", "w2"}, {"Y"}, {k3}), in,
                  "does not match the kernel");
  ExpectConvError(
      MakeOperatorDef("Conv", "", {"X", "w"}, {"Y"},
                      {k3, MakeArgument("deterministic", 1), MakeArgument("exhaustive_search", 1)}),
      in, "cannot be combined");
  ExpectConvError(
      MakeOperatorDef("Conv", "", {"X", "w"}, {"Y"}, {k3, MakeArgument("force_algo_fwd", 42)}), in,
      "force_algo_fwd");
  ExpectConvError(
      MakeOperatorDef("Conv", "", {"X", "w"}, {"Y"}, {k3, MakeArgument("ws_nbytes_limit", -1)}), in,
      "ws_nbytes_limit");
  ExpectConvError(MakeOperatorDef("ConvGradient", "", {"X", "w", "X"}, {"dw", "db", "dX"}, {k3}),
                  in, "dY has dims");
}

// 1-D (run by cuDNN as 2-D with a unit leading dim) and 3-D NCHW convolutions, float and float16,
// forward with and without bias and every gradient form, through both CUDA registrations.
TEST(ConvCudnnTest, OneAndThreeDMatchCpu) {
  REQUIRE_GPU();
  struct NdCase {
    const char* type;
    ConvNdShape s;
  };
  const std::vector<NdCase> cases{
      {"Conv1D", {2, 3, 4, {11}, {3}, {2}, {}, {1, 1}}},
      {"Conv1D", {2, 4, 6, {9}, {3}, {}, {}, {1, 1}, 2}},
      {"Conv", {2, 3, 2, {13}, {3}, {}, {2}, {2, 2}}},
      {"Conv1D", {2, 8, 16, {7}, {1}}},
      {"Conv3D", {2, 3, 2, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {}, {1, 1, 0, 1, 1, 0}}},
      {"Conv3D", {2, 4, 4, {5, 4, 3}, {3, 1, 2}, {2, 1, 1}, {}, {1, 0, 1, 1, 0, 1}, 2}},
      {"Conv", {1, 3, 2, {6, 5, 7}, {2, 2, 2}, {}, {2, 1, 3}, {1, 0, 1, 1, 0, 1}}},
  };
  DeviceCheckOptions opts;
  opts.atol16 = 2e-2f;
  for (const char* engine : {"CUDNN", ""}) {
    opts.engine = engine;
    uint32_t seed = 30;
    for (const NdCase& c : cases) {
      const std::map<std::string, Tensor> in{{"X", RandomTensor(c.s.XDims(), seed)},
                                             {"w", RandomTensor(c.s.WDims(), seed + 1)},
                                             {"b", RandomTensor({c.s.M}, seed + 2)},
                                             {"dY", RandomTensor(c.s.YDims(), seed + 3)}};
      seed += 4;
      const std::vector<Argument> args = c.s.Args();
      std::vector<Argument> no_bias = args;
      no_bias.push_back(MakeArgument("no_bias", 1));
      const std::string type = c.type, grad = type + "Gradient";
      for (DataType dt : kDtypes) {
        SCOPED_TRACE(MakeString(type, " X ", DimsString(c.s.XDims()), " ", DataTypeName(dt),
                                " engine '", engine, "'"));
        const auto data = AsDtype(in, dt);
        DeviceChecker checker(opts);
        checker.Check(MakeOperatorDef(type, "", {"X", "w", "b"}, {"Y"}, args), data);
        checker.Check(MakeOperatorDef(type, "", {"X", "w"}, {"Y"}, args), data);
        checker.Check(MakeOperatorDef(grad, "", {"X", "w", "dY"}, {"dw", "db", "dX"}, args), data);
        checker.Check(MakeOperatorDef(grad, "", {"X", "w", "dY"}, {"dw", "dX"}, no_bias), data);
        checker.Check(MakeOperatorDef(grad, "", {"X", "w", "dY"}, {"dw", "db"}, args), data);
      }
    }
  }
}

TEST(ConvCudnnTest, NdErrors) {
  REQUIRE_GPU();
  const ConvNdShape s{1, 3, 4, {4, 5, 6}, {3, 3, 3}};
  std::map<std::string, Tensor> in{{"X", RandomTensor(s.XDims(), 1)},
                                   {"w", RandomTensor(s.WDims(), 2)}};
  const Argument k3 = MakeArgument("kernels", s.kernel);
  ExpectConvError(MakeOperatorDef("Conv3D", "", {"X", "w"}, {"Y"},
                                  {k3, MakeArgument("pads", std::vector<int64_t>{1, 1, 1, 1, 0, 1})}),
                  in, "symmetric pads");
  ExpectConvError(MakeOperatorDef("Conv3D", "", {"X", "w"}, {"Y"}, {k3, MakeArgument("order", "NHWC")}),
                  in, "NHWC order supports only 2-D convolution");
  ExpectConvError(
      MakeOperatorDef("Conv", "", {"X", "w"}, {"Y"},
                      {MakeArgument("kernels", std::vector<int64_t>{1, 1, 1, 1})}),
      in, "handles 1-D to 3-D kernels");
  ExpectConvError(MakeOperatorDef("Conv3D", "", {"X", "w"}, {"Y"},
                                  {MakeArgument("kernels", std::vector<int64_t>{3, 6, 3})}),
                  {{"X", in["X"]}, {"w", RandomTensor({4, 3, 3, 6, 3}, 3)}},
                  "smaller than the dilated kernel 6");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
