// ONNX import: an ONNX model (opsets 6 to 17) becomes an init net (its initializers, as
// GivenTensor*Fill ops) and a predict net of halfcaf operators, as Caffe2's ONNX backend did.
// Every node is converted with each attribute honoured or refused (OnnxUnsupported names the
// node, its op type, the attribute and the opset); shape arithmetic (Shape -> Gather -> Concat ->
// Reshape chains, constants) is folded at import, so the predict net stays a plain net.
//
//   ImportedNet net = ImportOnnxFile("resnet18.onnx");
//   ws.RunNetOnce(net.init);
//   ... feed net.info.inputs[0] ...
//   ws.RunNetOnce(net.predict);
//
// Built without libonnx-dev, OnnxAvailable() is false and the functions throw saying so.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/enforce.h"
#include "core/tensor.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

bool OnnxAvailable();
const char* OnnxMissingHint();

// A node, attribute or data type the importer does not support (never a silently different
// result). The message names the node, its op type, what is refused and the opset.
class OnnxUnsupported : public EnforceNotMet {
 public:
  using EnforceNotMet::EnforceNotMet;
};

struct OnnxImportOptions {
  // Static shapes for graph inputs whose dims are symbolic ("N") or missing, by input name (or
  // "" for every input: the batch size given by the caller, e.g. {"" : {8}} fixes dim 0).
  std::map<std::string, std::vector<int64_t>> input_dims;
  // > 0: the first dim of every input, replacing the model's own (fixed or symbolic), so that
  // shape arithmetic folds for this batch size (e.g. to train a model exported with batch 1).
  int64_t batch_size = 0;
  // Inputs whose values are fixed at import, by name: they become constants (and fold), e.g. the
  // scales of a Resize or the axes of a reduction that a model takes as inputs.
  std::map<std::string, Tensor> constant_inputs;
  // Folder of external tensor data files (default: the model file's folder).
  std::string external_data_dir;
  // Told how far the import is, for big models: stage "shape inference" (0 then 1 of 1),
  // "initializers" and "nodes" (each one done of the graph's total).
  std::function<void(const char* stage, int64_t done, int64_t total)> progress;
};

struct OnnxValueInfo {
  std::string name;
  DataType dtype = DataType::FLOAT;
  std::vector<int64_t> dims;  // -1 where the model leaves a dim symbolic
};

struct ImportedNet {
  NetDef init;     // the initializers (and folded constants the predict net reads)
  NetDef predict;  // the graph's computation; external inputs / outputs as in the model
  std::vector<OnnxValueInfo> inputs, outputs;  // the graph's real inputs (not initializers)
  int64_t ir_version = 0;
  int64_t opset = 0;  // of the default domain
  std::string producer;
  // Dims of the values whose shapes are static at import (inputs with the options' batch size,
  // initializers, inferred intermediate values), e.g. for Backward's blob_dims.
  std::map<std::string, std::vector<int64_t>> blob_dims;
};

ImportedNet ImportOnnxFile(const std::string& path, const OnnxImportOptions& options = {});
// A serialized ModelProto; `source` names it in errors.
ImportedNet ImportOnnxBytes(const std::string& bytes, const std::string& source,
                            const OnnxImportOptions& options = {});
// A serialized ONNX TensorProto file (e.g. ONNX's test data input_0.pb) as a CPU tensor; its
// name in `name` when given.
void ReadOnnxTensorFile(const std::string& path, Tensor* tensor, std::string* name = nullptr);
// Whether `path` names an ONNX model (".onnx").
bool IsOnnxPath(const std::string& path);

}  // namespace halfcaf
