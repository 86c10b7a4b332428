#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/gradient.h"
#include "core/proto_io.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed with the fixture.
class LoadSaveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "halfcaf_load_save_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> DirEntries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string ReadFile(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::string dir_;
};

// One tensor of each type the round trip covers.
void FillWorkspace(Workspace* ws) {
  SetInput(ws, "f", RandomTensor({2, 3}, 1));
  SetInput(ws, "h", ToHalf(RandomTensor({5}, 2, -100.f, 100.f)));
  SetInput(ws, "i32", IntTensor({2, 2}, {-7, 0, 3, 2147483647}));
  Tensor i64({3}, DataType::INT64);
  int64_t* d = i64.mutable_data<int64_t>();
  d[0] = -1;
  d[1] = int64_t{1} << 40;
  d[2] = 9;
  SetInput(ws, "i64", i64);
  SetInput(ws, "scalar", FloatTensor({}, {2.5f}));
  // bfloat16, with the bit patterns that must survive as they are: -0, inf, a NaN, a subnormal.
  Tensor bf = ToBFloat16(RandomTensor({2, 4}, 3, -1e20f, 1e20f));
  const uint16_t special[] = {0x8000, 0xff80, 0x7fc1, 0x0003};
  for (int i = 0; i < 4; ++i) bf.mutable_data<BFloat16>()[i].x = special[i];
  SetInput(ws, "bf", bf);
}

const std::vector<std::string> kNames = {"f", "h", "i32", "i64", "scalar", "bf"};

void ExpectSameTensor(const Tensor& got, const Tensor& want, const std::string& name) {
  EXPECT_EQ(got.dtype(), want.dtype()) << name;
  EXPECT_EQ(got.dims(), want.dims()) << name;
  ASSERT_EQ(got.nbytes(), want.nbytes()) << name;
  EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()), 0) << name;
}

OperatorDef SaveDef(const std::vector<std::string>& blobs, const std::string& db,
                    std::vector<Argument> extra = {}) {
  extra.push_back(MakeArgument("db", db));
  extra.push_back(MakeArgument("db_type", "minidb"));
  return MakeOperatorDef("Save", "", blobs, {}, extra);
}

OperatorDef LoadDef(const std::vector<std::string>& blobs, const std::string& db,
                    std::vector<Argument> extra = {}) {
  extra.push_back(MakeArgument("db", db));
  extra.push_back(MakeArgument("db_type", "minidb"));
  return MakeOperatorDef("Load", "", {}, blobs, extra);
}

TEST_F(LoadSaveTest, RoundTripTextAndBinary) {
  for (const std::string db : {"ckpt.pbtxt", "ckpt.pb"}) {
    Workspace src(dir_);
    FillWorkspace(&src);
    CreateOperator(SaveDef(kNames, db), &src)->Run(0);
    const std::string bytes = ReadFile(db);
    EXPECT_EQ(LooksLikeText(bytes), db == "ckpt.pbtxt") << db;
    if (db == "ckpt.pbtxt") EXPECT_NE(bytes.find("data_type: BFLOAT16"), std::string::npos);

    Workspace dst(dir_);
    CreateOperator(LoadDef(kNames, db), &dst)->Run(0);
    for (const auto& name : kNames) {
      ExpectSameTensor(dst.GetTensor(name), src.GetTensor(name), db + ": " + name);
    }
  }
}

TEST_F(LoadSaveTest, LoadAll) {
  Workspace src(dir_);
  FillWorkspace(&src);
  CreateOperator(SaveDef(kNames, "all.pb"), &src)->Run(0);
  Workspace dst(dir_);
  CreateOperator(LoadDef({}, "all.pb", {MakeArgument("load_all", true)}), &dst)->Run(0);
  EXPECT_EQ(dst.Blobs(), (std::vector<std::string>{"bf", "f", "h", "i32", "i64", "scalar"}));
  for (const auto& name : kNames) ExpectSameTensor(dst.GetTensor(name), src.GetTensor(name), name);
}

TEST_F(LoadSaveTest, MissingBlobNamesBlobAndFile) {
  Workspace src(dir_);
  FillWorkspace(&src);
  CreateOperator(SaveDef({"f"}, "one.pb"), &src)->Run(0);
  Workspace dst(dir_);
  SetInput(&dst, "f", FloatTensor({1}, {-3.f}));
  try {
    CreateOperator(LoadDef({"f", "absent"}, "one.pb"), &dst)->Run(0);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("blob 'absent' is not in " + dir_ + "/one.pb"), std::string::npos) << msg;
    EXPECT_NE(msg.find("holds 1 tensors: f"), std::string::npos) << msg;
  }
  // Nothing was written: f keeps its old value.
  EXPECT_EQ(ToFloatVector(dst.GetTensor("f")), (std::vector<float>{-3.f}));
}

TEST_F(LoadSaveTest, NoTempFilesLeftAndExistingFileReplacedAtomically) {
  const std::string path = dir_ + "/ckpt.pb";
  { std::ofstream(path) << "old contents"; }
  // A second name for the old file: an in-place overwrite would change what it shows; an atomic
  // replace (write a new file, rename over the old name) leaves it alone.
  ASSERT_EQ(::link(path.c_str(), (dir_ + "/old_link").c_str()), 0);
  Workspace ws(dir_);
  FillWorkspace(&ws);
  CreateOperator(SaveDef(kNames, "ckpt.pb"), &ws)->Run(0);
  EXPECT_EQ(ReadFile("old_link"), "old contents");
  EXPECT_NE(ReadFile("ckpt.pb"), "old contents");
  EXPECT_EQ(DirEntries(), (std::vector<std::string>{"ckpt.pb", "old_link"}));
  // And the replacement is a complete checkpoint.
  Workspace dst(dir_);
  CreateOperator(LoadDef({"i64"}, "ckpt.pb"), &dst)->Run(0);
  ExpectSameTensor(dst.GetTensor("i64"), ws.GetTensor("i64"), "i64");
}

