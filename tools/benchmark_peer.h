// benchmark's peers: the same configurations run by another framework, in a child process that
// prints one JSON line per configuration, and its numbers (images/s, median ms, peak memory)
// attached to halfcaf's results for the side-by-side table.
//   pytorch: tools/peers/resnet_pytorch.py, torchvision's ResNet (training or inference).
//   ort:     tools/peers/resnet_ort.py, ONNX Runtime on the CPU running the very model halfcaf
//            timed, exported by halfcaf's ONNX exporter with the same parameters (inference).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/halfcaf.pb.h"
#include "tools/benchmark_output.h"

namespace halfcaf {
namespace bench {

// The peers --compare names: "pytorch", "ort" or both ("pytorch,ort"); "" names none. Throws on
// anything else.
struct Peers {
  bool pytorch = false, ort = false;
  bool any() const { return pytorch || ort; }
};
Peers ParseCompare(const std::string& flag);

struct PeerRequest {
  std::string python, script, model, order, mode, device;
  int iters = 0, warmup = 0, gpu = 0, threads = 0, num_classes = 0, image_size = 0;
  uint32_t seed = 1;
  int timeout_s = 0;  // 0: no limit
  std::vector<int64_t> batches;
  std::vector<std::string> precisions;
};

// `given` (--peer_script) when set, else the peer of `model` in the source folder (found from
// the binary's location, or the current folder): tools/peers/acgan_pytorch.py for acgan,
// tools/peers/resnet_pytorch.py otherwise. Throws when it is not there.
std::string FindPeerScript(const std::string& given, const std::string& model);

// Runs the PyTorch peer for every configuration and attaches its numbers to each result's
// `pytorch`. Returns false (after saying why on stderr) when it cannot run or printed nothing.
bool RunPeer(const PeerRequest& request, std::vector<Result>* results);

struct OrtRequest {
  std::string python;  // the interpreter of the venv tools/setup_ort.sh makes
  std::string script;  // tools/peers/resnet_ort.py
  // The model: an ONNX file run as it is (benchmark --net model.onnx); else `init` and `predict`
  // (the nets halfcaf timed), exported once per batch size with the parameters `init` makes
  // after SetGlobalSeed(seed), as benchmark's forward session makes them.
  std::string onnx_file;
  NetDef init, predict;
  std::vector<int64_t> chw;  // one sample, NCHW
  int iters = 0, warmup = 0, threads = 0;
  uint32_t seed = 1;
  int timeout_s = 0;  // 0: no limit
  std::vector<int64_t> batches;
  std::vector<std::string> precisions;  // fp16 rows: the peer reports them skipped
};

// <source>/.venv-ort/bin/python, the source folder found as FindPeerScript finds it.
std::string DefaultOrtPython();
// tools/peers/resnet_ort.py of the source folder. Throws when it is not there.
std::string FindOrtScript();

// Runs the ONNX Runtime peer for every configuration and attaches its numbers to each result's
// `ort`. Returns false (after saying why on stderr) when there is no ONNX Runtime at
// request.python, the model does not export, or the peer cannot run or printed nothing.
bool RunOrtPeer(const OrtRequest& request, std::vector<Result>* results);

}  // namespace bench
}  // namespace halfcaf
