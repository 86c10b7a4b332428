// ImageInput on CUDA against the CPU op: with the same random_seed the host side (records,
// decoding, crops, mirroring) is shared, so data and labels must be identical, for float NHWC
// output and for the GPU transform (NCHW float and float16, normalized by the kernel), over
// several batches in training mode (the CUDA op prefetching, the CPU op not). Device tests skip
// without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/gpu/gpu_op_test_util.h"
#include "tests/util/image_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(ImageInputGpuTest, Registered) {
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, "ImageInput"));
}

TEST(ImageInputGpuTest, MatchesCpuOpExactly) {
  REQUIRE_GPU();
  const std::string type = TestDBType();
  if (type.empty()) GTEST_SKIP() << "built without LevelDB and LMDB";
  if (!HaveJpeg()) GTEST_SKIP() << "built without JPEG support";
  // One copy of the DB per device: a LevelDB or LMDB path is opened once per process.
  ImageTempDir dir;
  const auto records = PatternRecords(7, 20, 30, [](const image::Image& img) {
    return image::EncodeJpeg(img, 90);
  });
  WriteImageDB(type, dir / "cpu_db", records);
  WriteImageDB(type, dir / "gpu_db", records);
  struct Case {
    std::string name;
    std::vector<Argument> extra;
  };
  const std::vector<Argument> norm = {
      MakeArgument("mean_per_channel", std::vector<float>{104.f, 117.f, 123.f}),
      MakeArgument("std_per_channel", std::vector<float>{58.f, 57.f, 60.f})};
  const std::vector<Case> cases = {
      {"NHWC float", {}},
      {"GPU transform float", {MakeArgument("use_gpu_transform", 1)}},
      {"GPU transform float16",
       {MakeArgument("use_gpu_transform", 1), MakeArgument("output_type", std::string("float16"))}},
      {"grey GPU transform", {MakeArgument("use_gpu_transform", 1), MakeArgument("color", 0)}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Argument> args = {MakeArgument("batch_size", int64_t{5}), MakeArgument("crop", 14),
                                  MakeArgument("scale", 17), MakeArgument("mirror", 1)};
    for (const auto& a : norm) args.push_back(a);
    for (const auto& a : c.extra) args.push_back(a);
    OperatorDef def = MakeOperatorDef("ImageInput", "", {"reader"}, {"data", "label"}, args);
    def.mutable_device_option()->set_random_seed(21);
    Workspace ws_cpu, ws_gpu;
    for (auto* w : {&ws_cpu, &ws_gpu}) {
      NetDef init;
      const std::string db = dir / (w == &ws_cpu ? "cpu_db" : "gpu_db");
      *init.add_op() = MakeOperatorDef("CreateDB", "", {}, {"reader"},
                                       {MakeArgument("db_type", type), MakeArgument("db", db)});
      w->RunNetOnce(init);
    }
    // The CUDA op prefetches (the default), the CPU op reads when it runs: still identical.
    OperatorDef cpu_def = OnCpu(def);
    *cpu_def.add_arg() = MakeArgument("no_prefetch", true);
    auto cpu = CreateOperator(cpu_def, &ws_cpu);
    auto cuda = CreateOperator(OnCuda(def), &ws_gpu);
    for (int run = 0; run < 3; ++run) {
      SCOPED_TRACE(MakeString("batch ", run));
      cpu->Run(0);
      cuda->Run(0);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(ws_gpu.GetTensor("data").device().type, DeviceType::CUDA);
      EXPECT_EQ(ws_gpu.GetTensor("label").device().type, DeviceType::CUDA);
      Tensor data, label;
      data.CopyFrom(ws_gpu.GetTensor("data"));
      label.CopyFrom(ws_gpu.GetTensor("label"));
      ExpectIdentical(data, ws_cpu.GetTensor("data"), "data");
      ExpectIdentical(label, ws_cpu.GetTensor("label"), "label");
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
