// The layering of the design, checked on the source: every #include "<folder>/..." of a layer's
// files names that layer or one below it. Dependencies flow one way: tools -> models ->
// (distributed, onnx) -> operators -> (data, gpu) -> core -> proto. Also: no file over 800 lines,
// and none in models/ over 500 (small files named for what they hold). Skipped where the test
// binary runs without the sources (a GPU bundle).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

namespace fs = std::filesystem;

const std::map<std::string, std::set<std::string>>& Below() {
  static const std::map<std::string, std::set<std::string>> below = [] {
    std::map<std::string, std::set<std::string>> b;
    b["proto"] = {};
    b["core"] = {"proto"};
    b["data"] = {"core", "proto"};
    b["gpu"] = {"core", "proto"};
    b["operators"] = {"data", "gpu", "core", "proto"};
    b["distributed"] = {"operators", "data", "gpu", "core", "proto"};
    b["onnx"] = {"operators", "data", "gpu", "core", "proto"};
    b["models"] = {"distributed", "onnx", "operators", "data", "gpu", "core", "proto"};
    b["tools"] = {"models", "distributed", "onnx", "operators", "data", "gpu", "core", "proto"};
    b["python"] = b["tools"];  // the Python package's native module: a face over models/
    return b;
  }();
  return below;
}

bool IsSource(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".cc" || e == ".h" || e == ".cu" || e == ".cuh";
}

TEST(LayeringTest, IncludesFollowTheLayers) {
  const std::string root = SourceDir();
  if (!IsDirectory(root + "/core") || !IsDirectory(root + "/models")) {
    GTEST_SKIP() << "no sources beside this test binary";
  }
  const std::regex include("#include \"([a-z_]+)/");
  int files = 0;
  for (const auto& [layer, allowed] : Below()) {
    if (!IsDirectory(root + "/" + layer)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root + "/" + layer)) {
      if (!entry.is_regular_file() || !IsSource(entry.path())) continue;
      ++files;
      std::ifstream in(entry.path());
      std::string line;
      int n = 0;
      while (std::getline(in, line)) {
        ++n;
        std::smatch m;
        if (!std::regex_search(line, m, include)) continue;
        const std::string dep = m[1];
        if (dep == layer || !Below().count(dep)) continue;
        EXPECT_TRUE(allowed.count(dep))
            << entry.path().string() << ":" << n << ": " << layer << "/ includes " << dep
            << "/, which is not below it";
      }
    }
  }
  EXPECT_GT(files, 100);
}

TEST(LayeringTest, FilesStaySmall) {
  const std::string root = SourceDir();
  if (!IsDirectory(root + "/core") || !IsDirectory(root + "/models")) {
    GTEST_SKIP() << "no sources beside this test binary";
  }
  for (const std::string top : {"core", "data", "gpu", "operators", "distributed", "onnx",
                                "models", "tools", "tests", "python"}) {
    if (!IsDirectory(root + "/" + top)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root + "/" + top)) {
      const bool py = top == "python" && entry.path().extension() == ".py";
      if (!entry.is_regular_file() || !(IsSource(entry.path()) || py)) continue;
      std::ifstream in(entry.path());
      int lines = 0;
      std::string line;
      while (std::getline(in, line)) ++lines;
      const int limit = top == "models" ? 500 : 800;
      EXPECT_LE(lines, limit) << entry.path().string();
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
