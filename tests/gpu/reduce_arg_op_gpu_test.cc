// ReduceMax / ReduceMin (+ gradients) and ArgMax / ArgMin on CUDA against the CPU operators. The
// results select elements, so they must be identical. Device tests skip without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef MinMaxDef(const std::string& type, const std::vector<int>& axes, int keepdims) {
  std::vector<Argument> args{MakeArgument("keepdims", keepdims)};
  if (!axes.empty()) args.push_back(MakeArgument("axes", axes));
  return MakeOperatorDef(type, "", {"X"}, {"Y"}, args);
}

// Values on a grid of 1/8 (exact in float16) with many ties.
Tensor GridTensor(std::vector<int64_t> dims, uint32_t seed) {
  Tensor t = RandomTensor(std::move(dims), seed, -4.f, 4.f);
  float* d = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = std::round(d[i] * 8.f) / 8.f;
  return t;
}

TEST(ReduceArgGpuTest, Registered) {
  for (const char* type :
       {"ReduceMax", "ReduceMin", "ReduceMaxGradient", "ReduceMinGradient", "ArgMax", "ArgMin"}) {
    EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, type)) << type;
  }
}

TEST(ReduceArgGpuTest, ReduceMinMaxAndGradientsMatchCpu) {
  REQUIRE_GPU();
  // Alternating kept and reduced dims, size-1 dims, odd sizes.
  const Tensor x = GridTensor({3, 1, 4, 5, 7, 2}, 1);
  const std::vector<std::vector<int>> axes_cases = {{},     {0},       {-1},         {2, 4},
                                                    {0, 3}, {1, 3, 5}, {0, 2, 4, 5}, {3}};
  for (const char* type : {"ReduceMax", "ReduceMin"}) {
    for (const auto& axes : axes_cases) {
      for (int keepdims : {0, 1}) {
        SCOPED_TRACE(std::string(type) + " axes " + DimsString(axes) + " keepdims " +
                     std::to_string(keepdims));
        const OperatorDef fwd = MinMaxDef(type, axes, keepdims);
        for (const Tensor& t : {x, ToHalf(x)}) ExpectCudaIdentical(fwd, {{"X", t}});
        Workspace ws;
        RunOp(fwd, {{"X", x}}, &ws);
        const Tensor& y = ws.GetTensor("Y");
        const OperatorDef grad =
            MakeOperatorDef(std::string(type) + "Gradient", "", {"dY", "X", "Y"}, {"dX"},
                            {MakeArgument("axes", axes), MakeArgument("keepdims", keepdims)});
        const Tensor dy = RandomTensor(y.dims(), 2);
        ExpectCudaIdentical(grad, {{"dY", dy}, {"X", x}, {"Y", y}});
        ExpectCudaIdentical(grad, {{"dY", ToHalf(dy)}, {"X", ToHalf(x)}, {"Y", ToHalf(y)}});
      }
    }
  }
  // A block per long group; a thread per short group when there are many; empty groups.
  ExpectCudaIdentical(MinMaxDef("ReduceMax", {1}, 0), {{"X", GridTensor({3, 5001}, 3)}});
  ExpectCudaIdentical(MinMaxDef("ReduceMin", {1}, 1), {{"X", GridTensor({4099, 5}, 4)}});
  ExpectCudaIdentical(MinMaxDef("ReduceMin", {0}, 1), {{"X", GridTensor({7, 3000}, 5)}});
  ExpectCudaIdentical(MinMaxDef("ReduceMax", {1}, 0), {{"X", RandomTensor({3, 0}, 10)}});
}

TEST(ReduceArgGpuTest, NaNPropagates) {
  REQUIRE_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = GridTensor({5, 300}, 6);
  x.mutable_data<float>()[2 * 300 + 17] = nan;
  for (const char* type : {"ReduceMax", "ReduceMin"}) {
    const CpuCudaOutputs r = RunCpuAndCuda(MinMaxDef(type, {1}, 0), {{"X", x}});
    const std::vector<float> got = ToFloatVector(r.cuda[0]), want = ToFloatVector(r.cpu[0]);
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(std::isnan(got[i]), i == 2) << type << " " << i;
      if (i != 2) {
        EXPECT_EQ(got[i], want[i]) << type << " " << i;
      }
    }
  }
  for (const char* type : {"ArgMax", "ArgMin"}) {
    const OperatorDef def = MakeOperatorDef(type, "", {"X"}, {"I"});
    ExpectCudaIdentical(def, {{"X", x}});
    const CpuCudaOutputs r = RunCpuAndCuda(def, {{"X", x}});
    EXPECT_EQ(r.cuda[0].data<int64_t>()[2], 17) << type;
  }
}

TEST(ReduceArgGpuTest, ArgMaxArgMinMatchCpu) {
  REQUIRE_GPU();
  const Tensor x = GridTensor({3, 5, 7, 2}, 7);
  const std::vector<Tensor> inputs = {x, ToHalf(x), CastTensor<int32_t>(x, 8.f),
                                      CastTensor<int64_t>(x, 8.f)};
  for (const char* type : {"ArgMax", "ArgMin"}) {
    for (int axis : {-1, 0, 1, 2, 3, -3}) {
      for (int keepdims : {0, 1}) {
        for (int last : {0, 1}) {
          const OperatorDef def = MakeOperatorDef(
              type, "", {"X"}, {"I"},
              {MakeArgument("axis", axis), MakeArgument("keepdims", keepdims),
               MakeArgument("select_last_index", last)});
          for (const Tensor& t : inputs) {
            SCOPED_TRACE(std::string(type) + " axis " + std::to_string(axis) + " last " +
                         std::to_string(last) + " " + DataTypeName(t.dtype()));
            ExpectCudaIdentical(def, {{"X", t}});
          }
        }
      }
    }
  }
  // Long groups (block reduction: the first, or the last, tie must still win) and many short ones.
  for (int last : {0, 1}) {
    const OperatorDef argmax = MakeOperatorDef("ArgMax", "", {"X"}, {"I"},
                                               {MakeArgument("select_last_index", last)});
    ExpectCudaIdentical(argmax, {{"X", GridTensor({2, 7000}, 8)}});
    ExpectCudaIdentical(argmax, {{"X", CastTensor<int32_t>(GridTensor({5000, 9}, 9), 8.f)}});
  }
  // A long group of NaNs and equal numbers: the last NaN.
  Tensor nans = GridTensor({1, 3000}, 11);
  for (int i : {5, 1200, 2999 - 7}) nans.mutable_data<float>()[i] = std::nanf("");
  const OperatorDef argmin_last = MakeOperatorDef("ArgMin", "", {"X"}, {"I"},
                                                  {MakeArgument("select_last_index", 1)});
  const CpuCudaOutputs r = RunCpuAndCuda(argmin_last, {{"X", nans}});
  EXPECT_EQ(r.cuda[0].data<int64_t>()[0], 2999 - 7);
  ExpectCudaIdentical(argmin_last, {{"X", ToHalf(nans)}});
  const OperatorDef argmax = MakeOperatorDef("ArgMax", "", {"X"}, {"I"});
  ExpectCudaError(MakeOperatorDef("ArgMin", "", {"X"}, {"I"}, {MakeArgument("axis", 4)}),
                  {{"X", x}}, "axis 4 is out of range");
  ExpectCudaError(argmax, {{"X", RandomTensor({3, 0}, 10)}}, "is empty along axis 1");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