TEST_F(LoadSaveTest, NameOverridesAndPrefixes) {
  Workspace src(dir_);
  SetInput(&src, "gpu_0/w", FloatTensor({2}, {1.f, 2.f}));
  SetInput(&src, "gpu_0/b", FloatTensor({1}, {3.f}));
  CreateOperator(SaveDef({"gpu_0/w", "gpu_0/b"}, "strip.pbtxt",
                         {MakeArgument("strip_prefix", "gpu_0/")}),
                 &src)
      ->Run(0);
  CreateOperator(SaveDef({"gpu_0/w"}, "renamed.pbtxt",
                         {MakeArgument("blob_name_overrides", std::vector<std::string>{"W"})}),
                 &src)
      ->Run(0);
  EXPECT_NE(ReadFile("strip.pbtxt").find("name: \"w\""), std::string::npos);
  EXPECT_NE(ReadFile("renamed.pbtxt").find("name: \"W\""), std::string::npos);

  Workspace dst(dir_);
  // Loading from a stored name into another blob.
  CreateOperator(LoadDef({"x"}, "renamed.pbtxt",
                         {MakeArgument("source_blob_names", std::vector<std::string>{"W"})}),
                 &dst)
      ->Run(0);
  EXPECT_EQ(ToFloatVector(dst.GetTensor("x")), (std::vector<float>{1.f, 2.f}));
  // Load's strip_prefix applies to the stored names.
  Workspace prefixed(dir_);
  CreateOperator(SaveDef({"gpu_0/w"}, "prefixed.pb"), &src)->Run(0);
  CreateOperator(LoadDef({"w"}, "prefixed.pb", {MakeArgument("strip_prefix", "gpu_0/")}),
                 &prefixed)
      ->Run(0);
  EXPECT_EQ(ToFloatVector(prefixed.GetTensor("w")), (std::vector<float>{1.f, 2.f}));
}

TEST_F(LoadSaveTest, AbsolutePath) {
  Workspace src("/nonexistent_root");
  SetInput(&src, "v", FloatTensor({1}, {4.f}));
  const std::string path = dir_ + "/abs.pb";
  CreateOperator(SaveDef({"v"}, path, {MakeArgument("absolute_path", true)}), &src)->Run(0);
  Workspace dst("/another_nonexistent_root");
  CreateOperator(LoadDef({"v"}, path, {MakeArgument("absolute_path", true)}), &dst)->Run(0);
  EXPECT_EQ(ToFloatVector(dst.GetTensor("v")), (std::vector<float>{4.f}));
}

std::string CreateError(const OperatorDef& def, Workspace* ws) { return RunOpError(def, {}, ws); }

TEST_F(LoadSaveTest, Errors) {
  Workspace ws(dir_);
  SetInput(&ws, "v", FloatTensor({1}, {4.f}));
  std::string e = CreateError(MakeOperatorDef("Save", "", {"v"}, {}), &ws);
  EXPECT_NE(e.find("needs the argument `db`"), std::string::npos) << e;
  e = CreateError(
      MakeOperatorDef("Save", "", {"v"}, {},
                      {MakeArgument("db", "x.db"), MakeArgument("db_type", "leveldb")}),
      &ws);
  EXPECT_NE(e.find("db_type 'leveldb' is not supported; use minidb, protodb or tensorprotos"),
            std::string::npos)
      << e;
  const std::vector<std::string> two_names = {"a", "b"};
  e = CreateError(SaveDef({"v"}, "x.pb", {MakeArgument("blob_name_overrides", two_names)}), &ws);
  EXPECT_NE(e.find("blob_name_overrides has 2 names but there are 1 blobs"), std::string::npos)
      << e;
  ws.CreateBlob("empty");
  e = CreateError(SaveDef({"empty"}, "x.pb"), &ws);
  EXPECT_NE(e.find("blob 'empty' is empty"), std::string::npos) << e;
  e = CreateError(LoadDef({}, "x.pb"), &ws);
  EXPECT_NE(e.find("or load_all = 1"), std::string::npos) << e;
  e = CreateError(LoadDef({"v"}, "x.pb", {MakeArgument("load_all", true)}), &ws);
  EXPECT_NE(e.find("takes no outputs"), std::string::npos) << e;
  e = CreateError(LoadDef({"v"}, "no_such_file.pb"), &ws);
  EXPECT_NE(e.find(dir_ + "/no_such_file.pb: cannot open file"), std::string::npos) << e;
  EXPECT_EQ(DirEntries(), std::vector<std::string>{});
}

TEST(LoadSaveGradientTest, NoGradient) {
  EXPECT_TRUE(GetGradientForOp(MakeOperatorDef("Save", "", {"v"}, {}), {}).ops.empty());
  EXPECT_TRUE(
      GetGradientForOp(MakeOperatorDef("Load", "", {}, {"v"}), {GradientWrapper{}}).ops.empty());
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
