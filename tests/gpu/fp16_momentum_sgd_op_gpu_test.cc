// FP16MomentumSGDUpdate / FP32MomentumSGDUpdate on CUDA against the CPU operators (bit for bit:
// both compute without fused multiply-adds and round float16 math at the same points), and the
// Caffe2 optimizer's loop on a GPU: AtomicIter on the CPU counter, LearningRate on CUDA reading
// it from the host, the update on CUDA. Device tests skip without a GPU.
#include <gtest/gtest.h>

#include "core/net.h"
#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const Device kGpu{DeviceType::CUDA, 0};

TEST(FusedMomentumGpuTest, Registered) {
  for (const char* type : {"FP16MomentumSGDUpdate", "FP32MomentumSGDUpdate"}) {
    EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, type)) << type;
  }
  for (const char* type : {"AtomicIter", "CreateMutex"}) {
    EXPECT_FALSE(OperatorRegistry::HasType(DeviceType::CUDA, type)) << type << " stays on the CPU";
  }
}

std::map<std::string, Tensor> Inputs(std::vector<int64_t> dims, DataType dtype, uint32_t seed) {
  std::map<std::string, Tensor> in{{"g", RandomTensor(dims, seed)},
                                   {"m", RandomTensor(dims, seed + 1, -0.5f, 0.5f)},
                                   {"p", RandomTensor(dims, seed + 2, -2.f, 2.f)},
                                   {"lr", FloatTensor({}, {0.1f})}};
  if (dtype == DataType::FLOAT16) {
    for (const char* k : {"g", "m", "p"}) in[k] = ToHalf(in[k]);
  }
  return in;
}

TEST(FusedMomentumGpuTest, MatchesCpuBitForBit) {
  REQUIRE_GPU();
  // fp32_update: -1 = the FP32 op; 0 / 1 = the FP16 op in float16 / float math.
  for (int mode : {-1, 0, 1}) {
    const DataType dtype = mode < 0 ? DataType::FLOAT : DataType::FLOAT16;
    const std::string type = mode < 0 ? "FP32MomentumSGDUpdate" : "FP16MomentumSGDUpdate";
    for (bool nesterov : {false, true}) {
      for (float wd : {0.f, 0.01f}) {
        for (bool in_place : {false, true}) {
          SCOPED_TRACE(type + " fp32_update " + std::to_string(mode) +
                       (nesterov ? " nesterov" : " plain") + " wd " + std::to_string(wd) +
                       (in_place ? " in place" : ""));
          std::vector<Argument> args{MakeArgument("momentum", 0.9f),
                                     MakeArgument("nesterov", nesterov ? 1 : 0),
                                     MakeArgument("weight_decay", wd)};
          if (mode >= 0) args.push_back(MakeArgument("fp32_update", mode));
          const auto def =
              MakeOperatorDef(type, "", {"g", "m", "lr", "p"},
                              in_place ? std::vector<std::string>{"g", "m", "p"}
                                       : std::vector<std::string>{"g_out", "m_out", "p_out"},
                              args);
          // An odd small shape and a large one (many blocks).
          ExpectCudaIdentical(def, Inputs({7, 33}, dtype, 1), {}, /*cuda_runs=*/2);
          ExpectCudaIdentical(def, Inputs({2100, 1001}, dtype, 4));
        }
      }
    }
  }
}

TEST(FusedMomentumGpuTest, Errors) {
  REQUIRE_GPU();
  const auto def =
      MakeOperatorDef("FP32MomentumSGDUpdate", "", {"g", "m", "lr", "p"}, {"g", "m", "p"});
  ExpectCudaError(def, Inputs({5}, DataType::FLOAT16, 1),
                  "FP32MomentumSGDUpdate input 0 (grad) must be a float tensor, got float16[5]");
  auto bad = Inputs({5}, DataType::FLOAT16, 1);
  bad["lr"] = FloatTensor({2}, {0.1f, 0.1f});
  ExpectCudaError(
      MakeOperatorDef("FP16MomentumSGDUpdate", "", {"g", "m", "lr", "p"}, {"g", "m", "p"}), bad,
      "input 2 (lr) must be a float tensor with one element");
}

// The optimizer part of a Caffe2 training net with the update on the GPU: the counter and its
// mutex stay on the CPU, LearningRate (policy step) runs on CUDA and reads the host counter.
// Three steps agree with the same net run entirely on the CPU.
TEST(FusedMomentumGpuTest, AtomicIterAndLearningRateFeedTheDeviceUpdate) {
  REQUIRE_GPU();
  auto run = [](bool gpu) {
    Workspace ws;
    NetDef init;
    *init.add_op() = MakeOperatorDef("ConstantFill", "", {}, {"optimizer_iteration"},
                                     {MakeArgument("shape", std::vector<int64_t>{1}),
                                      MakeArgument("dtype", 10), MakeArgument("value", 0)});
    *init.add_op() = MakeOperatorDef("CreateMutex", "", {}, {"iteration_mutex"});
    ws.RunNetOnce(init);
    const Device dev = gpu ? kGpu : Device();
    const auto in = Inputs({3, 17}, DataType::FLOAT16, 9);
    for (const char* k : {"m", "p"}) ws.CreateTensor(k, dev)->CopyFrom(in.at(k));
    NetDef net;
    net.set_name("update");
    *net.add_op() = MakeOperatorDef("AtomicIter", "", {"iteration_mutex", "optimizer_iteration"},
                                    {"optimizer_iteration"});
    OperatorDef lr = MakeOperatorDef("LearningRate", "", {"optimizer_iteration"}, {"lr"},
                                     {MakeArgument("base_lr", 0.1f), MakeArgument("policy", "step"),
                                      MakeArgument("stepsize", 2), MakeArgument("gamma", 0.5f)});
    OperatorDef upd =
        MakeOperatorDef("FP16MomentumSGDUpdate", "", {"g", "m", "lr", "p"}, {"g", "m", "p"},
                        {MakeArgument("momentum", 0.9f), MakeArgument("weight_decay", 1e-3f),
                         MakeArgument("fp32_update", 1)});
    *net.add_op() = gpu ? OnCuda(lr) : lr;
    *net.add_op() = gpu ? OnCuda(upd) : upd;
    ws.CreateTensor("g", dev);
    ws.CreateNet(net);
    for (int step = 0; step < 3; ++step) {
      ws.GetBlob("g")->GetMutableTensor(dev)->CopyFrom(in.at("g"));  // the gradient op's output
      HALFCAF_ENFORCE(cudaDeviceSynchronize() == cudaSuccess, "feeding g failed");
      ws.RunNet("update");
    }
    HALFCAF_ENFORCE(cudaDeviceSynchronize() == cudaSuccess, "the update failed");
    EXPECT_EQ(ws.GetTensor("optimizer_iteration").device(), Device()) << "counter on the host";
    EXPECT_EQ(ws.GetTensor("optimizer_iteration").data<int64_t>()[0], 3);
    EXPECT_EQ(ws.GetTensor("lr").device(), dev);
    std::vector<Tensor> out(2);
    out[0].CopyFrom(ws.GetTensor("p"));
    out[1].CopyFrom(ws.GetTensor("m"));
    return out;
  };
  const auto cpu = run(false);
  const auto gpu = run(true);
  ExpectIdentical(gpu[0], cpu[0], "param");
  ExpectIdentical(gpu[1], cpu[1], "moment");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
