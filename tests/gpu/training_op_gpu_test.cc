// Training-loop operators on CUDA against the CPU operators: LearningRate (CPU iteration counter,
// device lr), MomentumSGD(Update), CheckFinite, UpdateLossScale (device-resident state) and the
// fused MixedPrecisionMomentumSGDUpdate (including a skipped step; float16 and bfloat16). Device
// tests skip without a GPU.
#include <gtest/gtest.h>

#include <limits>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const DataType kDtypes[] = {DataType::FLOAT, DataType::FLOAT16};
const Device kGpu{DeviceType::CUDA, 0};

TEST(TrainingGpuTest, Registered) {
  for (const char* type : {"LearningRate", "MomentumSGD", "MomentumSGDUpdate", "CheckFinite",
                           "UpdateLossScale", "MixedPrecisionMomentumSGDUpdate"}) {
    EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, type)) << type;
  }
  EXPECT_FALSE(OperatorRegistry::HasType(DeviceType::CUDA, "Iter")) << "Iter stays on the CPU";
}

TEST(TrainingGpuTest, LearningRateReadsTheCpuCounter) {
  REQUIRE_GPU();
  const std::vector<std::vector<Argument>> policies = {
      {MakeArgument("policy", "step"), MakeArgument("stepsize", 100), MakeArgument("gamma", 0.5f)},
      {MakeArgument("policy", "inv"), MakeArgument("gamma", 1e-3f), MakeArgument("power", 0.75f)},
      {MakeArgument("policy", "multistep"),
       MakeArgument("stepsizes", std::vector<int64_t>{10, 500, 2000}),
       MakeArgument("gamma", 0.1f), MakeArgument("warmup_iters", 20)},
  };
  for (auto args : policies) {
    args.push_back(MakeArgument("base_lr", 0.1f));
    for (int64_t iter : {0, 7, 499, 1234, 5000}) {
      SCOPED_TRACE(args[0].s() + " iter " + std::to_string(iter));
      const CpuCudaOutputs r =
          RunCpuAndCuda(MakeOperatorDef("LearningRate", "", {"iter"}, {"lr"}, args),
                        {{"iter", TypedTensor<int64_t>({1}, {iter})}}, {"iter"});
      ExpectIdentical(r.cuda[0], r.cpu[0], "lr");
      EXPECT_EQ(r.cuda_devices[0], kGpu) << "lr is a device tensor";
    }
  }
  // The counter must be the host int64 one.
  Workspace ws;
  ws.CreateTensor("iter", kGpu)->CopyFrom(TypedTensor<int64_t>({1}, {3}));
  EXPECT_THROW(CreateOperator(OnCuda(MakeOperatorDef("LearningRate", "", {"iter"}, {"lr"},
                                                     {MakeArgument("base_lr", 0.1f),
                                                      MakeArgument("policy", "fixed")})),
                              &ws)
                   ->Run(0),
               EnforceNotMet);
}

TEST(TrainingGpuTest, MomentumSGDMatchesCpu) {
  REQUIRE_GPU();
  const std::map<std::string, Tensor> in{{"g", RandomTensor({7, 33}, 1)},
                                         {"m", RandomTensor({7, 33}, 2)},
                                         {"lr", FloatTensor({1}, {0.05f})},
                                         {"p", RandomTensor({7, 33}, 3)}};
  for (bool nesterov : {false, true}) {
    SCOPED_TRACE(nesterov ? "nesterov" : "plain");
    const std::vector<Argument> args{MakeArgument("momentum", 0.9f),
                                     MakeArgument("nesterov", nesterov ? 1 : 0)};
    DeviceChecker().Check(MakeOperatorDef("MomentumSGD", "", {"g", "m", "lr"}, {"go", "mo"}, args),
                          in);
    DeviceChecker().Check(MakeOperatorDef("MomentumSGD", "", {"g", "m", "lr"}, {"g", "m"}, args),
                          in);
    DeviceChecker().Check(MakeOperatorDef("MomentumSGDUpdate", "", {"g", "m", "lr", "p"},
                                          {"g", "m", "p"}, args),
                          in);
  }
  ExpectCudaError(MakeOperatorDef("MomentumSGD", "", {"g", "m", "lr"}, {"go", "mo"}),
                  {{"g", ToHalf(in.at("g"))}, {"m", in.at("m")}, {"lr", in.at("lr")}},
                  "must be a float tensor");
}

