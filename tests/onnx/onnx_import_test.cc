// The ONNX importer on models from ONNX's backend test data (Debian's libonnx-testdata; skipped
// without it): what the nets look like, constant folding, refusals that name the node, bad files.
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "core/workspace.h"
#include "onnx/onnx_import.h"

namespace halfcaf {
namespace testing {
namespace {

const std::string kNode = "/usr/share/libonnx-testdata/data/node/";

class OnnxImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!OnnxAvailable()) GTEST_SKIP() << OnnxMissingHint();
    struct stat st;
    if (stat(kNode.c_str(), &st) != 0) GTEST_SKIP() << "libonnx-testdata is not installed";
  }
  static std::string Model(const std::string& test) { return kNode + test + "/model.onnx"; }
  static std::string Data(const std::string& test, const std::string& file) {
    return kNode + test + "/test_data_set_0/" + file;
  }
};

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

template <typename F>
std::string ErrorOf(F&& f) {
  try {
    f();
  } catch (const EnforceNotMet& e) {
    return e.what();
  }
  return "";
}

TEST_F(OnnxImportTest, ConvImportsAsOneConvWithOnnxPads) {
  const ImportedNet net = ImportOnnxFile(Model("test_conv_with_strides_padding"));
  EXPECT_EQ(net.opset, 11);
  ASSERT_EQ(net.predict.op_size(), 1);
  EXPECT_EQ(net.predict.op(0).type(), "Conv");
  ASSERT_EQ(net.inputs.size(), 2u);
  EXPECT_EQ(net.inputs[0].name, "x");
  EXPECT_EQ(net.inputs[0].dims, (std::vector<int64_t>{1, 1, 7, 5}));
  ASSERT_EQ(net.outputs.size(), 1u);
  EXPECT_EQ(net.outputs[0].dims, (std::vector<int64_t>{1, 1, 4, 3}));
}

// Gemm with alpha, beta and a matrix C: the product, its scaling and the bias add, checked
// against the expected output.
TEST_F(OnnxImportTest, GemmWithAllAttributesMatchesTheExpectedOutput) {
  const std::string t = "test_gemm_all_attributes";
  const ImportedNet net = ImportOnnxFile(Model(t));
  Workspace ws;
  ws.RunNetOnce(net.init);
  for (size_t i = 0; i < net.inputs.size(); ++i) {
    ReadOnnxTensorFile(Data(t, "input_" + std::to_string(i) + ".pb"),
                       ws.CreateTensor(net.inputs[i].name));
  }
  ws.RunNetOnce(net.predict);
  Tensor want;
  ReadOnnxTensorFile(Data(t, "output_0.pb"), &want);
  const Tensor& got = ws.GetTensor(net.outputs[0].name);
  ASSERT_EQ(got.dims(), want.dims());
  for (int64_t i = 0; i < want.numel(); ++i) {
    EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5f) << i;
  }
}

// Shape of a static input folds to a constant: no op runs, the init net fills the output.
TEST_F(OnnxImportTest, ShapeFoldsToAConstant) {
  const ImportedNet net = ImportOnnxFile(Model("test_shape"));
  EXPECT_EQ(net.predict.op_size(), 0);
  ASSERT_EQ(net.init.op_size(), 1);
  EXPECT_EQ(net.init.op(0).type(), "GivenTensorInt64Fill");
  EXPECT_EQ(net.init.op(0).output(0), net.outputs[0].name);
}

TEST_F(OnnxImportTest, UnsupportedNodesAreNamed) {
  const std::string err = ErrorOf([&] { ImportOnnxFile(Model("test_tril")); });
  EXPECT_NE(err.find("node '"), std::string::npos) << err;
  EXPECT_NE(err.find("Trilu"), std::string::npos) << err;
  EXPECT_NE(err.find("opset 14"), std::string::npos) << err;
  EXPECT_NE(err.find("not supported"), std::string::npos) << err;
  try {
    ImportOnnxFile(Model("test_tril"));
    FAIL() << "imported";
  } catch (const OnnxUnsupported&) {
  }
  // An attribute halfcaf cannot honour is refused, never ignored.
  const std::string dil = ErrorOf([&] { ImportOnnxFile(Model("test_maxpool_2d_dilations")); });
  EXPECT_NE(dil.find("dilations"), std::string::npos) << dil;
}

