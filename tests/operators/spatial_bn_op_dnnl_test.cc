// SpatialBN / SpatialBNGradient in training mode on NHWC with engine DNNL named (oneDNN's batch
// normalization) against the default CPU implementation: every output (Y, running statistics,
// saved mean and inverse std; dX, dscale, dbias) within rounding in float, within bfloat16
// tolerance on the BF16 kernels (with proof they ran), and the cases left to the default op.
// Every test skips when the build has no oneDNN.
#include <gtest/gtest.h>

#include <optional>
#include <typeinfo>

#include "tests/util/bf16_switch.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

bool HaveDnnl() {
  return OperatorRegistry::Find(DeviceType::CPU, "SpatialBN", "DNNL") != nullptr;
}

#define SKIP_WITHOUT_DNNL() \
  if (!HaveDnnl()) GTEST_SKIP() << "built without oneDNN"

std::vector<Argument> Args(const std::string& order = "NHWC") {
  return {MakeArgument("order", order), MakeArgument("epsilon", 1e-4f),
          MakeArgument("momentum", 0.8f)};
}

// The ops name the engine: CreateOperator's preference for DNNL alone does not take it.
OperatorDef Named(OperatorDef def) {
  def.set_engine("DNNL");
  return def;
}

OperatorDef Forward(const std::string& order = "NHWC") {
  return Named(MakeOperatorDef("SpatialBN", "", {"X", "scale", "bias", "rm", "rv"},
                               {"Y", "rm", "rv", "saved_mean", "saved_inv_std"}, Args(order)));
}

OperatorDef Gradient() {
  return Named(MakeOperatorDef("SpatialBNGradient", "",
                               {"X", "scale", "dY", "saved_mean", "saved_inv_std"},
                               {"dX", "dscale", "dbias"}, Args()));
}

// NHWC X with a per-channel offset and spread, the parameters, running statistics (or none), dY,
// and the saved statistics of the default forward op for the gradient.
std::map<std::string, Tensor> Inputs(const std::vector<int64_t>& dims, uint32_t seed,
                                     bool running) {
  const int64_t C = dims.back();
  Tensor X = RandomTensor(dims, seed, -2.f, 3.f);
  std::map<std::string, Tensor> in{{"X", X},
                                   {"scale", RandomTensor({C}, seed + 1, 0.5f, 1.5f)},
                                   {"bias", RandomTensor({C}, seed + 2)},
                                   {"dY", RandomTensor(dims, seed + 3)}};
  if (running) {
    in["rm"] = RandomTensor({C}, seed + 4);
    in["rv"] = RandomTensor({C}, seed + 5, 0.5f, 2.f);
  } else {
    in["rm"] = Tensor();
    in["rv"] = Tensor();
  }
  Workspace ws;
  RunWithEngine(Forward(), in, "", &ws);
  in["saved_mean"].CopyFrom(ws.GetTensor("saved_mean"));
  in["saved_inv_std"].CopyFrom(ws.GetTensor("saved_inv_std"));
  return in;
}

const std::vector<std::vector<int64_t>> kShapes{{2, 5, 7, 19}, {3, 4, 4, 32}, {1, 9, 11, 64}};

TEST(SpatialBNDnnlTest, TrainingMatchesDefault) {
  SKIP_WITHOUT_DNNL();
  uint32_t seed = 10;
  for (const auto& dims : kShapes) {
    for (bool running : {true, false}) {
      SCOPED_TRACE(DimsString(dims) + (running ? " with running stats" : " without"));
      const auto in = Inputs(dims, seed, running);
      seed += 10;
      ExpectEngineMatchesDefault(Forward(), in, "DNNL", 2e-5f);
      ExpectEngineMatchesDefault(Gradient(), in, "DNNL", 2e-4f);
    }
  }
}

// bfloat16 X and dY (FP32 parameters and statistics): oneDNN's BF16 kernels, one run per op,
// agree with the emulated path.
TEST(SpatialBNDnnlTest, BFloat16FastPathMatchesEmulatedPath) {
  SKIP_WITHOUT_DNNL();
  uint32_t seed = 60;
  for (const auto& dims : kShapes) {
    SCOPED_TRACE(DimsString(dims));
    auto in = Inputs(dims, seed, true);
    seed += 10;
    in["X"] = ToBFloat16(in["X"]);
    in["dY"] = ToBFloat16(in["dY"]);
    for (const OperatorDef& def : {Forward(), Gradient()}) {
      const bool fast = DnnlBFloat16Enabled();
      const int64_t before = DnnlBFloat16Runs();
      const std::vector<Tensor> on = RunOpOutputs(def, in);
      EXPECT_EQ(DnnlBFloat16Runs() - before, fast ? 1 : 0) << def.type();
      std::vector<Tensor> off;
      {
        ScopedBf16Off s;
        off = RunOpOutputs(def, in);
      }
      for (size_t i = 0; i < on.size(); ++i) {
        EXPECT_EQ(on[i].dtype(), off[i].dtype()) << def.output(i);
        ExpectNear(ToFloatVector(on[i]), ToFloatVector(off[i]), 2e-2f, 8e-3f,
                   def.type() + " " + def.output(i) + " fast vs emulated");
      }
    }
  }
}

TEST(SpatialBNDnnlTest, DefaultOpUnlessNamedForNchwTestModeAndInPlace) {
  SKIP_WITHOUT_DNNL();
  const auto in = Inputs({2, 3, 4, 8}, 5, true);
  Workspace ws;
  for (const auto& kv : in) SetInput(&ws, kv.first, kv.second);
  OperatorDef test_mode = Named(
      MakeOperatorDef("SpatialBN", "", {"X", "scale", "bias", "rm", "rv"}, {"Y"},
                      {MakeArgument("order", std::string("NHWC")), MakeArgument("is_test", 1)}));
  OperatorDef unnamed = Forward();
  unnamed.clear_engine();
  for (const OperatorDef& def : {Forward("NCHW"), test_mode, unnamed}) {
    auto chosen = CreateOperator(def, &ws);
    auto plain = (*OperatorRegistry::Find(DeviceType::CPU, "SpatialBN", ""))(def, &ws);
    EXPECT_EQ(typeid(*chosen), typeid(*plain)) << def.type() << " " << ArgumentHelper(def).GetSingleArgument<std::string>("order", "");
  }
  auto chosen = CreateOperator(Forward(), &ws);
  auto dnnl = (*OperatorRegistry::Find(DeviceType::CPU, "SpatialBN", "DNNL"))(Forward(), &ws);
  EXPECT_EQ(typeid(*chosen), typeid(*dnnl));
  // In place (Y = X): the default op runs it, with its results.
  OperatorDef in_place = Forward();
  in_place.set_output(0, "X");
  ExpectEngineMatchesDefault(in_place, in, "DNNL", 0.f);
}

TEST(SpatialBNDnnlTest, BadInputGivesTheDefaultMessages) {
  SKIP_WITHOUT_DNNL();
  auto in = Inputs({2, 3, 4, 8}, 7, true);
  in["scale"] = RandomTensor({7}, 1);
  for (const OperatorDef& def : {Forward(), Gradient()}) {
    std::string messages[2];
    for (int k = 0; k < 2; ++k) {
      Workspace ws;
      try {
        RunWithEngine(def, in, k == 0 ? "DNNL" : "", &ws);
      } catch (const EnforceNotMet& e) {
        messages[k] = e.what();
      }
    }
    EXPECT_NE(messages[0].find("scale must have dims [8]"), std::string::npos) << messages[0];
    EXPECT_EQ(messages[0], messages[1]);
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
