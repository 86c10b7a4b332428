#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/gradient.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

GradientWrapper DenseGrad(const std::string& name) {
  GradientWrapper g;
  g.dense = name;
  return g;
}

namespace fs = std::filesystem;

class DebugOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "halfcaf_print_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> Lines(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name);
    EXPECT_TRUE(in.good()) << name << " was not created";
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  std::string dir_;
};

TEST_F(DebugOpsTest, SummarizeValues) {
  auto def = MakeOperatorDef("Summarize", "", {"X"}, {"s"});
  // mean 2.5; squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5; std = sqrt(5 / 3)
  const std::vector<float> want = {1.f, 4.f, 2.5f, std::sqrt(5.f / 3.f)};
  Workspace ws;
  RunOp(def, {{"X", FloatTensor({2, 2}, {3.f, 1.f, 4.f, 2.f})}}, &ws);
  EXPECT_EQ(ws.GetTensor("s").dims(), (std::vector<int64_t>{4}));
  EXPECT_EQ(ws.GetTensor("s").dtype(), DataType::FLOAT);
  ExpectNear(ToFloatVector(ws.GetTensor("s")), want, 1e-6f, 0.f);
  // float16 input (values exact in float16), float output.
  Workspace ws16;
  RunOp(def, {{"X", ToHalf(FloatTensor({4}, {3.f, 1.f, 4.f, 2.f}))}}, &ws16);
  EXPECT_EQ(ws16.GetTensor("s").dtype(), DataType::FLOAT);
  ExpectNear(ToFloatVector(ws16.GetTensor("s")), want, 1e-6f, 0.f);
  // One element: std 0.
  EXPECT_EQ(RunAndGet(def, {{"X", FloatTensor({1}, {-2.f})}}),
            (std::vector<float>{-2.f, -2.f, -2.f, 0.f}));
}

TEST_F(DebugOpsTest, SummarizeToFile) {
  Workspace ws(dir_);
  SetInput(&ws, "X", FloatTensor({2}, {1.f, 3.f}));
  auto op = CreateOperator(
      MakeOperatorDef("Summarize", "", {"X"}, {}, {MakeArgument("to_file", 1)}), &ws);
  op->Run(0);
  SetInput(&ws, "X", FloatTensor({1}, {5.f}));
  op->Run(0);
  auto lines = Lines("X.summary");
  ASSERT_EQ(lines.size(), 2u);
  std::istringstream first(lines[0]);
  float mn, mx, mean, sd;
  first >> mn >> mx >> mean >> sd;
  EXPECT_EQ(mn, 1.f);
  EXPECT_EQ(mx, 3.f);
  EXPECT_EQ(mean, 2.f);
  EXPECT_NEAR(sd, std::sqrt(2.f), 1e-6f);
  EXPECT_EQ(lines[1], "5 5 5 0");
}

TEST_F(DebugOpsTest, SummarizeErrors) {
  Workspace ws;
  try {
    RunOp(MakeOperatorDef("Summarize", "", {"X"}, {"s"}), {{"X", IntTensor({2}, {1, 2})}}, &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("must be float, float16 or bfloat16"), std::string::npos)
        << e.what();
  }
  try {
    RunOp(MakeOperatorDef("Summarize", "", {"E"}, {"s"}), {{"E", FloatTensor({0}, {})}}, &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("at least one element"), std::string::npos)
        << e.what();
  }
}

TEST_F(DebugOpsTest, PrintToFileCreatesAndAppendsLog) {
  Workspace ws(dir_);
  SetInput(&ws, "X", FloatTensor({2, 2}, {1.f, -2.5f, 3.f, 4.f}));
  auto op =
      CreateOperator(MakeOperatorDef("Print", "", {"X"}, {}, {MakeArgument("to_file", 1)}), &ws);
  op->Run(0);
  EXPECT_EQ(Lines("X.log"), (std::vector<std::string>{"X (float[2, 2]): 1 -2.5 3 4"}));
  // A second op (a new run of the program) appends to the same file.
  auto again =
      CreateOperator(MakeOperatorDef("Print", "", {"X"}, {}, {MakeArgument("to_file", 1)}), &ws);
  again->Run(0);
  EXPECT_EQ(Lines("X.log").size(), 2u);
}

TEST_F(DebugOpsTest, PrintLimitEveryNAndSlashInName) {
  Workspace ws(dir_);
  Tensor ints({5}, DataType::INT64);
  for (int i = 0; i < 5; ++i) ints.mutable_data<int64_t>()[i] = 10 * i;
  SetInput(&ws, "gpu_0/x", ints);
  auto op = CreateOperator(
      MakeOperatorDef("Print", "", {"gpu_0/x"}, {},
                      {MakeArgument("to_file", 1), MakeArgument("limit", 2),
                       MakeArgument("every_n", 2)}),
      &ws);
  for (int i = 0; i < 3; ++i) op->Run(0);  // prints on runs 1 and 3
  EXPECT_EQ(Lines("gpu_0_x.log"),
            (std::vector<std::string>{"gpu_0/x (int64[5]): 0 10 ... (3 more)",
                                      "gpu_0/x (int64[5]): 0 10 ... (3 more)"}));
}

TEST_F(DebugOpsTest, PrintToStderr) {
  Workspace ws(dir_);
  SetInput(&ws, "h", ToHalf(FloatTensor({2}, {0.5f, 2.f})));
  ws.CreateBlob("nothing");
  auto op = CreateOperator(MakeOperatorDef("Print", "", {"h"}, {}), &ws);
  auto empty = CreateOperator(MakeOperatorDef("Print", "", {"nothing"}, {}), &ws);
  ::testing::internal::CaptureStderr();
  op->Run(0);
  empty->Run(0);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("h (float16[2]): 0.5 2\n"), std::string::npos) << err;
  EXPECT_NE(err.find("nothing: (empty blob)"), std::string::npos) << err;
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(DebugOpsTest, PrintBadArguments) {
  Workspace ws;
  SetInput(&ws, "X", FloatTensor({1}, {1.f}));
  try {
    CreateOperator(MakeOperatorDef("Print", "", {"X"}, {}, {MakeArgument("every_n", 0)}), &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("every_n must be >= 1, got 0"), std::string::npos)
        << e.what();
  }
  try {
    CreateOperator(MakeOperatorDef("Print", "", {"X"}, {}, {MakeArgument("limit", -1)}), &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("limit"), std::string::npos) << e.what();
  }
}

TEST(DebugOpsGradientTest, ShouldNotDoGradient) {
  EXPECT_THROW(GetGradientForOp(MakeOperatorDef("Print", "", {"X"}, {}), {}), EnforceNotMet);
  EXPECT_THROW(GetGradientForOp(MakeOperatorDef("Summarize", "", {"X"}, {"s"}),
                                {DenseGrad("s_grad")}),
               EnforceNotMet);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
