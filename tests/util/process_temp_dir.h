// A folder for one test process's files, /tmp/<prefix><pid>, removed with everything in it when
// the process exits. CTest starts each test in its own process (a few hundred), and some write
// hundreds of MB (models, checkpoints, traces): left behind, a few runs fill the disk.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <system_error>

namespace halfcaf {
namespace testing {

class ProcessTempDirs {
 public:
  // The folder for `prefix`, made on first use (and again if a test removed it).
  static std::string Get(const std::string& prefix) {
    static ProcessTempDirs dirs;
    auto it = dirs.paths_.find(prefix);
    if (it == dirs.paths_.end()) {
      it = dirs.paths_
               .emplace(prefix, ::testing::TempDir() + "/" + prefix + std::to_string(getpid()))
               .first;
    }
    mkdir(it->second.c_str(), 0755);
    return it->second;
  }

 private:
  ProcessTempDirs() : owner_(getpid()) {}
  ~ProcessTempDirs() {
    if (getpid() != owner_) return;  // a forked child that exits normally leaves them
    for (const auto& [prefix, path] : paths_) {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  }
  pid_t owner_;
  std::map<std::string, std::string> paths_;
};

}  // namespace testing
}  // namespace halfcaf
