// ConvFusion (conv_fusion_op.h): every fusion type, NCHW and NHWC, with and without bias, in place
// on S and not, on the default CPU implementation and on oneDNN, against Conv + Add + Relu run as
// separate ops; FP16 against FP32; NaN propagation; errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

struct FusionCase {
  int type;
  bool nhwc, bias, in_place;
};

std::vector<Argument> ConvArgs(bool nhwc, int type) {
  return {MakeArgument("kernels", std::vector<int64_t>{3, 3}),
          MakeArgument("strides", std::vector<int64_t>{2, 1}),
          MakeArgument("pads", std::vector<int64_t>{1, 0, 1, 1}),
          MakeArgument("order", std::string(nhwc ? "NHWC" : "NCHW")),
          MakeArgument("fusion_type", type)};
}

// X (2, 5, 9, 8) -> Y (2, 6, 5, 7) in NCHW; the same data laid out NHWC for nhwc cases.
std::map<std::string, Tensor> Inputs(bool nhwc, uint32_t seed) {
  std::map<std::string, Tensor> in;
  in["X"] = nhwc ? RandomTensor({2, 9, 8, 5}, seed) : RandomTensor({2, 5, 9, 8}, seed);
  in["W"] = nhwc ? RandomTensor({6, 3, 3, 5}, seed + 1) : RandomTensor({6, 5, 3, 3}, seed + 1);
  in["b"] = RandomTensor({6}, seed + 2);
  in["S"] = nhwc ? RandomTensor({2, 5, 7, 6}, seed + 3) : RandomTensor({2, 6, 5, 7}, seed + 3);
  return in;
}

// What ConvFusion must equal: Conv, then Add S, then Relu, as separate ops.
std::vector<float> Reference(const FusionCase& c, const std::map<std::string, Tensor>& in) {
  Workspace ws;
  for (const auto& kv : in) SetInput(&ws, kv.first, kv.second);
  std::vector<std::string> conv_in{"X", "W"};
  if (c.bias) conv_in.push_back("b");
  std::vector<Argument> args = ConvArgs(c.nhwc, 0);
  args.pop_back();
  CreateOperator(MakeOperatorDef("Conv", "", conv_in, {"Y"}, args), &ws)->Run(0);
  if (c.type >= 2) CreateOperator(MakeOperatorDef("Add", "", {"Y", "S"}, {"Y"}), &ws)->Run(0);
  if (c.type == 1 || c.type == 3) {
    CreateOperator(MakeOperatorDef("Relu", "", {"Y"}, {"Y"}), &ws)->Run(0);
  }
  return ToFloatVector(ws.GetTensor("Y"));
}

OperatorDef FusionDef(const FusionCase& c) {
  std::vector<std::string> inputs{"X", "W"};
  if (c.bias) inputs.push_back("b");
  if (c.type >= 2) inputs.push_back("S");
  const std::string out = c.type >= 2 && c.in_place ? "S" : "Y";
  return MakeOperatorDef("ConvFusion", "", inputs, {out}, ConvArgs(c.nhwc, c.type));
}

std::vector<FusionCase> Cases() {
  std::vector<FusionCase> cases;
  for (int type = 0; type <= 3; ++type) {
    for (bool nhwc : {false, true}) {
      for (bool bias : {false, true}) {
        cases.push_back({type, nhwc, bias, false});
        if (type >= 2) cases.push_back({type, nhwc, bias, true});
      }
    }
  }
  return cases;
}

TEST(ConvFusionOpTest, EveryTypeEqualsSeparateOpsOnEveryEngine) {
  for (const std::string engine : {"", "DNNL"}) {
    const OperatorCreator* creator = OperatorRegistry::Find(DeviceType::CPU, "ConvFusion", engine);
    if (creator == nullptr) continue;  // a build without oneDNN
    for (const FusionCase& c : Cases()) {
      SCOPED_TRACE("engine '" + engine + "' type " + std::to_string(c.type) +
                   (c.nhwc ? " NHWC" : " NCHW") + (c.bias ? " bias" : "") +
                   (c.in_place ? " in place" : ""));
      const auto in = Inputs(c.nhwc, 7);
      const std::vector<float> want = Reference(c, in);
      const OperatorDef def = FusionDef(c);
      Workspace ws;
      for (const auto& kv : in) SetInput(&ws, kv.first, kv.second);
      auto op = (*creator)(def, &ws);
      for (int run = 0; run < 2; ++run) {  // the second run reuses the cached filter
        if (c.in_place) SetInput(&ws, "S", in.at("S"));
        op->Run(0);
        ExpectNear(ToFloatVector(ws.GetTensor(def.output(0))), want, 1e-5f, 1e-5f);
      }
      if (c.type == 1 || c.type == 3) {
        for (float v : ToFloatVector(ws.GetTensor(def.output(0)))) ASSERT_GE(v, 0.f);
      }
    }
  }
}

