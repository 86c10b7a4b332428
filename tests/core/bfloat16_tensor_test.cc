// The BFLOAT16 data type through core: its enum value and names, tensors, float_io, and
// TensorProto storage (bit patterns in int32_data, like FLOAT16).
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "core/float_io.h"
#include "core/tensor_proto.h"
#include "tests/util/error_of.h"

namespace halfcaf {
namespace {

using testing::ErrorOf;

TEST(BFloat16TypeTest, EnumValueNamesAndSize) {
  EXPECT_EQ(static_cast<int>(DataType::BFLOAT16), 16);
  EXPECT_EQ(static_cast<int>(TensorProto::BFLOAT16), 16);
  EXPECT_EQ(DataTypeSize(DataType::BFLOAT16), 2u);
  EXPECT_STREQ(DataTypeName(DataType::BFLOAT16), "bfloat16");
  for (const char* name : {"bfloat16", "BFLOAT16", "BFloat16", "bf16"}) {
    EXPECT_EQ(DataTypeFromName(name), DataType::BFLOAT16) << name;
  }
  EXPECT_EQ(DataTypeFromInt(16), DataType::BFLOAT16);
  EXPECT_EQ(DataTypeOf<BFloat16>(), DataType::BFLOAT16);
  // Caffe2's values stay as they were; 11, 14 and 15 are not halfcaf types.
  EXPECT_EQ(DataTypeFromInt(12), DataType::FLOAT16);
  for (int v : {11, 14, 15, 17}) {
    const std::string err = ErrorOf([&] { DataTypeFromInt(v); });
    EXPECT_NE(err.find("values are 0-10, 12, 13, 16 = BFLOAT16"), std::string::npos) << err;
  }
  EXPECT_NE(ErrorOf([] { DataTypeFromName("bfloat"); }).find("FLOAT16, BFLOAT16"),
            std::string::npos);
  bool dispatched = false;
  DispatchAllTypes(DataType::BFLOAT16, [&](auto tag) {
    dispatched = std::is_same_v<decltype(tag), BFloat16>;
  });
  EXPECT_TRUE(dispatched);
}

TEST(BFloat16TypeTest, TensorsHoldBFloat16) {
  Tensor t({2, 3}, DataType::BFLOAT16);
  EXPECT_EQ(t.nbytes(), 12u);
  EXPECT_EQ(t.DebugString(), "bfloat16[2, 3]");
  t.mutable_data<BFloat16>()[5] = BFloat16(-3.f);
  Tensor c;
  c.CopyFrom(t);
  EXPECT_EQ(c.dtype(), DataType::BFLOAT16);
  EXPECT_EQ(c.data<BFloat16>()[5].x, 0xc040);
  // Read as another 16-bit type: a clear error, not a reinterpretation.
  const std::string err = ErrorOf([&] { t.data<Half>(); });
  EXPECT_NE(err.find("holds bfloat16[2, 3] but is read as float16"), std::string::npos) << err;
}

TEST(BFloat16TypeTest, FloatIoReadsAndWritesBFloat16) {
  Tensor t({3}, DataType::BFLOAT16);
  const uint16_t bits[] = {0x3f80, 0xc0a0, 0x7f80};  // 1, -5, inf
  for (int i = 0; i < 3; ++i) t.mutable_data<BFloat16>()[i].x = bits[i];
  EXPECT_TRUE(IsFloatType(DataType::BFLOAT16));
  EXPECT_FALSE(IsCudaFloatType(DataType::BFLOAT16));
  EnforceFloatType(t, "X");
  std::vector<float> scratch;
  const float* f = ReadAsFloat(t, &scratch);
  EXPECT_EQ(f[0], 1.f);
  EXPECT_EQ(f[1], -5.f);
  EXPECT_EQ(f[2], std::numeric_limits<float>::infinity());

  Tensor out;
  out.Resize({2});
  std::vector<float> out_scratch;
  FloatWriter w(&out, DataType::BFLOAT16, &out_scratch);
  w.data()[0] = 1.f / 3;
  w.data()[1] = 1.00390625f;  // a tie: rounds to even (1.0)
  w.Commit();
  EXPECT_EQ(out.dtype(), DataType::BFLOAT16);
  EXPECT_EQ(out.data<BFloat16>()[0].x, 0x3eab);
  EXPECT_EQ(out.data<BFloat16>()[1].x, 0x3f80);

  const std::string err = ErrorOf([] { EnforceFloatType(Tensor({1}, DataType::INT32), "X"); });
  EXPECT_NE(err.find("X must be float, float16 or bfloat16, got int32[1]"), std::string::npos)
      << err;
}

TEST(BFloat16TensorProtoTest, StoredAsBitsInInt32Data) {
  Tensor t({2, 2}, DataType::BFLOAT16);
  const uint16_t bits[] = {0x3f80, 0xc000, 0x7fc1, 0x0001};  // 1, -2, a NaN, a subnormal
  for (int i = 0; i < 4; ++i) t.mutable_data<BFloat16>()[i].x = bits[i];
  TensorProto p;
  TensorToProto(t, "b", &p);
  EXPECT_EQ(p.data_type(), TensorProto::BFLOAT16);
  ASSERT_EQ(p.int32_data_size(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(p.int32_data(i), bits[i]) << i;
  EXPECT_EQ(p.float_data_size(), 0);
  EXPECT_EQ(CountNonFinite(p), 1);

  // Text as a user writes it, read back bit for bit.
  std::string text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(p, &text));
  EXPECT_NE(text.find("data_type: BFLOAT16"), std::string::npos) << text;
  TensorProto parsed;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "name: 'b' dims: 2 dims: 2 data_type: BFLOAT16 "
      "int32_data: [16256, 49152, 32705, 1]",
      &parsed));
  Tensor back;
  TensorFromProto(parsed, &back);
  EXPECT_EQ(back.dtype(), DataType::BFLOAT16);
  EXPECT_EQ(back.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(std::memcmp(back.raw_data(), t.raw_data(), t.nbytes()), 0);

  // raw_data: little-endian 16-bit patterns; its size must match the dims.
  TensorProto raw;
  raw.set_data_type(TensorProto::BFLOAT16);
  raw.add_dims(2);
  raw.set_raw_data(std::string("\x80\x3f\xa0\xc0", 4));
  TensorFromProto(raw, &back);
  EXPECT_EQ(back.data<BFloat16>()[0].x, 0x3f80);
  EXPECT_EQ(back.data<BFloat16>()[1].x, 0xc0a0);
  raw.set_raw_data(std::string("\x80\x3f\xa0\xc0\x00\x00", 6));
  const std::string err = ErrorOf([&] { TensorFromProto(raw, &back); });
  EXPECT_NE(err.find("(2 elements of bfloat16) but raw_data holds 6 bytes"), std::string::npos)
      << err;
  // Too few values in int32_data names the tensor and the field.
  parsed.mutable_int32_data()->RemoveLast();
  EXPECT_NE(ErrorOf([&] { TensorFromProto(parsed, &back); })
                .find("TensorProto 'b' has dims [2, 2] (4 elements) but 3 values in int32_data"),
            std::string::npos);
}

TEST(BFloat16TensorProtoTest, FileRoundTripKeepsBits) {
  Workspace ws;
  Tensor* t = ws.CreateTensor("w");
  t->Resize({65536});
  for (uint32_t b = 0; b < 65536; ++b) t->mutable_data<BFloat16>()[b].x = static_cast<uint16_t>(b);
  for (const char* ext : {".pb", ".pbtxt"}) {
    const std::string path = ::testing::TempDir() + "/halfcaf_bf16_" +
                             std::to_string(::getpid()) + ext;
    WriteBlobsToFile(ws, {"w"}, path);
    Workspace ws2;
    EXPECT_EQ(FeedTensorProtosFile(path, &ws2), 1);
    const Tensor& back = ws2.GetTensor("w");
    EXPECT_EQ(back.dtype(), DataType::BFLOAT16) << ext;
    EXPECT_EQ(std::memcmp(back.raw_data(), t->raw_data(), t->nbytes()), 0) << ext;
    std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace halfcaf
