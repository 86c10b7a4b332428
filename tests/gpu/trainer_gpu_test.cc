// The Trainer on CUDA reads nothing back per step: the window statistics match a read after every
// step, and a label out of range found on the device still stops training with the op's error
// at the next read. Device tests skip without a GPU.
#include <gtest/gtest.h>

#include "tests/util/device_checker.h"
#include "tests/util/tiny_training.h"

namespace halfcaf {
namespace testing {
namespace {

const Device kGpu0{DeviceType::CUDA, 0};

TEST(TrainerGpuTest, ReadStatsReportsTheWindow) {
  REQUIRE_GPU();
  for (bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    ExpectStatsOfTheWindow(TinyTrainingOptions(fp16, 8, kGpu0), 5, 1e-4);
  }
  ExpectStatsOfTheWindow(TinyTrainingOptions(true, 8, kGpu0, {kGpu0, kGpu0}), 3, 1e-4);
}

TEST(TrainerGpuTest, BadLabelStopsTrainingAtTheNextRead) {
  REQUIRE_GPU();
  for (bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    ExpectBadLabelStopsTraining(TinyTrainingOptions(fp16, 8, kGpu0));
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
