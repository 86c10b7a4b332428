#include "core/proto_io.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "core/tensor_proto.h"
#include "proto/halfcaf.pb.h"
#include "tests/util/error_of.h"
#include "tests/util/nested_net.h"

namespace halfcaf {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/halfcaf_" + std::to_string(getpid()) + "_" + name;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

NetDef SampleNet() {
  NetDef net;
  net.set_name("mlp");
  net.set_type("dag");
  auto* op = net.add_op();
  op->set_type("FC");
  op->add_input("x");
  op->add_input("w");
  op->add_input("b");
  op->add_output("y");
  op->set_engine("CUDNN");
  auto* a = op->add_arg();
  a->set_name("axis");
  a->set_i(1);
  op->mutable_device_option()->set_device_type(1);
  op->mutable_device_option()->set_device_id(2);
  net.add_external_input("x");
  return net;
}

TEST(ProtoIOTest, TextAndBinaryRoundTripByContent) {
  NetDef net = SampleNet();
  // Extensions deliberately misleading: detection is by content.
  std::string text_path = TempPath("net.pb"), bin_path = TempPath("net.pbtxt");
  WriteProtoToFile(net, text_path, /*text=*/true);
  WriteProtoToFile(net, bin_path, /*text=*/false);
  NetDef a, b;
  ReadProtoFromFile(text_path, &a);
  ReadProtoFromFile(bin_path, &b);
  EXPECT_EQ(a.SerializeAsString(), net.SerializeAsString());
  EXPECT_EQ(b.SerializeAsString(), net.SerializeAsString());
  std::remove(text_path.c_str());
  std::remove(bin_path.c_str());
}

TEST(ProtoIOTest, ParseErrorHasLineAndColumn) {
  std::string path = TempPath("bad.pbtxt");
  WriteText(path, "name: \"x\"\nop {\n  type: \"FC\"\n  inputt: \"a\"\n}\n");
  NetDef net;
  try {
    ReadProtoFromFile(path, &net);
    FAIL();
  } catch (const EnforceNotMet& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(path + ":4:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("inputt"), std::string::npos) << msg;
  }
  std::remove(path.c_str());
}

TEST(ProtoIOTest, MissingFileNamesPath) {
  NetDef net;
  try {
    ReadProtoFromFile("/nonexistent/dir/net.pbtxt", &net);
    FAIL();
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/net.pbtxt"), std::string::npos);
  }
}

TEST(ProtoIOTest, TruncatedBinaryIsAnError) {
  std::string bytes = SampleNet().SerializeAsString();
  std::string path = TempPath("trunc.pb");
  WriteFileAtomically(path, bytes.substr(0, bytes.size() / 2));
  NetDef net;
  EXPECT_THROW(ReadProtoFromFile(path, &net), EnforceNotMet);
  std::remove(path.c_str());
}

using testing::ErrorOf;

using testing::NestedNetBinary;
using testing::NestedNetText;

TEST(ProtoIOTest, DeeplyNestedFilesAreRejectedNotACrash) {
  const std::string text_path = TempPath("deep.pbtxt"), bin_path = TempPath("deep.pb");
  WriteText(text_path, NestedNetText(20000));
  WriteFileAtomically(bin_path, NestedNetBinary(20000));
  NetDef net;
  std::string err = ErrorOf([&] { ReadProtoFromFile(text_path, &net); });
  EXPECT_NE(err.find(text_path + ":1:"), std::string::npos) << err;
  EXPECT_NE(err.find("too deep"), std::string::npos) << err;
  err = ErrorOf([&] { ReadProtoFromFile(bin_path, &net); });
  EXPECT_NE(err.find(bin_path + ": cannot parse NetDef: messages are nested more than 100 levels"),
            std::string::npos) << err;
  // Nets nested a few levels, as real ones are, still parse, in both formats.
  for (int depth : {1, 10}) {
    ParseProtoFromString(NestedNetText(depth), "text", &net);
    NetDef from_binary;
    ParseProtoFromString(NestedNetBinary(depth), "binary", &from_binary);
    EXPECT_EQ(from_binary.SerializeAsString(), net.SerializeAsString());
  }
  // A truncated binary file is still reported as such, not as too deep.
  err = ErrorOf([&] { ParseProtoFromString(NestedNetBinary(10).substr(0, 20), "cut", &net); });
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  std::remove(text_path.c_str());
  std::remove(bin_path.c_str());
}

TEST(ProtoIOTest, LegacyCudaGpuIdSpelling) {
  NetDef net;
  ParseProtoFromString(
      "op { type: \"Relu\" input: \"x\" output: \"y\" "
      "device_option { device_type: 1 cuda_gpu_id: 3 } name: \"cuda_gpu_id: 5\" }",
      "inline", &net);
  EXPECT_EQ(net.op(0).device_option().device_id(), 3);
  EXPECT_EQ(net.op(0).name(), "cuda_gpu_id: 5");  // strings untouched
}

TEST(ProtoIOTest, AtomicWriteLeavesNoTempFile) {
  std::string path = TempPath("atomic.pb");
  WriteFileAtomically(path, "first");
  WriteFileAtomically(path, "second");
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "second");
  EXPECT_NE(access((path + ".tmp." + std::to_string(getpid())).c_str(), F_OK), 0);
  std::remove(path.c_str());
}

TEST(TensorProtoTest, RoundTripAllTypes) {
  Workspace ws;
  Tensor* f = ws.CreateTensor("f");
  f->Resize({2, 3});
  for (int i = 0; i < 6; ++i) f->mutable_data<float>()[i] = 0.5f * i - 1.f;
  Tensor* h = ws.CreateTensor("h");
  h->Resize({3});
  for (int i = 0; i < 3; ++i) h->mutable_data<Half>()[i] = Half(0.1f * (i + 1));
  Tensor* i32 = ws.CreateTensor("i32");
  i32->Resize({2});
  i32->mutable_data<int32_t>()[0] = -7;
  i32->mutable_data<int32_t>()[1] = 9;
  Tensor* i64 = ws.CreateTensor("i64");
  i64->Resize({1});
  i64->mutable_data<int64_t>()[0] = int64_t{1} << 40;
  Tensor* u8 = ws.CreateTensor("u8");
  u8->Resize({2});
  u8->mutable_data<uint8_t>()[0] = 255;
  u8->mutable_data<uint8_t>()[1] = 3;
  Tensor* d = ws.CreateTensor("d");
  d->Resize({});
  d->mutable_data<double>()[0] = 3.25;
  std::vector<std::string> names{"f", "h", "i32", "i64", "u8", "d"};
  for (const char* ext : {".pb", ".pbtxt"}) {
    std::string path = TempPath(std::string("blobs") + ext);
    WriteBlobsToFile(ws, names, path);
    Workspace ws2;
    EXPECT_EQ(FeedTensorProtosFile(path, &ws2), 6);
    for (const auto& n : names) {
      const Tensor& a = ws.GetTensor(n);
      const Tensor& b = ws2.GetTensor(n);
      EXPECT_EQ(a.dims(), b.dims()) << n;
      EXPECT_EQ(a.dtype(), b.dtype()) << n;
      EXPECT_EQ(0, std::memcmp(a.raw_data(), b.raw_data(), a.nbytes())) << n;
    }
    std::remove(path.c_str());
  }
}

TEST(TensorProtoTest, Float16IsStoredAsBitsInInt32Data) {
  Tensor h({2}, DataType::FLOAT16);
  h.mutable_data<Half>()[0] = Half(1.0f);
  h.mutable_data<Half>()[1] = Half(-2.0f);
  TensorProto p;
  TensorToProto(h, "h", &p);
  EXPECT_EQ(p.data_type(), TensorProto::FLOAT16);
  ASSERT_EQ(p.int32_data_size(), 2);
  EXPECT_EQ(p.int32_data(0), 0x3c00);
  EXPECT_EQ(p.int32_data(1), 0xc000);
}

TEST(TensorProtoTest, CountMismatchNamesTensor) {
  TensorProto p;
  p.set_name("weights");
  p.add_dims(2);
  p.add_dims(3);
  p.add_float_data(1.f);
  Tensor t;
  try {
    TensorFromProto(p, &t);
    FAIL();
  } catch (const EnforceNotMet& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("weights"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  }
}

TEST(TensorProtoTest, OverflowingOrNegativeDimsNameTensorAndDims) {
  TensorProto p;
  p.set_name("data");
  p.add_dims(int64_t{1} << 62);
  p.add_dims(int64_t{1} << 62);
  p.add_float_data(1.f);
  Tensor t;
  std::string err = ErrorOf([&] { TensorFromProto(p, &t); });
  EXPECT_NE(err.find("TensorProto 'data': shape [4611686018427387904, 4611686018427387904] has "
                     "too many elements"),
            std::string::npos) << err;
  p.clear_float_data();  // no values to match the (wrapped) count either
  EXPECT_NE(ErrorOf([&] { TensorFromProto(p, &t); }).find("too many elements"), std::string::npos);
  p.add_dims(0);  // a zero dim does not excuse the others
  p.add_dims(0);
  EXPECT_NE(ErrorOf([&] { TensorFromProto(p, &t); }).find("too many elements"), std::string::npos);
  p.set_dims(0, -3);
  err = ErrorOf([&] { TensorFromProto(p, &t); });
  EXPECT_NE(err.find("TensorProto 'data': negative dimension -3"), std::string::npos) << err;
  // Dims that fit but whose bytes do not: raw_data of 2^61 doubles.
  p.Clear();
  p.set_name("raw");
  p.set_data_type(TensorProto::DOUBLE);
  p.add_dims(int64_t{1} << 61);
  p.set_raw_data("12345678");
  err = ErrorOf([&] { TensorFromProto(p, &t); });
  EXPECT_NE(err.find("TensorProto 'raw': size 2305843009213693952 x 8 overflows"),
            std::string::npos) << err;
  // Nothing was allocated for the values before they were checked against the dims.
  p.set_dims(0, int64_t{1} << 40);
  err = ErrorOf([&] { TensorFromProto(p, &t); });
  EXPECT_NE(err.find("raw_data holds 8 bytes"), std::string::npos) << err;
}

TEST(TensorProtoTest, RawDataAccepted) {
  TensorProto p;
  p.add_dims(2);
  p.set_data_type(TensorProto::INT32);
  int32_t v[2] = {5, -6};
  p.set_raw_data(std::string(reinterpret_cast<char*>(v), 8));
  Tensor t;
  TensorFromProto(p, &t);
  EXPECT_EQ(t.data<int32_t>()[1], -6);
}

}  // namespace
}  // namespace halfcaf
