// Fuzz target: an ONNX model as onnx_to_caffe2, run_net --net model.onnx and train_net read it:
// parsed, checked, shape-inferred, converted (constants folded) and, when that succeeds, its init
// net run (the initializers turned into tensors). Without libonnx-dev the importer is a stub
// that rejects everything.
#include <string>

#include "core/workspace.h"
#include "onnx/onnx_import.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  halfcaf::fuzz::ExpectCleanRejection([&] {
    const halfcaf::ImportedNet net = halfcaf::ImportOnnxBytes(bytes, "fuzz input");
    halfcaf::Workspace ws;
    ws.RunNetOnce(net.init);
  });
  return 0;
}
