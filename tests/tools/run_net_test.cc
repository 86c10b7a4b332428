#include <sys/stat.h>

#include <cmath>
#include <fstream>

#include <gtest/gtest.h>

#include "core/proto_io.h"
#include "core/tensor_proto.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/nested_net.h"
#include "tests/util/op_test_util.h"
#include "tests/util/separable_classes.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

const std::string kMlp = ::halfcaf::testing::SourceDir() + "/tests/fixtures/mlp_net.pbtxt";

OperatorDef GivenFill(const std::string& name, const Tensor& t) {
  std::vector<float> v(t.data<float>(), t.data<float>() + t.numel());
  return MakeOperatorDef("GivenTensorFill", "", {}, {name},
                         {MakeArgument("shape", t.dims()), MakeArgument("values", v)});
}

struct Mlp {
  Tensor w1 = RandomTensor({8, 6}, 11), b1 = RandomTensor({8}, 12);
  Tensor w2 = RandomTensor({4, 8}, 13), b2 = RandomTensor({4}, 14);
  Tensor x = RandomTensor({5, 6}, 15, -2.f, 2.f);

  // Independent reference, in double.
  std::vector<double> Forward() const {
    std::vector<double> out;
    for (int n = 0; n < 5; ++n) {
      double h[8], z[4], mx = -1e300, sum = 0;
      for (int j = 0; j < 8; ++j) {
        h[j] = b1.data<float>()[j];
        for (int k = 0; k < 6; ++k) h[j] += double(x.data<float>()[n * 6 + k]) * w1.data<float>()[j * 6 + k];
        h[j] = std::max(h[j], 0.0);
      }
      for (int j = 0; j < 4; ++j) {
        z[j] = b2.data<float>()[j];
        for (int k = 0; k < 8; ++k) z[j] += h[k] * w2.data<float>()[j * 8 + k];
        mx = std::max(mx, z[j]);
      }
      for (int j = 0; j < 4; ++j) sum += std::exp(z[j] - mx);
      for (int j = 0; j < 4; ++j) out.push_back(std::exp(z[j] - mx) / sum);
    }
    return out;
  }

  // Writes a binary init net and a text inputs file into dir.
  void Write(const std::string& dir) const {
    NetDef init;
    init.set_name("mlp_init");
    *init.add_op() = GivenFill("fc1_w", w1);
    *init.add_op() = GivenFill("fc1_b", b1);
    *init.add_op() = GivenFill("fc2_w", w2);
    *init.add_op() = GivenFill("fc2_b", b2);
    WriteProtoToFile(init, dir + "/mlp_init.pb", /*text=*/false);
    TensorProtos inputs;
    TensorToProto(x, "data", inputs.add_protos());
    WriteProtoToFile(inputs, dir + "/inputs.pbtxt", /*text=*/true);
  }
};

TEST(RunNetTest, MlpMatchesIndependentComputation) {
  std::string dir = TestTempDir();
  Mlp mlp;
  mlp.Write(dir);
  for (const char* out_name : {"/out.pb", "/out.pbtxt"}) {
    auto r = RunTool("run_net", "--init_net " + dir + "/mlp_init.pb --net " + kMlp + " --inputs " +
                                    dir + "/inputs.pbtxt --output_blobs softmax,fc1 --output " +
                                    dir + out_name);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Workspace ws;
    EXPECT_EQ(FeedTensorProtosFile(dir + out_name, &ws), 2);
    const Tensor& sm = ws.GetTensor("softmax");
    EXPECT_EQ(sm.dims(), (std::vector<int64_t>{5, 4}));
    std::vector<double> want = mlp.Forward();
    for (int i = 0; i < 20; ++i) EXPECT_NEAR(sm.data<float>()[i], want[i], 1e-5) << i;
  }
}

