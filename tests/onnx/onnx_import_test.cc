// The ONNX importer on models from ONNX's backend test data (Debian's libonnx-testdata; skipped
// without it) and on a few of its own (tests/fixtures/onnx, written by make_onnx_fixtures.py):
// what the nets look like, constant folding, refusals that name the node, bad files.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "core/argument.h"
#include "core/bfloat16.h"
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
  const std::string ex = ErrorOf(
      [&] { ImportOnnxFile(Model("test_resize_upsample_scales_cubic_A_n0p5_exclude_outside")); });
  EXPECT_NE(ex.find("exclude_outside=1 is not supported"), std::string::npos) << ex;
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
  const std::pair<const char*, const char*> cases[] = {
      {"averagepool_ceil_count_include_pad.onnx",
       "node 'pool' (AveragePool, opset 11): count_include_pad=1 with ceil_mode windows that run "
       "past the padding is not supported"},
      {"averagepool_1d_count_include_pad.onnx",
       "node 'pool1d' (AveragePool, opset 11): count_include_pad=1 with padding is supported for "
       "2-D pooling only"}};
  for (const auto& c : cases) {
    const std::string err = ErrorOf([&] { ImportOnnxFile(dir + c.first); });
    EXPECT_NE(err.find(c.second), std::string::npos) << err;
  }
}

// The indices ONNX's Slice keeps along a dim of size d, from its specification: start and end
// counted from the end when negative, then clamped ([0, d] with a positive step; start to
// [0, d - 1] and end to [-1, d - 1] with a negative one); every index from start towards end in
// steps, end excluded.
std::vector<int64_t> SpecSliceIndices(int64_t d, int64_t start, int64_t end, int64_t step) {
  auto adjust = [d](int64_t v) { return v < 0 ? v + d : v; };
  start = adjust(start);
  end = adjust(end);
  if (step > 0) {
    start = std::min(std::max<int64_t>(start, 0), d);
    end = std::min(std::max<int64_t>(end, 0), d);
  } else {
    start = std::min(std::max<int64_t>(start, 0), d - 1);
    end = std::min(std::max<int64_t>(end, -1), d - 1);
  }
  std::vector<int64_t> out;
  for (int64_t i = 0; i < d; ++i) {
    const bool in = step > 0 ? i >= start && i < end && (i - start) % step == 0
                             : i <= start && i > end && (start - i) % (-step) == 0;
    if (in) out.push_back(i);
  }
  if (step < 0) std::reverse(out.begin(), out.end());
  return out;
}

Tensor Int64s(const std::vector<int64_t>& v) {
  Tensor t(std::vector<int64_t>{static_cast<int64_t>(v.size())}, DataType::INT64);
  std::copy(v.begin(), v.end(), t.mutable_data<int64_t>());
  return t;
}

// Slice with several cut axes, steps (negative too), out-of-range and extreme bounds, on a
// (4, 6, 5) tensor of 0, 1, 2, ...: the values ONNX's specification keeps, and the ops it takes.
TEST_F(OnnxImportTest, SliceWithStepsKeepsTheSpecifiedElements) {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;
    std::vector<std::string> ops;
  };
  const std::vector<Case> cases = {
      {{1, 2}, {4, -1}, {0, 2}, {1, 1}, {"Slice", "Slice"}},
      {{-1}, {lo}, {1}, {-1}, {"Gather"}},
      {{0, 9, 4}, {hi, -100, 0}, {0, 1, 2}, {3, -4, -1}, {"Gather", "Gather", "Gather"}},
      {{1, 2}, {5, 6}, {-1, 1}, {100, 1}, {"Slice", "Gather"}},
      {{3}, {3}, {0}, {1}, {"Slice"}},
      {{-100}, {-200}, {2}, {-1}, {"Gather"}},
      {{0, -1}, {hi, lo}, {0, 0}, {1, -1}, {}},  // axis 0 twice: refused
      {{0}, {hi}, {0}, {1}, {"Copy"}},
  };
  const std::vector<int64_t> dims{4, 6, 5};
  Tensor x(dims, DataType::FLOAT);
  for (int64_t i = 0; i < x.numel(); ++i) x.mutable_data<float>()[i] = static_cast<float>(i);
  for (const Case& k : cases) {
    SCOPED_TRACE(DimsString(k.starts) + " " + DimsString(k.ends) + " " + DimsString(k.axes) +
                 " " + DimsString(k.steps));
    OnnxImportOptions o;
    o.input_dims["x"] = dims;
    o.constant_inputs["starts"] = Int64s(k.starts);
    o.constant_inputs["ends"] = Int64s(k.ends);
    o.constant_inputs["axes"] = Int64s(k.axes);
    o.constant_inputs["steps"] = Int64s(k.steps);
    if (k.ops.empty()) {
      EXPECT_NE(ErrorOf([&] { ImportOnnxFile(Model("test_slice_neg_steps"), o); })
                    .find("node 'y' (Slice, opset 13): axis 0 is listed twice"),
                std::string::npos);
      continue;
    }
    const ImportedNet net = ImportOnnxFile(Model("test_slice_neg_steps"), o);
    std::vector<std::string> types;
    for (const auto& op : net.predict.op()) types.push_back(op.type());
    EXPECT_EQ(types, k.ops);
    // The expected output: per dim, the indices kept.
    std::vector<std::vector<int64_t>> keep(3);
    for (int a = 0; a < 3; ++a) {
      for (int64_t i = 0; i < dims[a]; ++i) keep[a].push_back(i);
    }
    for (size_t j = 0; j < k.axes.size(); ++j) {
      const int64_t a = k.axes[j] < 0 ? k.axes[j] + 3 : k.axes[j];
      keep[a] = SpecSliceIndices(dims[a], k.starts[j], k.ends[j], k.steps[j]);
    }
    std::vector<float> want;
    for (int64_t i : keep[0]) {
      for (int64_t j : keep[1]) {
        for (int64_t l : keep[2]) want.push_back(static_cast<float>((i * 6 + j) * 5 + l));
      }
    }
    Workspace ws;
    ws.RunNetOnce(net.init);
    ws.CreateTensor(net.inputs.at(0).name)->CopyFrom(x);
    ws.RunNetOnce(net.predict);
    const Tensor& y = ws.GetTensor(net.outputs.at(0).name);
    EXPECT_EQ(y.dims(), (std::vector<int64_t>{static_cast<int64_t>(keep[0].size()),
                                              static_cast<int64_t>(keep[1].size()),
                                              static_cast<int64_t>(keep[2].size())}));
    EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + y.numel()), want);
  }
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
  // Models the fuzzer made: a Gemm whose A is inferred as a scalar, and a ConvTranspose whose int8
  // weight without a shape crashes libonnx's own shape inference (run in a child process).
  for (const std::string name : {"regression_gemm_scalar_a", "regression_convtranspose_int8_weight"}) {
    const std::string path = SourceDir() + "/tests/fuzz/corpus/onnx/" + name + ".onnx";
    const std::string err = ErrorOf([&] { ImportOnnxFile(path); });
    EXPECT_NE(err.find(path), std::string::npos) << name << ": " << err;
  }
  // An initializer claiming 2^31 x 4 floats and carrying none: an error naming the count, found
  // before anything of that size is allocated (the fuzzer's 8 GB allocation).
  const std::string huge =
      SourceDir() + "/tests/fuzz/corpus/onnx/regression_initializer_huge_dims_no_data.onnx";
  EXPECT_NE(ErrorOf([&] { ImportOnnxFile(huge); }).find("0 values for 8589934592 elements"),
            std::string::npos)
      << ErrorOf([&] { ImportOnnxFile(huge); });
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

