// DNNL operators run on threads other than the one that made their primitives, as under the dag
// executor (an op runs on whichever worker is free). Regression test for a crash: oneDNN's own
// scratchpad is a per-thread buffer in OpenMP builds (Debian's), sized by the primitives made on
// that thread, so a primitive run on a fresh thread wrote through a null scratchpad (SIGSEGV in
// memset, ConvGradient's gemm-based BF16 kernel on CPUs without AMX). halfcaf now passes every
// primitive its scratchpad (dnnl_util.h: DnnlAttr, DnnlPrimitive).
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <thread>

#include "tests/util/conv_case.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

bool HaveDnnl() { return OperatorRegistry::Find(DeviceType::CPU, "Conv", "DNNL") != nullptr; }

std::vector<Argument> ConvArgs() {
  return {MakeArgument("kernels", std::vector<int64_t>{3, 3}),
          MakeArgument("pads", std::vector<int64_t>{1, 1, 1, 1})};
}

std::map<std::string, Tensor> InType(std::map<std::string, Tensor> in, DataType t) {
  if (t == DataType::FLOAT) return in;
  for (auto& kv : in) kv.second = ToBFloat16(kv.second);
  return in;
}

// Creates `def` and runs it once on a new thread, then runs the same operator on two more new
// threads (one after the other, and then both at once on two copies); every run's outputs equal
// the first run's.
void ExpectRunsAnywhere(const OperatorDef& def, const std::map<std::string, Tensor>& in) {
  SCOPED_TRACE(def.type());
  Workspace ws;
  for (const auto& kv : in) SetInput(&ws, kv.first, kv.second);
  std::unique_ptr<OperatorBase> op;
  std::thread([&] {
    op = CreateOperator(def, &ws);
    op->Run(0);
  }).join();
  std::vector<Tensor> first;
  for (const auto& name : def.output()) {
    first.emplace_back();
    first.back().CopyFrom(ws.GetTensor(name));
  }
  auto expect_same = [&](Workspace& w, const char* when) {
    for (int i = 0; i < def.output_size(); ++i) {
      ExpectNear(ToFloatVector(w.GetTensor(def.output(i))), ToFloatVector(first[i]), 0.f, 0.f,
                 def.output(i) + " " + when);
    }
  };
  for (int k = 0; k < 2; ++k) {
    std::thread([&] { op->Run(0); }).join();
    expect_same(ws, "on another thread");
  }
  // Two workspaces, ops made on this thread, run at once on two fresh threads.
  Workspace a, b;
  for (Workspace* w : {&a, &b}) {
    for (const auto& kv : in) SetInput(w, kv.first, kv.second);
  }
  auto op_a = CreateOperator(def, &a);
  auto op_b = CreateOperator(def, &b);
  op_a->Run(0);
  op_b->Run(0);
  std::thread ta([&] { op_a->Run(0); });
  std::thread tb([&] { op_b->Run(0); });
  ta.join();
  tb.join();
  expect_same(a, "concurrently (a)");
  expect_same(b, "concurrently (b)");
}

TEST(DnnlThreadsTest, OperatorsRunOnThreadsThatDidNotMakeThem) {
  if (!HaveDnnl()) GTEST_SKIP() << "built without oneDNN";
  for (DataType t : {DataType::FLOAT, DataType::BFLOAT16}) {
    SCOPED_TRACE(DataTypeName(t));
    // The tiny convnet's first layer (the shape that crashed), and a ResNet-like 3x3.
    for (const auto& shape : std::vector<std::array<int64_t, 4>>{{4, 1, 8, 8}, {2, 16, 14, 32}}) {
      const int64_t N = shape[0], C = shape[1], H = shape[2], M = shape[3];
      const auto in = InType(ConvOpInputs({N, C, H, H}, {M, C, 3, 3}, M, true, 7, {N, M, H, H}), t);
      ExpectRunsAnywhere(ConvOpDef("Conv", true, ConvArgs()), in);
      ExpectRunsAnywhere(ConvGradientOpDef("Conv", true, true, ConvArgs()), in);
    }
    const std::vector<Argument> pool{MakeArgument("kernel", 2), MakeArgument("stride", 2)};
    const auto x = RandomTensor({4, 8, 8, 8}, 11);
    const auto y = RandomTensor({4, 8, 4, 4}, 12);
    ExpectRunsAnywhere(MakeOperatorDef("MaxPool", "", {"X"}, {"Y"}, pool), InType({{"X", x}}, t));
    ExpectRunsAnywhere(MakeOperatorDef("MaxPoolGradient", "", {"X", "Y", "dY"}, {"dX"}, pool),
                       InType({{"X", x}, {"Y", RandomTensor({4, 8, 4, 4}, 13)}, {"dY", y}}, t));
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