TEST(RunNetTest, ItersAndPrintedBlobs) {
  std::string dir = TestTempDir();
  Mlp mlp;
  mlp.Write(dir);
  auto r = RunTool("run_net", "--init_net " + dir + "/mlp_init.pb --net " + kMlp + " --inputs " +
                                  dir + "/inputs.pbtxt --iters 3 --output_blobs softmax");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("softmax: float[5, 4]"), std::string::npos) << r.out;
}

// --optimize_memory plans the net's temporaries (fc1 would be shared, but it is asked for, so it
// is kept) and gives the same outputs.
TEST(RunNetTest, OptimizeMemoryGivesTheSameOutputs) {
  std::string dir = TestTempDir();
  Mlp mlp;
  mlp.Write(dir);
  const std::string args = "--init_net " + dir + "/mlp_init.pb --net " + kMlp + " --inputs " + dir +
                           "/inputs.pbtxt --output_blobs softmax,fc1";
  auto plain = RunTool("run_net", args);
  auto planned = RunTool("run_net", args + " --optimize_memory");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  EXPECT_EQ(planned.out, plain.out);
  EXPECT_NE(planned.err.find("run_net: memory plan: "), std::string::npos) << planned.err;
}

// A zoo predict net (ResNet-18, test mode) gets the inference plan by default; its outputs equal
// the unoptimized net's (--optimize_inference=false) within float rounding.
TEST(RunNetTest, InferencePlanGivesTheSameOutputs) {
  const std::string dir = TestTempDir();
  auto made = RunTool("make_model", "--model resnet18 --image_size 32 --num_classes 10 --is_test "
                                    "--out " + dir);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  TensorProtos inputs;
  TensorToProto(RandomTensor({2, 3, 32, 32}, 4), "data", inputs.add_protos());
  TensorToProto(IntTensor({2}, {3, 7}), "label", inputs.add_protos());
  WriteProtoToFile(inputs, dir + "/inputs.pb", /*text=*/false);
  const std::string args = "--init_net " + dir + "/init_net.pbtxt --net " + dir +
                           "/train_net.pbtxt --inputs " + dir + "/inputs.pb --iters 2 " +
                           "--output_blobs softmax,pool1 --output ";
  auto plain = RunTool("run_net", args + dir + "/plain.pb --optimize_inference=false");
  auto planned = RunTool("run_net", args + dir + "/planned.pb");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  EXPECT_EQ(plain.err.find("inference plan"), std::string::npos) << plain.err;
  EXPECT_NE(planned.err.find("run_net: inference plan: 20 SpatialBN folded into Conv"),
            std::string::npos)
      << planned.err;
  Workspace a, b;
  FeedTensorProtosFile(dir + "/plain.pb", &a);
  FeedTensorProtosFile(dir + "/planned.pb", &b);
  for (const char* blob : {"softmax", "pool1"}) {
    EXPECT_EQ(a.GetTensor(blob).dims(), b.GetTensor(blob).dims()) << blob;
    ExpectNear(ToFloatVector(b.GetTensor(blob)), ToFloatVector(a.GetTensor(blob)), 1e-5f, 1e-5f,
               blob);
  }
}

TEST(RunNetTest, ListOpsShowsDocs) {
  auto r = RunTool("run_net", "--list_ops");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("== FC  [CPU"), std::string::npos);
  EXPECT_NE(r.out.find("Fully connected"), std::string::npos);
  EXPECT_NE(r.out.find("== FCGradient"), std::string::npos);
}

