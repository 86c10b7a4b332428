// cuDNN helpers: data type mapping (host-only) and descriptor round trips (need a device).
#include "gpu/cudnn_wrappers.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/util/device_checker.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(CudnnWrappersTest, DataTypes) {
  EXPECT_EQ(CudnnDataType(DataType::FLOAT), CUDNN_DATA_FLOAT);
  EXPECT_EQ(CudnnDataType(DataType::FLOAT16), CUDNN_DATA_HALF);
  EXPECT_EQ(CudnnTypeWrapper<float>::type, CUDNN_DATA_FLOAT);
  EXPECT_EQ(CudnnTypeWrapper<Half>::type, CUDNN_DATA_HALF);
  EXPECT_EQ(CudnnDataType(DataType::BFLOAT16), CUDNN_DATA_BFLOAT16);
  EXPECT_EQ(CudnnTypeWrapper<BFloat16>::type, CUDNN_DATA_BFLOAT16);
  EXPECT_STREQ(CudnnDataTypeName(CUDNN_DATA_BFLOAT16), "bfloat16");
  try {
    CudnnDataType(DataType::INT32, "Conv input X");
    FAIL() << "int32 accepted";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("Conv input X has data type int32"), std::string::npos)
        << e.what();
  }
  EXPECT_STREQ(CudnnMathTypeName(CUDNN_TENSOR_OP_MATH), "CUDNN_TENSOR_OP_MATH");
  EXPECT_STREQ(CudnnFwdAlgoName(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD), "WINOGRAD");
  EXPECT_EQ(CudnnDim(7, "N"), 7);
  EXPECT_THROW(CudnnDim(int64_t{1} << 40, "N"), EnforceNotMet);
}

// ---- convolution algorithm choice (host-only: cuDNN's answers are given) ----------------------

CudnnAlgoPerf Perf(int algo, cudnnMathType_t math, cudnnStatus_t status = CUDNN_STATUS_SUCCESS,
                   cudnnDeterminism_t det = CUDNN_DETERMINISTIC) {
  CudnnAlgoPerf p;
  p.algo = algo;
  p.math = math;
  p.status = status;
  p.determinism = det;
  return p;
}

const char* AlgoName(int a) {
  static const char* const kNames[] = {"A0", "A1", "A2", "A3", "A4", "A5", "A6", "A7"};
  return a >= 0 && a < 8 ? kNames[a] : "A?";
}

// Workspace answers per algorithm (bytes, or a failing status), recording every query.
struct FakeWorkspace {
  std::map<int, size_t> bytes;
  std::map<int, cudnnStatus_t> status;
  std::vector<std::pair<int, cudnnMathType_t>> asked;
  CudnnWorkspaceQuery Query() {
    return [this](int algo, cudnnMathType_t math, size_t* out) {
      asked.emplace_back(algo, math);
      auto st = status.find(algo);
      if (st != status.end()) return st->second;
      *out = bytes.count(algo) ? bytes[algo] : 0;
      return CUDNN_STATUS_SUCCESS;
    };
  }
};

CudnnAlgoRules Rules(cudnnDataType_t data, bool tensor_cores, size_t limit = 1 << 20) {
  CudnnAlgoRules r;
  r.data = data;
  r.tensor_cores = tensor_cores;
  r.workspace_limit = limit;
  return r;
}

