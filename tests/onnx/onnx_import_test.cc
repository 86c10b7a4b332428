// The ONNX importer on models from ONNX's backend test data (Debian's libonnx-testdata; skipped
// without it) and on a few of its own (tests/fixtures/onnx, written by make_onnx_fixtures.py):
// what the nets look like, constant folding, refusals that name the node, bad files.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "core/argument.h"
#include "core/workspace.h"
#include "onnx/onnx_import.h"
#include "tests/util/source_dir.h"

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

// Resize nearest with sizes: ONNX's scale is sizes / dims in double, ResizeNearest's a float. When
// the two pick different pixels (6 rows to 5, half_pixel: output row 2 sits exactly half-way
// between input rows 2 and 3 in exact arithmetic) the node is refused, naming the modes.
TEST_F(OnnxImportTest, ResizeNearestThatWouldPickAnotherPixelIsRefused) {
  const std::string t = "test_resize_downsample_sizes_nearest";
  OnnxImportOptions o;
  o.input_dims["X"] = {1, 1, 6, 4};
  Tensor sizes(std::vector<int64_t>{4}, DataType::INT64);
  const int64_t five_by_three[] = {1, 1, 5, 3};
  std::copy(five_by_three, five_by_three + 4, sizes.mutable_data<int64_t>());
  o.constant_inputs["sizes"] = sizes;
  const std::string err = ErrorOf([&] { ImportOnnxFile(Model(t), o); });
  EXPECT_NE(err.find("node 'Y' (Resize, opset 13)"), std::string::npos) << err;
  EXPECT_NE(err.find("coordinate_transformation_mode half_pixel and nearest_mode "
                     "round_prefer_floor: output 2 of dim 2 reads input 2 in ONNX's definition"),
            std::string::npos)
      << err;
  // 4 rows to 2 (a float scale of 0.5 is exact): imported, as ResizeNearest with both modes.
  sizes.mutable_data<int64_t>()[2] = 2;
  o.constant_inputs["sizes"] = sizes;
  o.input_dims["X"] = {1, 1, 4, 4};
  const ImportedNet net = ImportOnnxFile(Model(t), o);
  ASSERT_EQ(net.predict.op_size(), 1);
  EXPECT_EQ(net.predict.op(0).type(), "ResizeNearest");
  const ArgumentHelper args(net.predict.op(0));
  EXPECT_EQ(args.GetSingleArgument<std::string>("coordinate_transformation_mode", ""),
            "half_pixel");
  EXPECT_EQ(args.GetSingleArgument<std::string>("nearest_mode", ""), "round_prefer_floor");
}

// AveragePool with count_include_pad=1 and padding: zero padding first, then pooling without
// pads (so every window lies inside the input and the divisor is the whole kernel).
TEST_F(OnnxImportTest, AveragePoolCountingPadsPadsFirst) {
  const ImportedNet net = ImportOnnxFile(Model("test_averagepool_2d_pads_count_include_pad"));
  ASSERT_EQ(net.predict.op_size(), 2);
  const OperatorDef& pad = net.predict.op(0);
  const OperatorDef& pool = net.predict.op(1);
  EXPECT_EQ(pad.type(), "PadImage");
  EXPECT_EQ(ArgumentHelper(pad).GetRepeatedArgument<int64_t>("pads"),
            (std::vector<int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(pool.type(), "AveragePool");
  EXPECT_EQ(pool.input(0), pad.output(0));
  EXPECT_EQ(ArgumentHelper(pool).GetRepeatedArgument<int64_t>("pads"),
            (std::vector<int64_t>{0, 0, 0, 0}));
  // Without count_include_pad the pads stay on the pool.
  const ImportedNet plain = ImportOnnxFile(Model("test_averagepool_2d_pads"));
  ASSERT_EQ(plain.predict.op_size(), 1);
  EXPECT_EQ(ArgumentHelper(plain.predict.op(0)).GetRepeatedArgument<int64_t>("pads"),
            (std::vector<int64_t>{2, 2, 2, 2}));
}

// What the lowering cannot do exactly is refused, naming the node, the attribute and the opset.
TEST_F(OnnxImportTest, AveragePoolCountingPadsRefusals) {
  const std::string dir = SourceDir() + "/tests/fixtures/onnx/";
  const std::string ceil =
      ErrorOf([&] { ImportOnnxFile(dir + "averagepool_ceil_count_include_pad.onnx"); });
  EXPECT_NE(ceil.find("node 'pool' (AveragePool, opset 11): count_include_pad=1 with ceil_mode "
                      "windows that run past the padding is not supported"),
            std::string::npos)
      << ceil;
  const std::string one_d =
      ErrorOf([&] { ImportOnnxFile(dir + "averagepool_1d_count_include_pad.onnx"); });
  EXPECT_NE(one_d.find("node 'pool1d' (AveragePool, opset 11): count_include_pad=1 with padding "
                       "is supported for 2-D pooling only"),
            std::string::npos)
      << one_d;
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

}  // namespace
}  // namespace testing
}  // namespace halfcaf
