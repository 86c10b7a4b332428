// cuDNN helpers: data type mapping (host-only) and descriptor round trips (need a device).
#include "gpu/cudnn_wrappers.h"

#include <gtest/gtest.h>

#include "tests/util/device_checker.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(CudnnWrappersTest, DataTypes) {
  EXPECT_EQ(CudnnDataType(DataType::FLOAT), CUDNN_DATA_FLOAT);
  EXPECT_EQ(CudnnDataType(DataType::FLOAT16), CUDNN_DATA_HALF);
  EXPECT_EQ(CudnnTypeWrapper<float>::type, CUDNN_DATA_FLOAT);
  EXPECT_EQ(CudnnTypeWrapper<Half>::type, CUDNN_DATA_HALF);
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
