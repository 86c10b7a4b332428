// ONNX's shape inference (libonnx) run in a child process. libonnx's inference functions trust
// their input: on a malformed model (an input of the wrong type without a shape, say) some of
// them dereference null and take the process down. The child runs the inference on its
// copy-on-write image of the model and sends back only what it adds (value_info and the graph
// outputs' types); if it dies, the import fails with one clear error instead of a crash.
#pragma once

#include <string>

namespace onnx {
class ModelProto;
}

namespace halfcaf {
namespace onnx_import {

// Fills model's value_info as onnx::shape_inference::InferShapes does (types not checked, data
// propagation on, partial results kept). Throws naming `source` if the inference crashes.
void InferShapesIsolated(onnx::ModelProto* model, const std::string& source);

}  // namespace onnx_import
}  // namespace halfcaf
