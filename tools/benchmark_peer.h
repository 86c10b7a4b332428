// benchmark's PyTorch peer (tools/peers/resnet_pytorch.py): the same configurations run in
// PyTorch, in a child process, and its numbers (images/s, median ms, peak memory) attached to
// halfcaf's results for the side-by-side table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/benchmark_output.h"

namespace halfcaf {
namespace bench {

struct PeerRequest {
  std::string python, script, model, order, mode, device;
  int iters = 0, warmup = 0, gpu = 0, threads = 0, num_classes = 0, image_size = 0;
  uint32_t seed = 1;
  int timeout_s = 0;  // 0: no limit
  std::vector<int64_t> batches;
  std::vector<std::string> precisions;
};

// `given` (--peer_script) when set, else tools/peers/resnet_pytorch.py of the source folder
// (found from the binary's location, or the current folder). Throws when it is not there.
std::string FindPeerScript(const std::string& given);

// Runs the peer for every configuration and attaches its numbers to `results`. Returns false
// (after saying why on stderr) when it cannot run or printed nothing.
bool RunPeer(const PeerRequest& request, std::vector<Result>* results);

}  // namespace bench
}  // namespace halfcaf
