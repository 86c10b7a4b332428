// ONNX export of an inference net: the init net's parameters (or a checkpoint's) become ONNX
// initializers and the predict net's operators ONNX nodes (opset 11), so a model trained with
// train_net deploys in any ONNX runtime. Every operator is converted exactly or refused with an
// error naming it; the model is validated by ONNX's checker before it is written.
//
//   OnnxExportOptions o;
//   o.input_dims["data"] = {1, 1, 28, 28};
//   WriteOnnxFile(ExportOnnx(init, predict, o), "lenet.onnx");
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/workspace.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

struct OnnxExportOptions {
  // Shapes of the graph's inputs (float); every input needs one ("" names the only input).
  std::map<std::string, std::vector<int64_t>> input_dims;
  // The graph's outputs; empty: the predict net's external outputs, else its last op's first.
  std::vector<std::string> outputs;
  // Drop the training-only ops: SoftmaxWithLoss becomes Softmax of its logits (output named as
  // its first output), Accuracy and the other label consumers go; labels stop being inputs.
  bool strip_training = true;
  std::string graph_name = "halfcaf";
};

// Runs `init`, then (when `params` is given, e.g. a checkpoint) replaces each blob the init net
// made by the one of that name in `params`, counted in *params_taken; throws when none is there.
// Converts `predict` and returns the serialized ModelProto.
std::string ExportOnnx(const NetDef& init, const NetDef& predict, const OnnxExportOptions& options,
                       const Workspace* params = nullptr, int* params_taken = nullptr);

}  // namespace halfcaf