TEST(CudnnAlgoChoiceTest, MathTypesPerDtype) {
  EXPECT_EQ(CudnnQueryMath(CUDNN_DATA_FLOAT, true), CUDNN_FMA_MATH);
  EXPECT_EQ(CudnnQueryMath(CUDNN_DATA_FLOAT, false), CUDNN_FMA_MATH);
  EXPECT_EQ(CudnnQueryMath(CUDNN_DATA_HALF, true), CUDNN_TENSOR_OP_MATH);
  EXPECT_EQ(CudnnQueryMath(CUDNN_DATA_HALF, false), CUDNN_DEFAULT_MATH);
  EXPECT_EQ(CudnnQueryMath(CUDNN_DATA_BFLOAT16, true), CUDNN_TENSOR_OP_MATH);
  EXPECT_EQ(CudnnQueryMath(CUDNN_DATA_BFLOAT16, false), CUDNN_DEFAULT_MATH);
  EXPECT_TRUE(CudnnMathAllowed(CUDNN_DATA_BFLOAT16, true, CUDNN_TENSOR_OP_MATH));
  EXPECT_FALSE(CudnnMathAllowed(CUDNN_DATA_BFLOAT16, true, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION));
  for (bool tc : {true, false}) {
    // FP32 is FP32: DEFAULT_MATH would let cuDNN use TF32 on Ampere and later.
    EXPECT_TRUE(CudnnMathAllowed(CUDNN_DATA_FLOAT, tc, CUDNN_FMA_MATH));
    EXPECT_FALSE(CudnnMathAllowed(CUDNN_DATA_FLOAT, tc, CUDNN_DEFAULT_MATH));
    EXPECT_FALSE(CudnnMathAllowed(CUDNN_DATA_FLOAT, tc, CUDNN_TENSOR_OP_MATH));
    EXPECT_FALSE(CudnnMathAllowed(CUDNN_DATA_HALF, tc, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION));
    EXPECT_TRUE(CudnnMathAllowed(CUDNN_DATA_HALF, tc, CUDNN_DEFAULT_MATH));
    EXPECT_TRUE(CudnnMathAllowed(CUDNN_DATA_HALF, tc, CUDNN_FMA_MATH));
  }
  EXPECT_TRUE(CudnnMathAllowed(CUDNN_DATA_HALF, true, CUDNN_TENSOR_OP_MATH));
  EXPECT_FALSE(CudnnMathAllowed(CUDNN_DATA_HALF, false, CUDNN_TENSOR_OP_MATH));
}

// Candidates are tried in cuDNN's order; each workspace query runs under the math type cuDNN
// reported for that candidate, and the choice keeps that math type.
TEST(CudnnAlgoChoiceTest, FirstUsableCandidateWithItsReportedMath) {
  const std::vector<CudnnAlgoPerf> perf{
      Perf(1, CUDNN_TENSOR_OP_MATH), Perf(0, CUDNN_DEFAULT_MATH), Perf(2, CUDNN_FMA_MATH),
      Perf(3, CUDNN_FMA_MATH)};
  {
    FakeWorkspace ws;
    const CudnnAlgoChoice c =
        PickCudnnAlgo(perf, Rules(CUDNN_DATA_FLOAT, true), ws.Query(), "fp32", AlgoName);
    EXPECT_EQ(c.algo, 2);
    EXPECT_EQ(c.math, CUDNN_FMA_MATH);
    ASSERT_EQ(ws.asked.size(), 1u);  // tensor-op and default-math candidates never asked
    EXPECT_EQ(ws.asked[0], std::make_pair(2, CUDNN_FMA_MATH));
  }
  {
    FakeWorkspace ws;
    ws.bytes[1] = 4096;
    const CudnnAlgoChoice c =
        PickCudnnAlgo(perf, Rules(CUDNN_DATA_HALF, true), ws.Query(), "fp16", AlgoName);
    EXPECT_EQ(c.algo, 1);
    EXPECT_EQ(c.math, CUDNN_TENSOR_OP_MATH);
    EXPECT_EQ(c.workspace, 4096u);
    EXPECT_EQ(ws.asked[0], std::make_pair(1, CUDNN_TENSOR_OP_MATH));
  }
  {
    FakeWorkspace ws;
    const CudnnAlgoChoice c =
        PickCudnnAlgo(perf, Rules(CUDNN_DATA_HALF, false), ws.Query(), "fp16 no tc", AlgoName);
    EXPECT_EQ(c.algo, 0);
    EXPECT_EQ(c.math, CUDNN_DEFAULT_MATH);
  }
}