TEST(TrainingGpuTest, CheckFiniteMatchesCpu) {
  REQUIRE_GPU();
  const auto def = MakeOperatorDef("CheckFinite", "", {"a", "b", "c"}, {"found_inf"});
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (float bad : {0.f, inf, -inf, nan}) {
    for (int where : {0, 1, 2}) {
      SCOPED_TRACE("bad " + std::to_string(bad) + " in input " + std::to_string(where));
      std::map<std::string, Tensor> in{{"a", RandomTensor({3, 700}, 4)},
                                       {"b", RandomTensor({5}, 5)},
                                       {"c", RandomTensor({17, 3}, 6)}};
      Tensor& t = in[std::string(1, static_cast<char>('a' + where))];
      if (bad != 0.f) t.mutable_data<float>()[t.numel() - 1] = bad;
      for (DataType dt : kDtypes) DeviceChecker().Check(def, AsDtype(in, dt));
      // Mixed float and float16 gradients.
      in["b"] = ToHalf(in["b"]);
      DeviceChecker().Check(def, in);
    }
  }
  // bfloat16 gradients, finite and not.
  DeviceChecker().Check(MakeOperatorDef("CheckFinite", "", {"a"}, {"found_inf"}),
                        {{"a", ToBFloat16(FloatTensor({3}, {1.f, -2.f, 3e38f}))}});
  DeviceChecker().Check(MakeOperatorDef("CheckFinite", "", {"a"}, {"found_inf"}),
                        {{"a", ToBFloat16(FloatTensor({2}, {1.f, inf}))}});
  DeviceChecker().Check(MakeOperatorDef("CheckFinite", "", {"a"}, {"found_inf"}),
                        {{"a", ToBFloat16(FloatTensor({2}, {nan, 1.f}))}});
  // Float16 overflow of a finite float value counts as inf.
  DeviceChecker().Check(MakeOperatorDef("CheckFinite", "", {"a"}, {"found_inf"}),
                        {{"a", ToHalf(FloatTensor({2}, {1.f, 1e6f}))}});
}

TEST(TrainingGpuTest, UpdateLossScaleFollowsTheCpuRule) {
  REQUIRE_GPU();
  const auto def = MakeOperatorDef(
      "UpdateLossScale", "", {"scale", "found_inf", "good", "skipped"},
      {"scale", "good", "skipped"},
      {MakeArgument("growth_interval", int64_t{3}), MakeArgument("max_scale", 1024.f),
       MakeArgument("min_scale", 0.25f)});
  Workspace ws_cpu, ws_gpu;
  ws_cpu.CreateTensor("scale")->CopyFrom(FloatTensor({}, {256.f}));
  ws_gpu.CreateTensor("scale", kGpu)->CopyFrom(FloatTensor({}, {256.f}));
  // The GPU counters start on the host (they move to the device on the first run, keeping their
  // values); the CPU ones as int64 CPU tensors.
  for (const char* c : {"good", "skipped"}) {
    ws_cpu.CreateTensor(c)->CopyFrom(TypedTensor<int64_t>({1}, {1}));
    ws_gpu.CreateTensor(c)->CopyFrom(TypedTensor<int64_t>({1}, {1}));
  }
  ws_cpu.CreateTensor("found_inf");
  ws_gpu.CreateTensor("found_inf", kGpu);
  auto cpu_op = CreateOperator(OnCpu(def), &ws_cpu);
  auto gpu_op = CreateOperator(OnCuda(def), &ws_gpu);
  const float flags[] = {0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0};
  for (size_t step = 0; step < sizeof(flags) / sizeof(flags[0]); ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const Tensor flag = FloatTensor({}, {flags[step]});
    ws_cpu.GetBlob("found_inf")->GetMutableTensor(Device())->CopyFrom(flag);
    ws_gpu.GetBlob("found_inf")->GetMutableTensor(kGpu)->CopyFrom(flag);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    cpu_op->Run(0);
    gpu_op->Run(0);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (const char* name : {"scale", "good", "skipped"}) {
      const Tensor& g = ws_gpu.GetTensor(name);
      EXPECT_EQ(g.device(), kGpu) << name << " lives on the device";
      Tensor got;
      got.CopyFrom(g);
      ExpectIdentical(got, ws_cpu.GetTensor(name), name);
    }
  }
}

