// Save and Load: checkpoints as a TensorProtos file (protobuf text when the path ends in .pbtxt,
// binary otherwise; Load detects which from the content). Save appends a CRC-32 checksum record
// and Load verifies it when present (core/tensor_proto.h).
//   Save (blobs...) -> nothing: writes the input tensors, atomically (temp file + rename), under
//     their blob names, or `blob_name_overrides`, or with `strip_prefix` removed.
//   Load () -> (blobs...): reads the named tensors from the file (or the stored names given by
//     `source_blob_names`), or with load_all = 1 and no outputs every tensor in the file into a
//     blob named as stored (minus `strip_prefix`). Nothing is written unless every requested
//     tensor is present and valid.
// Args: `db` (path, required; relative to the workspace root folder unless `absolute_path`),
// `db_type` (minidb, protodb or tensorprotos: all mean halfcaf's TensorProtos file).
#pragma once

#include <string>
#include <vector>

#include "core/operator.h"

namespace halfcaf {

class SaveOp final : public Operator<CPUContext> {
 public:
  SaveOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  std::string path_;
  std::vector<std::string> stored_names_;
};

class LoadOp final : public Operator<CPUContext> {
 public:
  LoadOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  std::string path_;
  bool load_all_;
  std::string strip_prefix_;
  std::vector<std::string> wanted_;  // stored name for each output
};

}  // namespace halfcaf
