// The peers some tests compare halfcaf with: PyTorch and torchvision (Debian's python3-torch,
// python3-torchvision, with python3-onnx for their ONNX export) and ONNX Runtime (the virtual
// environment tools/setup_ort.sh makes at <repo>/.venv-ort).
//
// A comparison never disappears silently:
// - HALFCAF_REQUIRE_PEER(peer) at the top of a test (or its fixture's SetUp) skips the test
//   with the reason when the peer is missing, and fails it instead when HALFCAF_PEER=1 (as CI
//   runs the tests).
// - PeerCheckRuns(peer) guards an optional comparison inside a test that also checks other
//   things: false when the peer is missing (a non-fatal failure under HALFCAF_PEER=1).
// - With HALFCAF_PEER_LOG=<file> every such decision appends one line "<peer> ran|missing
//   <Suite.Test>" to the file, from which tools/peer_summary.sh counts what ran and what did not.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include <gtest/gtest.h>

#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {

enum class Peer { kTorch, kTorchvision, kTorchOnnxExport, kOnnxRuntime };

inline const char* PeerName(Peer p) {
  switch (p) {
    case Peer::kTorch: return "pytorch";
    case Peer::kTorchvision: return "torchvision";
    case Peer::kTorchOnnxExport: return "pytorch-onnx-export";
    case Peer::kOnnxRuntime: return "onnxruntime";
  }
  return "?";
}

// The ONNX Runtime virtual environment's python, or "" when tools/setup_ort.sh has not made it.
inline std::string OrtPython() {
  const std::string python = SourceDir() + "/.venv-ort/bin/python";
  struct stat st;
  return stat(python.c_str(), &st) == 0 ? python : "";
}

// "" when the peer can be used, else why not (with the command that installs it).
inline std::string PeerMissingReason(Peer p) {
  static std::mutex mu;
  static std::map<Peer, std::string> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(p);
  if (it != cache.end()) return it->second;
  auto python_imports = [](const std::string& python, const std::string& modules) {
    const std::string cmd = python + " -c 'import " + modules + "' >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0;
  };
  std::string why;
  switch (p) {
    case Peer::kTorch:
      if (!python_imports("/usr/bin/python3", "torch")) {
        why = "/usr/bin/python3 cannot import torch (apt install python3-torch)";
      }
      break;
    case Peer::kTorchvision:
      if (!python_imports("/usr/bin/python3", "torch, torchvision")) {
        why = "/usr/bin/python3 cannot import torch and torchvision "
              "(apt install python3-torch python3-torchvision)";
      }
      break;
    case Peer::kTorchOnnxExport:
      if (!python_imports("/usr/bin/python3", "torch, torchvision, torch.onnx, onnx")) {
        why = "/usr/bin/python3 cannot import torch, torchvision and onnx "
              "(apt install python3-torch python3-torchvision python3-onnx)";
      }
      break;
    case Peer::kOnnxRuntime: {
      const std::string python = OrtPython();
      if (python.empty() || !python_imports(python, "onnxruntime, onnx, numpy")) {
        why = "no ONNX Runtime in " + SourceDir() + "/.venv-ort (run tools/setup_ort.sh)";
      }
      break;
    }
  }
  cache[p] = why;
  return why;
}

// Whether HALFCAF_PEER=1: every peer must be there.
inline bool PeersRequired() {
  const char* env = std::getenv("HALFCAF_PEER");
  return env != nullptr && std::string(env) == "1";
}

// Appends "<peer> <ran|missing> <Suite.Test>" to HALFCAF_PEER_LOG when it is set (one write of
// an O_APPEND file per line, so parallel test processes do not interleave within a line).
inline void LogPeerUse(Peer p, bool ran) {
  const char* path = std::getenv("HALFCAF_PEER_LOG");
  if (path == nullptr || *path == '\0') return;
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string line = std::string(PeerName(p)) + (ran ? " ran " : " missing ");
  line += info != nullptr ? std::string(info->test_suite_name()) + "." + info->name() : "?";
  line += "\n";
  const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  const ssize_t n = write(fd, line.data(), line.size());
  (void)n;
  close(fd);
}

// For an optional comparison inside a test: whether the peer can run it.
inline bool PeerCheckRuns(Peer p) {
  const std::string why = PeerMissingReason(p);
  LogPeerUse(p, why.empty());
  if (why.empty()) return true;
  if (PeersRequired()) ADD_FAILURE() << why << " (HALFCAF_PEER=1 requires every peer)";
  return false;
}

}  // namespace testing
}  // namespace halfcaf

// Skips the current test (fails it under HALFCAF_PEER=1) when `peer` is missing. Returns from
// the enclosing void function (the test body or SetUp) in that case.
#define HALFCAF_REQUIRE_PEER(peer)                                                          \
  do {                                                                                     \
    const std::string halfcaf_peer_why_ = ::halfcaf::testing::PeerMissingReason(peer);     \
    ::halfcaf::testing::LogPeerUse(peer, halfcaf_peer_why_.empty());                      \
    if (!halfcaf_peer_why_.empty()) {                                                      \
      if (::halfcaf::testing::PeersRequired()) {                                           \
        FAIL() << halfcaf_peer_why_ << " (HALFCAF_PEER=1 requires every peer)";            \
      }                                                                                    \
      GTEST_SKIP() << halfcaf_peer_why_;                                                   \
    }                                                                                      \
  } while (0)
