// AddGradient, SubGradient, MulGradient and the four-input DivGradient on CUDA against the CPU
// operators: NumPy broadcast shapes, the legacy broadcast arguments, float, float16, mixed and
// double, errors. (The three-input DivGradient: elementwise_op_gpu_test.cc.) Skips without a GPU.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"
#include "tests/util/broadcast_cases.h"

namespace halfcaf {
namespace testing {
namespace {

// The shared NumPy pairs, long sums over rows, and the legacy broadcast.
struct Case {
  ShapePair shapes;
  std::vector<Argument> args;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const auto& p : NumpyBroadcastPairs()) cases.push_back({p, {}});
  cases.push_back({{{64, 1, 300}, {1, 5, 300}}, {}});
  cases.push_back({{{2, 3, 7, 9}, {3, 7}},
                   {MakeArgument("broadcast", 1), MakeArgument("axis", 1)}});
  return cases;
}

// The gradient op of `op` with its inputs: dC of the broadcast shape, A, B (and C for Div).
OperatorDef GradientDef(const std::string& op, const std::vector<Argument>& args) {
  std::vector<std::string> in{"dC", "A", "B"};
  if (op == "Div") in.push_back("C");
  return MakeOperatorDef(op + "Gradient", "", in, {"dA", "dB"}, args);
}

std::map<std::string, Tensor> Inputs(const std::string& op, const Case& c) {
  std::map<std::string, Tensor> in{{"A", RandomTensor(c.shapes.a, 1)},
                                   {"B", RandomTensorAwayFrom(c.shapes.b, 2, {0.f}, 0.25f)}};
  Workspace ws;
  RunOp(MakeOperatorDef(op, "", {"A", "B"}, {"C"}, c.args), in, &ws);
  in["C"].CopyFrom(ws.GetTensor("C"));
  in["dC"] = RandomTensor(ws.GetTensor("C").dims(), 3);
  return in;
}

TEST(ElementwiseGradientGpuTest, Registered) {
  for (const char* op : kBinaryOps) {
    EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, std::string(op) + "Gradient")) << op;
  }
}

TEST(ElementwiseGradientGpuTest, MatchesCpu) {
  REQUIRE_GPU();
  DeviceCheckOptions opts16;
  opts16.atol16 = 3e-2f;  // sums of many terms rounded once to float16
  for (const char* op : kBinaryOps) {
    for (const auto& c : Cases()) {
      SCOPED_TRACE(std::string(op) + " A " + DimsString(c.shapes.a) + " B " +
                   DimsString(c.shapes.b));
      const OperatorDef def = GradientDef(op, c.args);
      const std::map<std::string, Tensor> in = Inputs(op, c);
      DeviceChecker().Check(def, in);
      DeviceChecker(opts16).Check(def, AsDtype(in, DataType::FLOAT16));
      // float16 dC with float A, B, C: outputs in float16.
      std::map<std::string, Tensor> mixed = in;
      mixed["dC"] = ToHalf(in.at("dC"));
      DeviceChecker(opts16).Check(def, mixed);
    }
  }
}

TEST(ElementwiseGradientGpuTest, DoubleMatchesCpu) {
  REQUIRE_GPU();
  const Case c{{{1, 4, 1}, {3, 1, 5}}, {}};
  for (const char* op : kBinaryOps) {
    SCOPED_TRACE(op);
    std::map<std::string, Tensor> in;
    for (const auto& kv : Inputs(op, c)) in[kv.first] = CastTensor<double>(kv.second);
    const CpuCudaOutputs r = RunCpuAndCuda(GradientDef(op, {}), in);
    for (int k = 0; k < 2; ++k) {
      ASSERT_EQ(r.cuda[k].dtype(), DataType::DOUBLE);
      ASSERT_EQ(r.cuda[k].dims(), r.cpu[k].dims());
      for (int64_t i = 0; i < r.cpu[k].numel(); ++i) {
        EXPECT_NEAR(r.cuda[k].data<double>()[i], r.cpu[k].data<double>()[i], 1e-12) << k << i;
      }
    }
  }
}

TEST(ElementwiseGradientGpuTest, Errors) {
  REQUIRE_GPU();
  ExpectCudaError(GradientDef("Add", {}),
                  {{"dC", RandomTensor({3, 5}, 1)}, {"A", RandomTensor({3, 1}, 2)},
                   {"B", RandomTensor({4}, 3)}},
                  "broadcast to [3, 4]");
  ExpectCudaError(GradientDef("Div", {}),
                  {{"dC", RandomTensor({3, 4}, 1)}, {"A", RandomTensor({3, 1}, 2)},
                   {"B", RandomTensor({4}, 3)}, {"C", RandomTensor({4, 3}, 4)}},
                  "C has dims [4, 3]");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
