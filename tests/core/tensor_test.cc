#include "core/tensor.h"

#include <gtest/gtest.h>

#include "core/blob.h"

namespace halfcaf {
namespace {

TEST(TensorTest, LazyAllocationAndReuse) {
  Tensor t;
  t.Resize({2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_FALSE(t.initialized());
  float* p = t.mutable_data<float>();
  EXPECT_TRUE(t.initialized());
  t.Resize({3, 2});  // same size: storage kept
  EXPECT_EQ(t.mutable_data<float>(), p);
  t.Resize({1, 2});  // smaller: storage kept
  EXPECT_EQ(t.mutable_data<float>(), p);
  EXPECT_EQ(t.nbytes(), 8u);
}

TEST(TensorTest, TypeMismatchThrows) {
  Tensor t({4}, DataType::FLOAT);
  EXPECT_THROW(t.data<int32_t>(), EnforceNotMet);
  try {
    t.data<Half>();
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("float[4]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("float16"), std::string::npos) << e.what();
  }
}

TEST(TensorTest, ShareAndCopy) {
  Tensor a({2, 2}, DataType::FLOAT);
  for (int i = 0; i < 4; ++i) a.mutable_data<float>()[i] = static_cast<float>(i);
  Tensor b;
  b.ShareData(a);
  EXPECT_TRUE(b.SharesStorageWith(a));
  b.mutable_data<float>()[0] = 42.f;
  EXPECT_EQ(a.data<float>()[0], 42.f);
  Tensor c;
  c.CopyFrom(a);
  EXPECT_FALSE(c.SharesStorageWith(a));
  EXPECT_EQ(c.dims(), a.dims());
  EXPECT_EQ(c.data<float>()[3], 3.f);
}

TEST(TensorTest, AxisHelpers) {
  Tensor t({2, 3, 4, 5}, DataType::FLOAT);
  EXPECT_EQ(t.size_to_dim(2), 6);
  EXPECT_EQ(t.size_from_dim(2), 20);
  EXPECT_EQ(t.dim(-1), 5);
  EXPECT_EQ(t.canonical_axis(-3), 1);
  EXPECT_THROW(t.canonical_axis(4), EnforceNotMet);
  EXPECT_THROW(t.Reshape({7}), EnforceNotMet);
  t.Reshape({6, 20});
  EXPECT_EQ(t.ndim(), 2);
}

TEST(TensorTest, ScalarAndEmpty) {
  Tensor s(std::vector<int64_t>{}, DataType::FLOAT);
  EXPECT_EQ(s.numel(), 1);
  Tensor e({0, 3}, DataType::FLOAT);
  EXPECT_EQ(e.numel(), 0);
  EXPECT_THROW(Tensor({-1}, DataType::FLOAT), EnforceNotMet);
}

TEST(TensorTest, CudaWithoutBackendIsAClearError) {
#ifndef HALFCAF_WITH_CUDA
  Tensor t(Device{DeviceType::CUDA, 0});
  t.Resize({2});
  try {
    t.mutable_data<float>();
    FAIL();
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos);
  }
#endif
}

TEST(BlobTest, HoldsTensorsAndObjects) {
  Blob b;
  EXPECT_TRUE(b.empty());
  Tensor* t = b.GetMutableTensor(Device());
  t->Resize({3});
  t->mutable_data<int32_t>();
  EXPECT_TRUE(b.IsTensor());
  struct Thing {
    int x = 7;
  };
  EXPECT_EQ(b.GetMutable<Thing>()->x, 7);
  EXPECT_FALSE(b.IsTensor());
  EXPECT_THROW(b.GetTensor(), EnforceNotMet);
}

}  // namespace
}  // namespace halfcaf