TEST(ConvFusionOpTest, NewFilterStorageIsReorderedAgain) {
  // The engine caches its reordered filter per filter storage: a new tensor in the blob is used.
  const FusionCase c{1, true, true, false};
  auto in = Inputs(true, 3);
  Workspace ws;
  for (const auto& kv : in) SetInput(&ws, kv.first, kv.second);
  auto op = CreateOperator(FusionDef(c), &ws);
  op->Run(0);
  // New storage in the same blob (the op holds the blob): the allocation may reuse the old
  // address, so only the storage id tells the op that its reordered filter is stale.
  in["W"] = RandomTensor({6, 3, 3, 5}, 99);
  Tensor* w = ws.GetBlob("W")->GetMutableTensor(Device());
  w->Reset();
  w->CopyFrom(in["W"]);
  op->Run(0);
  ExpectNear(ToFloatVector(ws.GetTensor("Y")), Reference(c, in), 1e-5f, 1e-5f);
}

TEST(ConvFusionOpTest, Fp16MatchesFp32) {
  for (int type : {1, 3}) {
    const FusionCase c{type, false, true, false};
    CheckFp16MatchesFp32(FusionDef(c), Inputs(false, 11), {"X", "W", "S"});
  }
}

TEST(ConvFusionOpTest, NaNThroughTheFusedRelu) {
  // The default implementation keeps NaN (Relu's rule). oneDNN's fused relu is max(x, 0) in
  // some kernels, which maps NaN to 0, as ONNX Runtime's fused Conv+Relu does: documented,
  // and the numbers around it must still be right.
  for (const std::string engine : {"", "DNNL"}) {
    const OperatorCreator* creator = OperatorRegistry::Find(DeviceType::CPU, "ConvFusion", engine);
    if (creator == nullptr) continue;
    const FusionCase c{3, true, true, false};
    auto in = Inputs(true, 5);
    in["S"].mutable_data<float>()[4] = std::numeric_limits<float>::quiet_NaN();
    Workspace ws;
    for (const auto& kv : in) SetInput(&ws, kv.first, kv.second);
    (*creator)(FusionDef(c), &ws)->Run(0);
    const std::vector<float> y = ToFloatVector(ws.GetTensor("Y"));
    if (engine.empty()) {
      EXPECT_TRUE(std::isnan(y[4]));
    } else {
      EXPECT_TRUE(std::isnan(y[4]) || y[4] == 0.f) << y[4];
    }
    std::vector<float> want = Reference(c, in);
    for (size_t i = 0; i < y.size(); ++i) {
      if (i != 4) ASSERT_NEAR(y[i], want[i], 1e-5f + 1e-5f * std::fabs(want[i])) << engine << " " << i;
    }
  }
}

TEST(ConvFusionOpTest, BadArgumentsAndShapesAreClearErrors) {
  const auto in = Inputs(false, 1);
  OperatorDef no_type = FusionDef({1, false, true, false});
  no_type.clear_arg();
  for (const auto& a : ConvArgs(false, 0)) {
    if (a.name() != "fusion_type") *no_type.add_arg() = a;
  }
  ExpectError(no_type, in, "fusion_type");
  OperatorDef bad = FusionDef({1, false, true, false});
  SetArgument(&bad, "fusion_type", 7);
  ExpectError(bad, in, "must be 0 (none), 1 (Relu), 2 (Sum) or 3");
  OperatorDef sum_without_s =
      MakeOperatorDef("ConvFusion", "", {"X", "W"}, {"Y"}, ConvArgs(false, 2));
  ExpectError(sum_without_s, in, "takes inputs (X, filter[, bias], S)");
  auto wrong_s = in;
  wrong_s["S"] = RandomTensor({2, 6, 5, 8}, 3);
  ExpectError(FusionDef({2, false, true, false}), wrong_s, "the sum input S has dims");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