TEST_F(OnnxImportTest, BadFilesAreClearErrors) {
  EXPECT_NE(ErrorOf([] { ImportOnnxFile("/nonexistent/model.onnx"); }).find("/nonexistent"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { ImportOnnxBytes("not a protobuf at all", "junk.onnx"); })
                .find("not an ONNX model"),
            std::string::npos);
  // Every truncation of a real model is an error or a smaller valid model, never a crash.
  const std::string bytes = ReadAll(Model("test_conv_with_strides_padding"));
  ASSERT_GT(bytes.size(), 50u);
  for (size_t n = 0; n < bytes.size(); n += 7) {
    try {
      ImportOnnxBytes(bytes.substr(0, n), "truncated.onnx");
    } catch (const EnforceNotMet&) {
    }
  }
}

// A symbolic batch dim is fixed by the caller's option (every input's first dim).
TEST_F(OnnxImportTest, InputDimsOptionFixesSymbolicDims) {
  OnnxImportOptions o;
  o.input_dims["x"] = {1, 1, 7, 5};
  const ImportedNet net = ImportOnnxFile(Model("test_conv_with_strides_padding"), o);
  EXPECT_EQ(net.inputs[0].dims, (std::vector<int64_t>{1, 1, 7, 5}));
  o.input_dims["x"] = {1, 2};
  EXPECT_NE(ErrorOf([&] { ImportOnnxFile(Model("test_conv_with_strides_padding"), o); })
                .find("2 were given"),
            std::string::npos);
}

TEST_F(OnnxImportTest, ReadsOnnxTensorFiles) {
  Tensor t;
  std::string name;
  ReadOnnxTensorFile(Data("test_conv_with_strides_padding", "input_0.pb"), &t, &name);
  EXPECT_EQ(name, "x");
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{1, 1, 7, 5}));
  EXPECT_EQ(t.dtype(), DataType::FLOAT);
  EXPECT_NE(ErrorOf([&] { ReadOnnxTensorFile(Model("test_conv_with_strides_padding"), &t); }),
            "");
}

std::vector<std::string> OpTypes(const NetDef& net) {
  std::vector<std::string> types;
  for (const auto& op : net.op()) types.push_back(op.type());
  return types;
}

bool HasArg(const OperatorDef& op, const std::string& name) {
  for (const auto& a : op.arg()) {
    if (a.name() == name) return true;
  }
  return false;
}

// Broadcasting binary nodes keep Caffe2's legacy form where it applies and otherwise use the
// ops' NumPy broadcasting (no broadcast argument); Pow and PRelu use the latter too. The values
// are checked by the conformance test.
TEST_F(OnnxImportTest, BroadcastingNodesUseLegacyOrNumpyBroadcast) {
  ImportedNet net = ImportOnnxFile(Model("test_add_bcast"));  // [3, 4, 5] + [5]
  ASSERT_EQ(OpTypes(net.predict), (std::vector<std::string>{"Add"}));
  EXPECT_TRUE(HasArg(net.predict.op(0), "broadcast"));

  // Sub(X [3, 4, 5], ReduceMax(X) [3, 1, 5]): a size-1 dim inside B.
  net = ImportOnnxFile(Model("test_softmax_axis_1_expanded"));
  int subs = 0;
  for (const auto& op : net.predict.op()) {
    if (op.type() != "Sub") continue;
    ++subs;
    EXPECT_FALSE(HasArg(op, "broadcast"));
  }
  EXPECT_EQ(subs, 1);

  // Pow(x [3, 2], y [2]): y multiplied by ones of [3, 2] first.
  net = ImportOnnxFile(Model("test_pow_bcast_array"));
  EXPECT_EQ(OpTypes(net.predict), (std::vector<std::string>{"Mul", "Pow"}));
  EXPECT_FALSE(HasArg(net.predict.op(0), "broadcast"));

  // PRelu with a slope of X's shape: Relu(x) - Relu(-x) * slope; a slope of [5] for [3, 4, 5]
  // takes the legacy Mul.
  net = ImportOnnxFile(Model("test_prelu_example"));
  EXPECT_EQ(OpTypes(net.predict),
            (std::vector<std::string>{"Relu", "Negative", "Relu", "Mul", "Sub"}));
  EXPECT_FALSE(HasArg(net.predict.op(3), "broadcast"));
  net = ImportOnnxFile(Model("test_prelu_broadcast"));
  ASSERT_EQ(net.predict.op_size(), 5);
  EXPECT_TRUE(HasArg(net.predict.op(3), "broadcast"));
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