std::map<std::string, Tensor> MixedPrecisionInputs(DataType grad_type, float found_inf) {
  std::map<std::string, Tensor> in{{"g", RandomTensor({9, 37}, 7, -64.f, 64.f)},
                                   {"m", RandomTensor({9, 37}, 8)},
                                   {"lr", FloatTensor({1}, {0.1f})},
                                   {"p", RandomTensor({9, 37}, 9)},
                                   {"scale", FloatTensor({1}, {128.f})},
                                   {"found_inf", FloatTensor({}, {found_inf})}};
  if (grad_type != DataType::FLOAT) in["g"] = ToFloat16Type(in["g"], grad_type);
  return in;
}

TEST(TrainingGpuTest, MixedPrecisionMomentumSGDUpdateMatchesCpu) {
  REQUIRE_GPU();
  for (DataType gt : kDtypes) {
    for (bool nesterov : {false, true}) {
      SCOPED_TRACE(std::string(DataTypeName(gt)) + (nesterov ? " nesterov" : " plain"));
      const std::vector<Argument> args{MakeArgument("momentum", 0.9f),
                                       MakeArgument("weight_decay", 1e-3f),
                                       MakeArgument("nesterov", nesterov ? 1 : 0)};
      const auto in = MixedPrecisionInputs(gt, 0.f);
      DeviceChecker().Check(
          MakeOperatorDef("MixedPrecisionMomentumSGDUpdate", "",
                          {"g", "m", "lr", "p", "scale", "found_inf"}, {"m", "p", "copy"}, args),
          in);
      DeviceChecker().Check(MakeOperatorDef("MixedPrecisionMomentumSGDUpdate", "",
                                            {"g", "m", "lr", "p", "scale"}, {"m", "p"}, args),
                            in);
      DeviceChecker().Check(MakeOperatorDef("MixedPrecisionMomentumSGDUpdate", "",
                                            {"g", "m", "lr", "p"}, {"m", "p", "copy"}, args),
                            in);
    }
  }
  // The BF16 recipe: bfloat16 gradient in, bfloat16 copy out (copy_dtype).
  for (DataType gt : {DataType::BFLOAT16, DataType::FLOAT}) {
    SCOPED_TRACE(std::string(DataTypeName(gt)) + " gradient, bfloat16 copy");
    DeviceChecker().Check(
        MakeOperatorDef("MixedPrecisionMomentumSGDUpdate", "",
                        {"g", "m", "lr", "p", "scale", "found_inf"}, {"m", "p", "copy"},
                        {MakeArgument("momentum", 0.9f),
                         MakeArgument("copy_dtype", std::string("bfloat16"))}),
        MixedPrecisionInputs(gt, 0.f));
  }
}

TEST(TrainingGpuTest, MixedPrecisionUpdateSkipsOverflowedStepOnDevice) {
  REQUIRE_GPU();
  const auto in = MixedPrecisionInputs(DataType::FLOAT16, 1.f);
  const auto def =
      MakeOperatorDef("MixedPrecisionMomentumSGDUpdate", "",
                      {"g", "m", "lr", "p", "scale", "found_inf"}, {"m", "p", "copy"},
                      {MakeArgument("momentum", 0.9f)});
  // Moment and master are untouched on both devices (the CPU never writes `copy` then).
  DeviceCheckOptions opts;
  opts.outputs = {0, 1};
  opts.atol = opts.rtol = 0.f;
  DeviceChecker(opts).Check(def, in);
  // The FP16 copy keeps its previous contents.
  Workspace ws;
  for (const auto& kv : in) ws.CreateTensor(kv.first, kGpu)->CopyFrom(kv.second);
  const Tensor old_copy = ToHalf(RandomTensor({9, 37}, 10));
  ws.CreateTensor("copy", kGpu)->CopyFrom(old_copy);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  CreateOperator(OnCuda(def), &ws)->Run(0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  Tensor got;
  got.CopyFrom(ws.GetTensor("copy"));
  ExpectIdentical(got, old_copy, "copy");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
