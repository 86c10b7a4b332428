#include "core/tensor.h"

#include <cstdint>

#include <gtest/gtest.h>

#include "core/blob.h"
#include "core/checked_math.h"
#include "tests/util/error_of.h"

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

// Memory the tensor does not allocate (the Python package's zero-copy feed): written in place,
// released through the deleter when the last tensor drops it, reallocated when it is too small.
TEST(TensorTest, SharesExternalData) {
  float buffer[6] = {0, 1, 2, 3, 4, 5};
  int released = 0;
  {
    Tensor t;
    t.ShareExternalData(std::shared_ptr<void>(buffer, [&](void*) { ++released; }), sizeof(buffer),
                        {2, 3}, DataType::FLOAT, Device());
    EXPECT_EQ(t.data<float>()[4], 4.f);
    t.mutable_data<float>()[1] = 9.f;
    EXPECT_EQ(buffer[1], 9.f);
    EXPECT_NE(t.storage_id(), 0u);
    Tensor other({1}, DataType::FLOAT);
    EXPECT_NE(t.storage_id(), other.storage_id());
    t.Resize({4, 4});  // larger than the shared memory: its own storage now
    t.mutable_data<float>()[15] = 1.f;
    EXPECT_EQ(released, 1);
  }
  EXPECT_THROW(Tensor().ShareExternalData(std::shared_ptr<void>(buffer, [](void*) {}), 8, {3},
                                          DataType::FLOAT, Device()),
               EnforceNotMet);
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

using testing::ErrorOf;

TEST(CheckedMathTest, ProductsSumsAndBytes) {
  const int64_t big = int64_t{1} << 62;
  EXPECT_EQ(CheckedNumel({}, "x"), 1);
  EXPECT_EQ(CheckedNumel({2, 3, 4}, "x"), 24);
  EXPECT_EQ(CheckedNumel({0, 5}, "x"), 0);
  EXPECT_EQ(CheckedNumel({big, 1}, "x"), big);
  EXPECT_THROW(CheckedNumel({big, 2}, "x"), EnforceNotMet);
  EXPECT_THROW(CheckedNumel({0, big, 4}, "x"), EnforceNotMet);  // sub-products must fit too
  EXPECT_NE(ErrorOf([] { CheckedNumel({2, -1}, "thing ", 7); }).find("thing 7: negative dimension -1"),
            std::string::npos);
  EXPECT_EQ(CheckedMul(big, 1, "m"), big);
  EXPECT_NE(ErrorOf([&] { CheckedMul(big, 2, "m"); }).find("m: size 4611686018427387904 x 2 overflows"),
            std::string::npos);
  EXPECT_THROW(CheckedAdd(INT64_MAX, 1, "a"), EnforceNotMet);
  EXPECT_EQ(CheckedBytes(3, 8, "b"), 24u);
  EXPECT_THROW(CheckedBytes(big, 4, "b"), EnforceNotMet);
}

TEST(TensorTest, OverflowingShapesNameTheBlobAndDims) {
  Blob blob("activations");
  Tensor* t = blob.GetMutableTensor(Device());
  t->Resize({2, 3});
  std::string err = ErrorOf([&] { t->Resize({int64_t{1} << 62, int64_t{1} << 62}); });
  EXPECT_NE(err.find("blob 'activations': shape [4611686018427387904, 4611686018427387904] has "
                     "too many elements"),
            std::string::npos) << err;
  EXPECT_EQ(t->dims(), (std::vector<int64_t>{2, 3}));  // unchanged
  err = ErrorOf([&] { t->Resize({4, -2}); });
  EXPECT_NE(err.find("blob 'activations': negative dimension -2 in shape [4, -2]"), std::string::npos)
      << err;
  EXPECT_THROW(t->Reshape({int64_t{1} << 62, 8}), EnforceNotMet);
  // Elements fit in int64 but their bytes do not.
  t->Resize({int64_t{1} << 62});
  err = ErrorOf([&] { t->mutable_data<float>(); });
  EXPECT_NE(err.find("blob 'activations' of float[4611686018427387904]: size 4611686018427387904 x 4 overflows"),
            std::string::npos) << err;
}

TEST(TensorTest, HugeAllocationSaysHowManyBytesForWhichBlob) {
  Blob blob("huge");
  Tensor* t = blob.GetMutableTensor(Device());
  t->Resize({4});
  t->mutable_data<float>();
  t->Resize({int64_t{1} << 50});  // 4 PiB of floats: more than any machine running this
  std::string err = ErrorOf([&] { t->mutable_data<float>(); });
  EXPECT_NE(err.find("blob 'huge' float[1125899906842624]"), std::string::npos) << err;
  EXPECT_NE(err.find("4503599627370496 bytes (4.0 PiB)"), std::string::npos) << err;
  // The failed tensor holds no storage, so nothing reads its old, too small buffer.
  EXPECT_FALSE(t->initialized());
  EXPECT_THROW(t->raw_data(), EnforceNotMet);
  t->Resize({2});
  EXPECT_NE(t->mutable_data<float>(), nullptr);
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
