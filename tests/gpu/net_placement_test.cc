// The nets the Trainer builds for CUDA place every op on a device that has an implementation of
// it: an op put on the GPU without a CUDA kernel (or a CPU-only op such as DataInput or Iter moved
// to the GPU) would only fail on a GPU machine. Reads the registries and the NetDefs, so it runs
// (in CI) without a GPU; nothing is created or run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/operator.h"
#include "models/model_helper.h"
#include "models/trainer.h"
#include "models/zoo.h"
#include "tests/util/tiny_training.h"

namespace halfcaf {
namespace testing {
namespace {

const Device kGpu0{DeviceType::CUDA, 0};

// "net 'train' op #3 (FC) on CUDA:0" for every op whose device has no implementation.
std::vector<std::string> Unplaceable(const NetDef& net) {
  std::vector<std::string> bad;
  for (int i = 0; i < net.op_size(); ++i) {
    const OperatorDef& op = net.op(i);
    const DeviceType d = static_cast<DeviceType>(op.device_option().device_type());
    if (!OperatorRegistry::HasType(d, op.type())) {
      bad.push_back("net '" + net.name() + "' op #" + std::to_string(i) + " (" + op.type() +
                    ") on " + (d == DeviceType::CUDA ? "CUDA" : "CPU"));
    }
  }
  return bad;
}

void ExpectPlaceable(const Trainer& t, const std::string& what) {
  for (const NetDef* net : {&t.train_init_net(), &t.train_net()}) {
    const auto bad = Unplaceable(*net);
    EXPECT_TRUE(bad.empty()) << what << ": " << DimsString(bad);
  }
  int on_gpu = 0;
  for (const auto& op : t.train_net().op()) on_gpu += op.device_option().device_type() == 1;
  EXPECT_GT(on_gpu, t.train_net().op_size() / 2) << what << ": most ops should run on the GPU";
}

TEST(NetPlacementTest, LeNetAndResNetTrainingNetsOnCuda) {
  ModelHelper lenet("lenet");
  BuildLeNet(&lenet);
  ModelHelper resnet("resnet18", "NHWC");
  BuildResNet(&resnet, 18, 10, 32);
  for (bool fp16 : {false, true}) {
    for (int replicas : {1, 2}) {
      TrainerOptions o = TinyTrainingOptions(fp16, 8, kGpu0);
      o.synthetic_shape = {1, 28, 28};
      o.num_classes = 10;
      if (replicas > 1) o.replicas = {kGpu0, Device{DeviceType::CUDA, 1}};
      const std::string what = std::string(fp16 ? "float16" : "float") + ", " +
                               std::to_string(replicas) + " replica(s)";
      ExpectPlaceable(Trainer(lenet.init_net(), lenet.net(), o), "LeNet " + what);
      o.synthetic_shape = {32, 32, 3};
      o.order = "NHWC";
      ExpectPlaceable(Trainer(resnet.init_net(), resnet.net(), o), "ResNet-18 NHWC " + what);
    }
  }
}

TEST(NetPlacementTest, TinyConvnetFromProtobufTextOnCuda) {
  NetDef init, fwd;
  LoadTinyConvnet(&init, &fwd);
  for (bool fp16 : {false, true}) {
    ExpectPlaceable(Trainer(init, fwd, TinyTrainingOptions(fp16, 8, kGpu0)), "tiny convnet");
    ExpectPlaceable(Trainer(init, fwd, TinyTrainingOptions(fp16, 8, kGpu0, {kGpu0, kGpu0})),
                    "tiny convnet, 2 replicas on one GPU");
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
