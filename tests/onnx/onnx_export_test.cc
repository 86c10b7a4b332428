// ONNX export: zoo nets (LeNet, ResNet-18, ResNet-50 in test mode) and one-operator nets
// (export_cases.h) exported, checked by ONNX's checker, imported back, and their outputs compared
// with the original nets'; refusals.
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "core/argument.h"
#include "core/workspace.h"
#include "models/model_helper.h"
#include "models/zoo.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "tests/onnx/export_cases.h"

namespace halfcaf {
namespace testing {
namespace {

template <typename F>
std::string ErrorOf(F&& f) {
  try {
    f();
  } catch (const EnforceNotMet& e) {
    return e.what();
  }
  return "";
}

Tensor RandomInput(const std::vector<int64_t>& dims, uint32_t seed) {
  Tensor t(dims, DataType::FLOAT);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = u(rng);
  return t;
}

// The original net (test mode, with a dummy label) against its export imported back. The init
// net draws random weights: the export takes the original workspace's.
void ExpectRoundTrip(const ModelHelper& model, const std::vector<int64_t>& dims) {
  Workspace original;
  original.RunNetOnce(model.init_net());
  OnnxExportOptions o;
  o.input_dims[kZooData] = dims;
  const std::string bytes = ExportOnnx(model.init_net(), model.net(), o, &original);
  const ImportedNet back = ImportOnnxBytes(bytes, "exported.onnx");
  ASSERT_EQ(back.inputs.size(), 1u);
  EXPECT_EQ(back.inputs[0].name, kZooData);
  ASSERT_EQ(back.outputs.size(), 1u);
  EXPECT_EQ(back.outputs[0].name, kZooSoftmax);

  const Tensor x = RandomInput(dims, 7);
  original.CreateTensor(kZooData)->CopyFrom(x);
  Tensor* label = original.CreateTensor(kZooLabel);
  *label = Tensor(std::vector<int64_t>{dims[0]}, DataType::INT32);
  for (int64_t i = 0; i < dims[0]; ++i) label->mutable_data<int32_t>()[i] = 0;
  original.RunNetOnce(model.net());

  Workspace imported;
  imported.RunNetOnce(back.init);
  imported.CreateTensor(kZooData)->CopyFrom(x);
  imported.RunNetOnce(back.predict);
  const Tensor& want = original.GetTensor(kZooSoftmax);
  const Tensor& got = imported.GetTensor(kZooSoftmax);
  ASSERT_EQ(got.dims(), want.dims());
  for (int64_t i = 0; i < want.numel(); ++i) {
    EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5f) << i;
  }
}

class OnnxExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!OnnxAvailable()) GTEST_SKIP() << OnnxMissingHint();
  }
};

TEST_F(OnnxExportTest, LeNetRoundTrips) {
  ModelHelper m("lenet", "NCHW", /*is_test=*/true);
  BuildLeNet(&m);
  ExpectRoundTrip(m, {3, 1, 28, 28});
}

TEST_F(OnnxExportTest, ResNetsRoundTrip) {
  for (int depth : {18, 50}) {
    SCOPED_TRACE(depth);
    ModelHelper m("resnet", "NCHW", /*is_test=*/true);
    BuildResNet(&m, depth, 10, 64);
    ExpectRoundTrip(m, {2, 3, 64, 64});
  }
}

TEST_F(OnnxExportTest, OperatorsRoundTrip) {
  for (const ExportCase& c : ExportCases()) {
    SCOPED_TRACE(c.name);
    OnnxExportOptions o;
    o.input_dims["x"] = c.x_dims;
    const ImportedNet back = ImportOnnxBytes(ExportOnnx(c.init, c.predict, o), c.name);
    const Tensor x = RandomInput(c.x_dims, 11);
    Workspace original, imported;
    original.RunNetOnce(c.init);
    original.CreateTensor("x")->CopyFrom(x);
    original.RunNetOnce(c.predict);
    imported.RunNetOnce(back.init);
    imported.CreateTensor("x")->CopyFrom(x);
    imported.RunNetOnce(back.predict);
    const Tensor& want = original.GetTensor("y");
    const Tensor& got = imported.GetTensor("y");
    ASSERT_EQ(got.dims(), want.dims());
    ASSERT_EQ(got.dtype(), want.dtype());
    for (int64_t i = 0; i < want.numel(); ++i) {
      if (want.dtype() == DataType::INT64) {
        EXPECT_EQ(got.data<int64_t>()[i], want.data<int64_t>()[i]) << i;
      } else {
        EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-6f) << i;
      }
    }
  }
}

