// Every operator registered on CPU must also have a CUDA implementation (any engine), except the
// CPU-only operators listed below. Reads only the registries, so it runs (in CI) without a GPU.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/operator.h"

namespace halfcaf {
namespace {

// Operators that stay on the CPU by design: data loading (DataInput, and Caffe2's DB readers
// CreateDB / TensorProtosDBInput), the iteration counter (Caffe2 keeps Iter on the CPU;
// LearningRate reads it there), its locked form AtomicIter and the host mutex it locks
// (CreateMutex: a host object, not a tensor), checkpoint I/O and host-side debugging output.
// ConvFusion is written only by the CPU inference plan (models/inference_optimize.h), which
// leaves CUDA nets alone; a cuDNN conv-bias-activation version waits for a GPU to test it on.
// NCHW2NCHWc / NCHWc2NCHW convert to and from oneDNN's channel-blocked layout, which only the CPU
// training rewrite writes (models/channels_last.h); cuDNN has no use for it.
const std::set<std::string> kCpuOnly = {
    "DataInput", "CreateDB", "TensorProtosDBInput", "Iter",     "AtomicIter",
    "CreateMutex", "Save",   "Load",                "Print",    "Summarize", "ConvFusion",
    "NCHW2NCHWc", "NCHWc2NCHW",
};
// CPU-only in builds with Gloo (as in Caffe2, whose Allgather has no CUDA version); absent without.
const std::set<std::string> kCpuOnlyWhenPresent = {"Allgather"};

std::set<std::string> TypesOn(DeviceType device) {
  std::set<std::string> types;
  for (const auto& k : OperatorRegistry::Keys()) {
    if (k.device == device) types.insert(k.type);
  }
  return types;
}

TEST(CudaCoverageTest, EveryCpuOperatorHasACudaImplementation) {
  const std::set<std::string> cuda = TypesOn(DeviceType::CUDA);
  std::vector<std::string> missing;
  for (const auto& type : TypesOn(DeviceType::CPU)) {
    if (cuda.count(type) || kCpuOnly.count(type) || kCpuOnlyWhenPresent.count(type)) continue;
    missing.push_back(type);
  }
  EXPECT_TRUE(missing.empty()) << missing.size()
                               << " operator(s) registered on CPU have no CUDA implementation: "
                               << DimsString(missing);
}

// The exemption lists name real CPU operators, and CPU-only ones really have no CUDA version
// (so an entry cannot silently outlive the reason it was added).
TEST(CudaCoverageTest, ExemptionsAreCurrent) {
  const std::set<std::string> cpu = TypesOn(DeviceType::CPU);
  const std::set<std::string> cuda = TypesOn(DeviceType::CUDA);
  for (const auto& type : kCpuOnly) {
    EXPECT_TRUE(cpu.count(type)) << type << " is listed as CPU-only but is not registered on CPU";
    EXPECT_FALSE(cuda.count(type)) << type << " is listed as CPU-only but has a CUDA version";
  }
  for (const auto& type : kCpuOnlyWhenPresent) {
    EXPECT_FALSE(cuda.count(type)) << type << " is listed as CPU-only but has a CUDA version";
  }
}

}  // namespace
}  // namespace halfcaf
