// Every tool's --help: exit 0, the usage line, and the tool's own flags only (not the forty
// logging and completion flags glog and gflags define, nor the build paths gflags records).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/tools/tool_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(ToolHelpTest, ListsTheToolsOwnFlagsOnly) {
  const std::vector<std::pair<std::string, std::string>> tools = {
      {"train_net", "-recompute ("},   {"run_net", "-net ("},
      {"benchmark", "-per_op ("},      {"make_model", "-model ("},
      {"train_gan", "-base_lr ("},     {"run_plan", "-plan ("},
      {"caffe2_to_onnx", "-predict_net ("},  {"onnx_to_caffe2", "-batch_size ("},
      {"make_image_db", "-color ("},   {"make_mnist_db", "-channel_first ("},
      {"gan_score", "-batch_size ("},
  };
  for (const auto& [tool, flag] : tools) {
    SCOPED_TRACE(tool);
    const ToolResult r = RunTool(tool, "--help");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.rfind(tool + " ", 0), 0u) << r.out.substr(0, 200);  // the usage line first
    EXPECT_NE(r.out.find("\nFlags:\n"), std::string::npos);
    EXPECT_NE(r.out.find("    " + flag), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("alsologtoemail"), std::string::npos);
    EXPECT_EQ(r.out.find("Flags from"), std::string::npos);
  }
  // --helpfull (gflags' own, exit 1 as gflags has it) still lists everything, glog's flags too.
  const ToolResult full = RunTool("run_net", "--helpfull");
  EXPECT_NE(full.out.find("alsologtoemail"), std::string::npos);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