// A one-op net on input "x" (output "y") exported and imported back; returns the imported net
// after checking that it gives exactly the original's y for x.
ImportedNet ExpectExactRoundTrip(const OperatorDef& op, const Tensor& x) {
  NetDef net;
  *net.add_op() = op;
  OnnxExportOptions o;
  o.input_dims["x"] = x.dims();
  ImportedNet back = ImportOnnxBytes(ExportOnnx(NetDef(), net, o), "exported.onnx");
  Workspace original, imported;
  original.CreateTensor("x")->CopyFrom(x);
  original.RunNetOnce(net);
  imported.RunNetOnce(back.init);
  imported.CreateTensor("x")->CopyFrom(x);
  imported.RunNetOnce(back.predict);
  const Tensor& want = original.GetTensor("y");
  const Tensor& got = imported.GetTensor("y");
  EXPECT_EQ(got.dims(), want.dims());
  if (got.dims() == want.dims()) {
    for (int64_t i = 0; i < want.numel(); ++i) {
      EXPECT_EQ(got.data<float>()[i], want.data<float>()[i]) << i;
    }
  }
  return back;
}

// ResizeNearest's coordinate modes survive the round trip: the same pixels come back.
TEST_F(OnnxExportTest, ResizeNearestModesRoundTrip) {
  const Tensor x = RandomInput({1, 2, 4, 6}, 3);
  for (const auto& modes : std::vector<std::pair<std::string, std::string>>{
           {"", ""},
           {"half_pixel", "round_prefer_ceil"},
           {"align_corners", "round_prefer_floor"},
           {"tf_half_pixel_for_nn", "ceil"}}) {
    SCOPED_TRACE(modes.first + " / " + modes.second);
    std::vector<Argument> args{MakeArgument("height_scale", 1.5f),
                               MakeArgument("width_scale", 2.5f)};
    if (!modes.first.empty()) {
      args.push_back(MakeArgument("coordinate_transformation_mode", modes.first));
      args.push_back(MakeArgument("nearest_mode", modes.second));
    }
    ExpectExactRoundTrip(MakeOperatorDef("ResizeNearest", "up", {"x"}, {"y"}, args), x);
  }
}

// Dilated max pooling exports with its dilations and comes back the same; dilated average
// pooling (ONNX opset 19) is refused.
TEST_F(OnnxExportTest, DilatedMaxPoolRoundTrips) {
  const Tensor x = RandomInput({2, 3, 9, 8}, 5);
  const std::vector<Argument> args{MakeArgument("kernels", std::vector<int64_t>{3, 2}),
                                   MakeArgument("dilations", std::vector<int64_t>{2, 3}),
                                   MakeArgument("pads", std::vector<int64_t>{1, 0, 2, 1})};
  const ImportedNet back =
      ExpectExactRoundTrip(MakeOperatorDef("MaxPool", "pool", {"x"}, {"y"}, args), x);
  ASSERT_EQ(back.predict.op_size(), 1);
  EXPECT_EQ(ArgumentHelper(back.predict.op(0)).GetRepeatedArgument<int64_t>("dilations"),
            (std::vector<int64_t>{2, 3}));
  NetDef avg;
  *avg.add_op() = MakeOperatorDef("AveragePool", "avg", {"x"}, {"y"}, args);
  OnnxExportOptions o;
  o.input_dims["x"] = x.dims();
  const std::string err = ErrorOf([&] { ExportOnnx(NetDef(), avg, o); });
  EXPECT_NE(err.find("dilated average pooling is not exported"), std::string::npos) << err;
}

TEST_F(OnnxExportTest, RefusalsNameTheProblem) {
  ModelHelper m("lenet", "NCHW", true);
  BuildLeNet(&m);
  EXPECT_NE(ErrorOf([&] { ExportOnnx(m.init_net(), m.net(), OnnxExportOptions{}); })
                .find("give the shape of input 'data'"),
            std::string::npos);
  NetDef net = m.net();
  *net.add_op() = MakeOperatorDef("Summarize", "stats", {kZooSoftmax}, {"summary"});
  OnnxExportOptions o;
  o.input_dims[""] = {1, 1, 28, 28};
  const std::string err = ErrorOf([&] { ExportOnnx(m.init_net(), net, o); });
  EXPECT_NE(err.find("Summarize 'stats'"), std::string::npos) << err;
  EXPECT_NE(err.find("no ONNX export"), std::string::npos) << err;
  NetDef nhwc;
  *nhwc.add_op() = MakeOperatorDef("MaxPool", "", {"x"}, {"y"},
                                   {MakeArgument("kernel", 2), MakeArgument("order", "NHWC")});
  o.input_dims[""] = {1, 4, 4, 1};
  EXPECT_NE(ErrorOf([&] { ExportOnnx(NetDef(), nhwc, o); }).find("only NCHW"), std::string::npos);
  NetDef last;
  *last.add_op() = MakeOperatorDef("ArgMax", "", {"x"}, {"y"}, {MakeArgument("select_last_index", 1)});
  EXPECT_NE(ErrorOf([&] { ExportOnnx(NetDef(), last, o); }).find("select_last_index needs opset 12"),
            std::string::npos);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