// A candidate whose workspace query fails under its math type (not supported for this dtype,
// layout or group count) or needs more than the limit is passed over for the next one.
TEST(CudnnAlgoChoiceTest, WorkspaceQueryAndLimitDecide) {
  const std::vector<CudnnAlgoPerf> perf{
      Perf(4, CUDNN_FMA_MATH, CUDNN_STATUS_NOT_SUPPORTED), Perf(1, CUDNN_FMA_MATH),
      Perf(5, CUDNN_FMA_MATH), Perf(6, CUDNN_FMA_MATH, CUDNN_STATUS_SUCCESS,
                                    CUDNN_NON_DETERMINISTIC),
      Perf(0, CUDNN_FMA_MATH)};
  FakeWorkspace ws;
  ws.status[1] = CUDNN_STATUS_NOT_SUPPORTED;
  ws.bytes[5] = 2u << 20;  // over the 1 MiB limit
  ws.bytes[6] = 100;
  CudnnAlgoChoice c =
      PickCudnnAlgo(perf, Rules(CUDNN_DATA_FLOAT, false), ws.Query(), "fp32", AlgoName);
  EXPECT_EQ(c.algo, 6);
  EXPECT_EQ(c.workspace, 100u);
  CudnnAlgoRules det = Rules(CUDNN_DATA_FLOAT, false);
  det.deterministic = true;
  c = PickCudnnAlgo(perf, det, ws.Query(), "fp32", AlgoName);
  EXPECT_EQ(c.algo, 0);
  CudnnAlgoRules big = Rules(CUDNN_DATA_FLOAT, false, 4u << 20);
  c = PickCudnnAlgo(perf, big, ws.Query(), "fp32", AlgoName);
  EXPECT_EQ(c.algo, 5);
}

TEST(CudnnAlgoChoiceTest, ForcedAlgorithmKeepsItsReportedMath) {
  const std::vector<CudnnAlgoPerf> perf{Perf(1, CUDNN_TENSOR_OP_MATH), Perf(2, CUDNN_FMA_MATH),
                                        Perf(2, CUDNN_TENSOR_OP_MATH)};
  FakeWorkspace ws;
  CudnnAlgoRules r = Rules(CUDNN_DATA_HALF, true);
  r.forced_algo = 2;
  const CudnnAlgoChoice c = PickCudnnAlgo(perf, r, ws.Query(), "forced", AlgoName);
  EXPECT_EQ(c.algo, 2);
  EXPECT_EQ(c.math, CUDNN_FMA_MATH);
  r.forced_algo = 1;
  r.data = CUDNN_DATA_FLOAT;  // algorithm 1 only comes with tensor-op math: not for FP32
  try {
    PickCudnnAlgo(perf, r, ws.Query(), "Conv 'c' NCHW", AlgoName);
    FAIL() << "a tensor-op algorithm was accepted for float";
  } catch (const EnforceNotMet& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Conv 'c' NCHW: no cuDNN algorithm fits (forced algorithm A1)"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("A1 (CUDNN_TENSOR_OP_MATH): math type not allowed for float"),
              std::string::npos)
        << msg;
  }
}

TEST(CudnnAlgoChoiceTest, NothingFitsListsEveryCandidate) {
  const std::vector<CudnnAlgoPerf> perf{
      Perf(0, CUDNN_FMA_MATH, CUDNN_STATUS_NOT_SUPPORTED),
      Perf(1, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION), Perf(2, CUDNN_FMA_MATH)};
  FakeWorkspace ws;
  ws.status[2] = CUDNN_STATUS_BAD_PARAM;
  try {
    PickCudnnAlgo(perf, Rules(CUDNN_DATA_HALF, true), ws.Query(), "Conv", AlgoName);
    FAIL() << "no candidate should fit";
  } catch (const EnforceNotMet& e) {
    const std::string msg = e.what();
    for (const char* needle : {"among 3 candidates", "A0 (CUDNN_FMA_MATH): CUDNN_STATUS_NOT_SUPPORTED",
                               "A1 (CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION): math type not allowed",
                               "A2 (CUDNN_FMA_MATH): workspace query: CUDNN_STATUS_BAD_PARAM"}) {
      EXPECT_NE(msg.find(needle), std::string::npos) << needle << "\n" << msg;
    }
  }
  EXPECT_THROW(PickCudnnAlgo({}, Rules(CUDNN_DATA_FLOAT, true), ws.Query(), "Conv", AlgoName),
               EnforceNotMet);
}