// Every failure is one line on stderr naming the problem, and exit code 1.
void ExpectCleanError(const ToolResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(CountLines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("run_net: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

std::string WriteNet(const std::string& dir, const std::string& name, const std::string& text) {
  std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(RunNetTest, BadInputGivesOneClearLine) {
  std::string dir = TestTempDir();
  Mlp mlp;
  mlp.Write(dir);
  const std::string init = " --init_net " + dir + "/mlp_init.pb --inputs " + dir + "/inputs.pbtxt";

  // Malformed text: file:line:column.
  std::string bad = WriteNet(dir, "bad.pbtxt", "name: \"x\"\nop {\n  type: \"FC\"\n  input: \n");
  ExpectCleanError(RunTool("run_net", "--net " + bad), bad + ":");
  // Unknown op with a suggestion.
  std::string unk = WriteNet(dir, "unk.pbtxt", "op { type: \"Softmx\" input: \"data\" output: \"y\" }");
  ExpectCleanError(RunTool("run_net", "--net " + unk + init), "did you mean: Softmax");
  // Missing input blob: blob and op named.
  std::string miss = WriteNet(dir, "miss.pbtxt",
                              "op { type: \"FC\" name: \"fc9\" input: \"data\" input: \"nope_w\" "
                              "input: \"fc1_b\" output: \"y\" }");
  ExpectCleanError(RunTool("run_net", "--net " + miss + init), "(FC 'fc9'): input 1 'nope_w'");
  // Shape mismatch: expected vs got dims.
  std::string shape = WriteNet(dir, "shape.pbtxt",
                               "op { type: \"FC\" input: \"data\" input: \"fc2_w\" "
                               "input: \"fc2_b\" output: \"y\" }");
  ExpectCleanError(RunTool("run_net", "--net " + shape + init), "[4, 8]");
  // Missing file: path named.
  ExpectCleanError(RunTool("run_net", "--net " + dir + "/does_not_exist.pbtxt"),
                   dir + "/does_not_exist.pbtxt");
  ExpectCleanError(RunTool("run_net", "--net " + kMlp + " --init_net " + dir + "/none.pb"),
                   dir + "/none.pb");
  // Missing output blob.
  ExpectCleanError(RunTool("run_net", "--net " + kMlp + init + " --output_blobs zzz"), "'zzz'");
  // Nothing to do.
  ExpectCleanError(RunTool("run_net", ""), "nothing to run");
}

// Hostile nets and inputs (issue #13): clear one-line errors, not crashes, hangs or OOM kills.
TEST(RunNetTest, HostileNetsAndInputsGiveOneClearLine) {
  const std::string dir = TestTempDir();
  // Nesting thousands of levels deep, as text and as binary.
  std::string deep = WriteNet(dir, "deep.pbtxt", NestedNetText(20000));
  ExpectCleanError(RunTool("run_net", "--net " + deep), deep + ":1:");
  const std::string deep_bin = dir + "/deep.pb";
  std::ofstream(deep_bin, std::ios::binary) << NestedNetBinary(20000);
  ExpectCleanError(RunTool("run_net", "--net " + deep_bin), deep_bin + ": cannot parse NetDef: "
                                                            "messages are nested more than 100");
  // Shapes whose element count overflows int64: a fill then Print, a Softmax.
  const std::string big = "4611686018427387904";
  std::string fill = WriteNet(dir, "fill.pbtxt",
                              "op { type: \"ConstantFill\" output: \"x\" arg { name: \"shape\" "
                              "ints: " + big + " ints: " + big + " } }\n"
                              "op { type: \"Print\" input: \"x\" }");
  ExpectCleanError(RunTool("run_net", "--net " + fill),
                   "(ConstantFill): `shape`: shape [" + big + ", " + big + "] has too many elements");
  std::string softmax = WriteNet(dir, "softmax.pbtxt",
                                 "op { type: \"ConstantFill\" output: \"x\" arg { name: \"shape\" "
                                 "ints: 4294967296 ints: 4294967296 ints: 4 } }\n"
                                 "op { type: \"Softmax\" input: \"x\" output: \"y\" }");
  ExpectCleanError(RunTool("run_net", "--net " + softmax), "[4294967296, 4294967296, 4]");
  // --inputs whose dims overflow (and no values, so the count check cannot catch it).
  std::string inputs = WriteNet(dir, "inputs.pbtxt",
                                "protos { name: \"data\" data_type: FLOAT dims: " + big +
                                    " dims: " + big + " }");
  std::string relu = WriteNet(dir, "relu.pbtxt",
                              "op { type: \"Relu\" input: \"data\" output: \"y\" }");
  ExpectCleanError(RunTool("run_net", "--net " + relu + " --inputs " + inputs),
                   "TensorProto 'data': shape [" + big + ", " + big + "] has too many elements");
  // Negative dims.
  std::string neg = WriteNet(dir, "neg.pbtxt",
                             "op { type: \"ConstantFill\" output: \"x\" arg { name: \"shape\" "
                             "ints: 3 ints: -4 } }");
  ExpectCleanError(RunTool("run_net", "--net " + neg), "negative dimension -4 in shape [3, -4]");
  // 2^40 floats fit in int64 but not in memory: the bytes and the blob are named, no OOM kill.
  std::string huge = WriteNet(dir, "huge.pbtxt",
                              "op { type: \"ConstantFill\" output: \"x\" arg { name: \"shape\" "
                              "ints: 1099511627776 } }");
  ExpectCleanError(RunTool("run_net", "--net " + huge),
                   "blob 'x' float[1099511627776]: cannot allocate 4398046511104 bytes (4.0 TiB)");
  // A megabyte-long unknown type: quick, and the name is not echoed whole.
  std::string unk = WriteNet(dir, "unk.pbtxt", "op { type: \"" + std::string(1 << 20, 'Q') + "\" }");
  ToolResult r = RunTool("run_net", "--net " + unk);
  ExpectCleanError(r, "unknown operator type 'QQQ");
  EXPECT_LT(r.err.size(), 600u);
  // num_workers 100000 on the dag executor: clipped with a warning, and the net runs.
  std::string dag = WriteNet(dir, "dag.pbtxt",
                             "type: \"dag\" num_workers: 100000 op { type: \"ConstantFill\" "
                             "output: \"x\" arg { name: \"shape\" ints: 2 } }");
  r = RunTool("run_net", "--net " + dag + " --output_blobs x");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("num_workers 100000 clipped to"), std::string::npos) << r.err;
}

// A training net in the form Caffe2's Python optimizers write (CreateMutex + AtomicIter on the
// CPU counter, LearningRate, FP16/FP32MomentumSGDUpdate; tests/fixtures/caffe2_*_sgd_*.pbtxt) runs
// unmodified through run_net: the counter counts the iterations and the loss drops.
TEST(RunNetTest, RunsCaffe2OptimizerTrainingNets) {
  const std::string dir = TestTempDir();
  const std::string data = ::halfcaf::testing::SourceDir() + "/tests/fixtures/";
  const SeparableClasses problem(24, 4, 3, 5);
  TensorProtos inputs;
  TensorToProto(problem.data, "data", inputs.add_protos());
  TensorToProto(problem.label, "label", inputs.add_protos());
  WriteProtoToFile(inputs, dir + "/separable.pb", /*text=*/false);
  for (const std::string precision : {"fp16", "fp32"}) {
    float loss[2] = {0, 0};
    const int iters[2] = {1, 40};
    for (int k = 0; k < 2; ++k) {
      SCOPED_TRACE(precision + ", " + std::to_string(iters[k]) + " iterations");
      const std::string out = dir + "/trained_" + precision + ".pb";
      auto r = RunTool("run_net", "--init_net " + data + "caffe2_" + precision +
                                      "_sgd_init_net.pbtxt --net " + data + "caffe2_" +
                                      precision + "_sgd_train_net.pbtxt --inputs " + dir +
                                      "/separable.pb --iters " + std::to_string(iters[k]) +
                                      " --output_blobs optimizer_iteration,loss --output " + out);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      Workspace ws;
      ASSERT_EQ(FeedTensorProtosFile(out, &ws), 2);
      EXPECT_EQ(ws.GetTensor("optimizer_iteration").data<int64_t>()[0], iters[k]);
      loss[k] = ws.GetTensor("loss").data<float>()[0];
    }
    EXPECT_LT(loss[1], 0.3f * loss[0]) << precision << ": loss after 1 and 40 iterations";
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
