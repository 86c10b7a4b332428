// LabelCrossEntropy (+Gradient), AveragedLoss (+Gradient) and Accuracy on CUDA against the CPU
// operators: float and float16, clamped probabilities, multi-block sums, ties and top_k; label
// range errors reported like on CPU. Device tests skip without a GPU.
#include <gtest/gtest.h>

#include <random>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const DataType kDtypes[] = {DataType::FLOAT, DataType::FLOAT16};

Tensor RandomLabels(int64_t N, int64_t D, uint32_t seed, std::vector<int64_t> dims = {}) {
  Tensor t(dims.empty() ? std::vector<int64_t>{N} : dims, DataType::INT32);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < N; ++i) {
    t.mutable_data<int32_t>()[i] = static_cast<int32_t>(rng() % static_cast<uint32_t>(D));
  }
  return t;
}

void ExpectLabelError(const OperatorDef& def, const std::map<std::string, Tensor>& in,
                      const std::string& needle) {
  ExpectDeferredLabelError(def, in, "L", needle);
}

TEST(LossGpuTest, Registered) {
  for (const char* type : {"LabelCrossEntropy", "LabelCrossEntropyGradient", "AveragedLoss",
                           "AveragedLossGradient", "Accuracy"}) {
    EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, type)) << type;
  }
}

TEST(LabelCrossEntropyGpuTest, MatchesCpu) {
  REQUIRE_GPU();
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{9, 7}, std::vector<int64_t>{300, 10}, std::vector<int64_t>{6}}) {
    const int64_t N = dims.size() == 2 ? dims[0] : 1, D = dims.back();
    Tensor x = RandomTensor(dims, 1, 0.f, 1.f);
    // Some probabilities in the clamped region (0 in float16 too): -log(1e-20), zero gradient.
    x.mutable_data<float>()[0] = 0.f;
    x.mutable_data<float>()[x.numel() / 2] = 1e-30f;
    Tensor labels = RandomLabels(N, D, 2);
    const int64_t mid = x.numel() / 2;
    labels.mutable_data<int32_t>()[0] = 0;
    if (mid / D != 0) labels.mutable_data<int32_t>()[mid / D] = static_cast<int32_t>(mid % D);
    const std::map<std::string, Tensor> in{{"X", x}, {"L", labels}, {"dY", RandomTensor({N}, 3)}};
    for (DataType dt : kDtypes) {
      SCOPED_TRACE(MakeString(DimsString(dims), " ", DataTypeName(dt)));
      const auto data = AsDtype(in, dt);
      DeviceChecker().Check(MakeOperatorDef("LabelCrossEntropy", "", {"X", "L"}, {"Y"}), data);
      DeviceChecker().Check(
          MakeOperatorDef("LabelCrossEntropyGradient", "", {"X", "L", "dY"}, {"dX"}), data);
    }
    // Mixed dtypes: dY float with float16 X.
    DeviceChecker().Check(
        MakeOperatorDef("LabelCrossEntropyGradient", "", {"X", "L", "dY"}, {"dX"}),
        {{"X", ToHalf(x)}, {"L", labels}, {"dY", in.at("dY")}});
  }
}

TEST(LabelCrossEntropyGpuTest, LabelOutOfRange) {
  REQUIRE_GPU();
  const std::map<std::string, Tensor> in{{"X", RandomTensor({4, 3}, 4, 0.1f, 1.f)},
                                         {"L", IntTensor({4}, {0, 2, 1, 3})},
                                         {"dY", RandomTensor({4}, 5)}};
  ExpectLabelError(MakeOperatorDef("LabelCrossEntropy", "", {"X", "L"}, {"Y"}), in,
                   "label 3 of sample 3 is out of range, expected 0 <= label < 3");
  ExpectLabelError(MakeOperatorDef("LabelCrossEntropyGradient", "", {"X", "L", "dY"}, {"dX"}), in,
                   "label 3 of sample 3 is out of range, expected 0 <= label < 3");
}

TEST(AveragedLossGpuTest, MatchesCpu) {
  REQUIRE_GPU();
  // 100003 elements: several blocks of partial sums.
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{3, 7, 11}, std::vector<int64_t>{100003}, std::vector<int64_t>{0},
        std::vector<int64_t>{}}) {
    const std::map<std::string, Tensor> in{{"X", RandomTensor(dims, 6, 0.f, 2.f)},
                                           {"dY", FloatTensor({}, {0.7f})}};
    for (DataType dt : kDtypes) {
      SCOPED_TRACE(MakeString(DimsString(dims), " ", DataTypeName(dt)));
      const auto data = AsDtype(in, dt);
      DeviceChecker().Check(MakeOperatorDef("AveragedLoss", "", {"X"}, {"loss"}), data);
      DeviceChecker().Check(MakeOperatorDef("AveragedLossGradient", "", {"X", "dY"}, {"dX"}), data);
    }
  }
}

TEST(AccuracyGpuTest, MatchesCpu) {
  REQUIRE_GPU();
  // Scores on a coarse grid (exact in float16): many ties, broken towards the lower index.
  for (int64_t D : {int64_t{1}, int64_t{10}, int64_t{1000}}) {
    const int64_t N = 37;
    Tensor x({N, D}, DataType::FLOAT);
    std::mt19937 rng(7);
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.mutable_data<float>()[i] = static_cast<float>(rng() % 5) * 0.25f;
    }
    const std::map<std::string, Tensor> in{{"X", x}, {"L", RandomLabels(N, D, 8, {N, 1})}};
    for (int top_k : {1, 3, 20}) {
      for (DataType dt : kDtypes) {
        SCOPED_TRACE(MakeString("D ", D, " top_k ", top_k, " ", DataTypeName(dt)));
        DeviceChecker().Check(
            MakeOperatorDef("Accuracy", "", {"X", "L"}, {"acc"}, {MakeArgument("top_k", top_k)}),
            AsDtype(in, dt));
      }
    }
  }
  DeviceChecker().Check(MakeOperatorDef("Accuracy", "", {"X", "L"}, {"acc"}),
                        {{"X", RandomTensor({0, 4}, 9)}, {"L", IntTensor({0}, {})}});
}

TEST(AccuracyGpuTest, Errors) {
  REQUIRE_GPU();
  ExpectLabelError(MakeOperatorDef("Accuracy", "", {"X", "L"}, {"acc"}),
                   {{"X", RandomTensor({3, 4}, 10)}, {"L", IntTensor({3}, {1, -2, 9})}},
                   "label -2 of sample 1 is out of range, expected 0 <= label < 4");
  Workspace ws;
  OperatorDef def =
      MakeOperatorDef("Accuracy", "", {"X", "L"}, {"acc"}, {MakeArgument("top_k", 0)});
  def.mutable_device_option()->set_device_type(1);
  ws.CreateTensor("X", Device{DeviceType::CUDA, 0})->CopyFrom(RandomTensor({3, 4}, 11));
  ws.CreateTensor("L", Device{DeviceType::CUDA, 0})->CopyFrom(IntTensor({3}, {1, 2, 3}));
  try {
    CreateOperator(def, &ws);
    FAIL() << "top_k 0 accepted";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("top_k"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