TEST(CudnnWrappersTest, DescriptorsRoundTrip) {
  REQUIRE_GPU();
  TensorDescriptor t;
  t.Set4d(CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 2, 3, 5, 7);
  cudnnDataType_t type;
  int n, c, h, w, ns, cs, hs, ws;
  ASSERT_EQ(cudnnGetTensor4dDescriptor(t.get(), &type, &n, &c, &h, &w, &ns, &cs, &hs, &ws),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(type, CUDNN_DATA_HALF);
  EXPECT_EQ((std::vector<int>{n, c, h, w}), (std::vector<int>{2, 3, 5, 7}));
  EXPECT_EQ((std::vector<int>{ns, cs, hs, ws}), (std::vector<int>{105, 1, 21, 3}));  // NHWC strides

  ConvolutionDescriptor conv;
  conv.Set2d(1, 2, 1, 2, 1, 1, CUDNN_DATA_FLOAT, 3);
  conv.SetMathType(CUDNN_TENSOR_OP_MATH);
  EXPECT_EQ(conv.math_type(), CUDNN_TENSOR_OP_MATH);
  conv.SetMathType(CUDNN_FMA_MATH);
  EXPECT_EQ(conv.math_type(), CUDNN_FMA_MATH);

  FilterDescriptor f;
  f.Set4d(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 4, 1, 3, 3);
  PoolingDescriptor p;
  p.Set2d(CUDNN_POOLING_MAX, 3, 3, 1, 1, 2, 2);
  ActivationDescriptor a;
  a.Set(CUDNN_ACTIVATION_RELU);
  TensorDescriptor moved = std::move(t);
  EXPECT_NE(moved.get(), nullptr);
  EXPECT_EQ(t.get(), nullptr);
}

// The N-d forms: 5-D packed NCHW strides, 4-D through Set4d, and the 3-D convolution and pooling
// descriptors cuDNN accepts.
TEST(CudnnWrappersTest, NdDescriptors) {
  REQUIRE_GPU();
  TensorDescriptor t;
  t.SetNd(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, {2, 3, 4, 5, 6});
  cudnnDataType_t type;
  int nb = 0, dims[8], strides[8];
  ASSERT_EQ(cudnnGetTensorNdDescriptor(t.get(), 8, &type, &nb, dims, strides),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(nb, 5);
  EXPECT_EQ(std::vector<int>(dims, dims + 5), (std::vector<int>{2, 3, 4, 5, 6}));
  EXPECT_EQ(std::vector<int>(strides, strides + 5), (std::vector<int>{360, 120, 30, 6, 1}));
  t.SetNd(CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, {2, 3, 5, 7});
  ASSERT_EQ(cudnnGetTensorNdDescriptor(t.get(), 8, &type, &nb, dims, strides),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(nb, 4);
  EXPECT_EQ(std::vector<int>(strides, strides + 4), (std::vector<int>{105, 1, 21, 3}));
  EXPECT_THROW(t.SetNd(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, {2, 3, 4}), EnforceNotMet);

  FilterDescriptor f;
  f.SetNd(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, {4, 3, 2, 3, 2});
  ConvolutionDescriptor conv;
  conv.SetNd({1, 0, 1}, {1, 2, 1}, {1, 1, 2}, CUDNN_DATA_FLOAT, 1);
  TensorDescriptor x;
  x.SetNd(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, {2, 3, 4, 5, 6});
  int out[5];
  ASSERT_EQ(cudnnGetConvolutionNdForwardOutputDim(conv.get(), x.get(), f.get(), 5, out),
            CUDNN_STATUS_SUCCESS);
  // (4 + 2 - 2) / 1 + 1, (5 - 3) / 2 + 1, (6 + 2 - 3) / 1 + 1 (dilated kernel 3).
  EXPECT_EQ(std::vector<int>(out, out + 5), (std::vector<int>{2, 4, 5, 2, 6}));
  EXPECT_THROW(conv.SetNd({1, 0}, {1, 2, 1}, {1, 1, 2}, CUDNN_DATA_FLOAT, 1), EnforceNotMet);
  PoolingDescriptor p;
  p.SetNd(CUDNN_POOLING_MAX, {2, 2, 2}, {0, 1, 0}, {2, 2, 2});
  p.SetNd(CUDNN_POOLING_MAX, {3, 3}, {1, 1}, {2, 2});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
