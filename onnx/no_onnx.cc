// Built instead of the importer when libonnx-dev is missing: every entry point says how to get it.
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"

namespace halfcaf {

bool OnnxAvailable() { return false; }

const char* OnnxMissingHint() {
  return "ONNX support needs libonnx-dev, which this build lacks: install it (apt; "
         "tools/setup_deps.sh does) and rebuild with HALFCAF_USE_ONNX=AUTO";
}

bool IsOnnxPath(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

ImportedNet ImportOnnxFile(const std::string&, const OnnxImportOptions&) {
  HALFCAF_THROW(OnnxMissingHint());
}
ImportedNet ImportOnnxBytes(const std::string&, const std::string&, const OnnxImportOptions&) {
  HALFCAF_THROW(OnnxMissingHint());
}
void ReadOnnxTensorFile(const std::string&, Tensor*, std::string*) {
  HALFCAF_THROW(OnnxMissingHint());
}
std::string ExportOnnx(const NetDef&, const NetDef&, const OnnxExportOptions&, const Workspace*,
                       int*) {
  HALFCAF_THROW(OnnxMissingHint());
}

}  // namespace halfcaf
