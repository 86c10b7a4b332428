// run_net with bfloat16 tensors: a TensorProto of data_type BFLOAT16 fed with --inputs, cast and
// computed on, saved and loaded again, and written with --output or printed.
#include <sys/stat.h>

#include <fstream>

#include <gtest/gtest.h>

#include "core/tensor_proto.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

// x (2, 3) as bit patterns: 1, -2, 0.333984375, -0, inf, a subnormal.
const uint16_t kX[] = {0x3f80, 0xc000, 0x3eab, 0x8000, 0x7f80, 0x0005};

std::string Write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

std::string InputsText() {
  std::string s = "protos { name: \"x\" dims: 2 dims: 3 data_type: BFLOAT16 int32_data: [";
  for (int i = 0; i < 6; ++i) s += (i ? ", " : "") + std::to_string(kX[i]);
  return s + "] }\n";
}

const Tensor& Get(const Workspace& ws, const std::string& name, DataType dtype) {
  const Tensor& t = ws.GetTensor(name);
  EXPECT_EQ(t.dtype(), dtype) << name;
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{2, 3})) << name;
  return t;
}

TEST(RunNetBFloat16Test, CastComputeSaveLoadAndOutput) {
  const std::string dir = TestTempDir() + "/bf16";
  mkdir(dir.c_str(), 0755);
  const std::string inputs = Write(dir + "/inputs.pbtxt", InputsText());
  const std::string ckpt = dir + "/ckpt.pb";
  // Cast to float (exact) and back to bfloat16 (by name), Relu on bfloat16 (computed in float),
  // Scale in float then FloatToBFloat16 (rounded once), and a Save of x and sb.
  const std::string net = Write(dir + "/net.pbtxt", R"(name: "bf16"
op { type: "Cast" input: "x" output: "xf" arg { name: "to" i: 1 } }
op { type: "Cast" input: "xf" output: "xb" arg { name: "to" s: "BFLOAT16" } }
op { type: "Relu" input: "x" output: "r" }
op { type: "Scale" input: "xf" output: "s" arg { name: "scale" f: 3 } }
op { type: "FloatToBFloat16" input: "s" output: "sb" }
op { type: "Save" input: "x" input: "sb" arg { name: "db" s: ")" + ckpt + R"(" }
     arg { name: "absolute_path" i: 1 } }
)");
  for (const char* out : {"/out.pb", "/out.pbtxt"}) {
    auto r = RunTool("run_net", "--net " + net + " --inputs " + inputs +
                                    " --output_blobs x,xf,xb,r,sb --output " + dir + out);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Workspace ws;
    ASSERT_EQ(FeedTensorProtosFile(dir + out, &ws), 5) << out;
    const BFloat16* x = Get(ws, "x", DataType::BFLOAT16).data<BFloat16>();
    const float* xf = Get(ws, "xf", DataType::FLOAT).data<float>();
    const BFloat16* xb = Get(ws, "xb", DataType::BFLOAT16).data<BFloat16>();
    const BFloat16* relu = Get(ws, "r", DataType::BFLOAT16).data<BFloat16>();
    const BFloat16* sb = Get(ws, "sb", DataType::BFLOAT16).data<BFloat16>();
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(x[i].x, kX[i]) << out << " " << i;
      EXPECT_EQ(xf[i], BFloat16BitsToFloat(kX[i])) << i;
      EXPECT_EQ(xb[i].x, kX[i]) << i;
      EXPECT_EQ(relu[i].x, (kX[i] & 0x8000) ? 0 : kX[i]) << i;
      EXPECT_EQ(sb[i].x, FloatToBFloat16Bits(3 * BFloat16BitsToFloat(kX[i]))) << i;
    }
    if (std::string(out) == "/out.pbtxt") {
      EXPECT_NE(ReadFile(dir + out).find("data_type: BFLOAT16"), std::string::npos);
    }
  }

  // Load the checkpoint in another run and print what came back.
  const std::string load = Write(dir + "/load.pbtxt", R"(name: "load"
op { type: "Load" output: "x" output: "sb" arg { name: "db" s: ")" + ckpt + R"(" }
     arg { name: "absolute_path" i: 1 } }
op { type: "BFloat16ToFloat" input: "sb" output: "sf" }
)");
  auto r = RunTool("run_net", "--net " + load + " --output_blobs x,sf --output " + dir +
                                  "/loaded.pb");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Workspace ws;
  ASSERT_EQ(FeedTensorProtosFile(dir + "/loaded.pb", &ws), 2);
  const BFloat16* x = Get(ws, "x", DataType::BFLOAT16).data<BFloat16>();
  const float* sf = Get(ws, "sf", DataType::FLOAT).data<float>();
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(x[i].x, kX[i]) << i;
    EXPECT_EQ(sf[i], BFloat16BitsToFloat(FloatToBFloat16Bits(3 * BFloat16BitsToFloat(kX[i]))));
  }
  r = RunTool("run_net", "--net " + load + " --output_blobs x");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("x: bfloat16[2, 3]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("data_type: BFLOAT16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("int32_data: 16256"), std::string::npos) << r.out;
}

// bfloat16 where it is not taken yet, or stored wrongly: one clear line naming the type.
TEST(RunNetBFloat16Test, ClearErrors) {
  const std::string dir = TestTempDir() + "/bf16_errors";
  mkdir(dir.c_str(), 0755);
  const std::string inputs = Write(dir + "/inputs.pbtxt", InputsText());
  const std::string argmax = Write(dir + "/argmax.pbtxt",
                                   "op { type: \"ArgMax\" input: \"x\" output: \"y\" }\n");
  auto r = RunTool("run_net", "--net " + argmax + " --inputs " + inputs + " --output_blobs y");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("X must be float, float16, int32 or int64, got bfloat16[2, 3]"),
            std::string::npos)
      << r.err;
  const std::string short_inputs = Write(
      dir + "/short.pbtxt",
      "protos { name: \"x\" dims: 3 data_type: BFLOAT16 int32_data: [16256, 16256] }\n");
  r = RunTool("run_net", "--net " + argmax + " --inputs " + short_inputs);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("TensorProto 'x' has dims [3] (3 elements) but 2 values in int32_data"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