// bfloat16 (ONNX BFLOAT16, element type 16): Cast to and from it imports as halfcaf's Cast, and
// the values follow halfcaf's bfloat16 (rounded to nearest even). ONNX 1.12's test data stores
// the bfloat16 tensors as UINT16 bit patterns, and its reference truncates.
TEST_F(OnnxImportTest, BFloat16CastsImportAndRound) {
  for (const bool to_bf16 : {true, false}) {
    const std::string test = to_bf16 ? "test_cast_FLOAT_to_BFLOAT16" : "test_cast_BFLOAT16_to_FLOAT";
    SCOPED_TRACE(test);
    const ImportedNet net = ImportOnnxFile(Model(test));
    ASSERT_EQ(net.inputs.size(), 1u);
    ASSERT_EQ(net.predict.op_size(), 1);
    EXPECT_EQ(net.predict.op(0).type(), "Cast");
    EXPECT_EQ(net.inputs[0].dtype, to_bf16 ? DataType::FLOAT : DataType::BFLOAT16);
    EXPECT_EQ(net.outputs[0].dtype, to_bf16 ? DataType::BFLOAT16 : DataType::FLOAT);
    Tensor in, want;
    ReadOnnxTensorFile(Data(test, "input_0.pb"), &in);
    ReadOnnxTensorFile(Data(test, "output_0.pb"), &want);
    Workspace ws;
    Tensor* x = ws.CreateTensor(net.inputs[0].name);
    if (to_bf16) {
      x->CopyFrom(in);
    } else {
      ASSERT_EQ(in.dtype(), DataType::UINT16);  // the stored bit patterns
      *x = Tensor(in.dims(), DataType::BFLOAT16);
      std::memcpy(x->raw_mutable_data(), in.raw_data(), in.nbytes());
    }
    ws.RunNetOnce(net.init);
    ws.RunNetOnce(net.predict);
    const Tensor& got = ws.GetTensor(net.outputs[0].name);
    ASSERT_EQ(got.dtype(), to_bf16 ? DataType::BFLOAT16 : DataType::FLOAT);
    ASSERT_EQ(got.numel(), want.numel());
    int rounded_up = 0;
    for (int64_t i = 0; i < got.numel(); ++i) {
      if (to_bf16) {
        const float v = in.data<float>()[i];
        const uint16_t bits = got.data<BFloat16>()[i].x, truncated = want.data<uint16_t>()[i];
        EXPECT_EQ(bits, FloatToBFloat16Bits(v)) << i;
        EXPECT_TRUE(bits == truncated || bits == truncated + 1) << i;
        rounded_up += bits != truncated;
      } else {
        const float g = got.data<float>()[i], w = want.data<float>()[i];
        EXPECT_TRUE(g == w || (std::isnan(g) && std::isnan(w))) << i << ": " << g << " vs " << w;
      }
    }
    if (to_bf16) EXPECT_GT(rounded_up, 0);  // the data has values that round up
  }
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
