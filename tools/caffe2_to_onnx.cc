// caffe2_to_onnx: exports an inference net (init + predict, e.g. a trained model's nets and its
// checkpoint) to an ONNX model (opset 11) that any ONNX runtime runs. Training-only ops (the loss,
// Accuracy) are dropped: SoftmaxWithLoss becomes the Softmax of its logits.
#include <gflags/gflags.h>

#include <iostream>

#include "core/proto_io.h"
#include "core/tensor_proto.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "tools/tool_common.h"

DEFINE_string(init_net, "", "init net (text or binary NetDef)");
DEFINE_string(predict_net, "", "predict (or training forward) net (text or binary NetDef)");
DEFINE_string(params, "", "optional TensorProtos file (e.g. train_net's checkpoint.pb) whose "
              "blobs replace the init net's");
DEFINE_string(input_shape, "", "shape of the net's input, e.g. 1,3,224,224 (one input)");
DEFINE_string(outputs, "", "comma-separated outputs (default: the net's external outputs)");
DEFINE_bool(strip_training, true, "drop the loss and Accuracy (SoftmaxWithLoss -> Softmax)");
DEFINE_string(out, "", "the ONNX model to write (.onnx)");

namespace halfcaf {
namespace {

int Main() {
  HALFCAF_ENFORCE(OnnxAvailable(), OnnxMissingHint());
  HALFCAF_ENFORCE(!FLAGS_init_net.empty() && !FLAGS_predict_net.empty(),
                  "--init_net and --predict_net are required");
  HALFCAF_ENFORCE(!FLAGS_out.empty(), "--out is required (the .onnx file to write)");
  HALFCAF_ENFORCE(!FLAGS_input_shape.empty(), "--input_shape is required, e.g. 1,3,224,224");
  std::vector<int64_t> dims;
  for (const auto& s : SplitList(FLAGS_input_shape)) {
    try {
      size_t used = 0;
      dims.push_back(std::stoll(s, &used));
      HALFCAF_ENFORCE(used == s.size() && dims.back() > 0, "");
    } catch (...) {
      HALFCAF_THROW("--input_shape: '", s, "' is not a positive integer");
    }
  }
  NetDef init, predict;
  ReadProtoFromFile(FLAGS_init_net, &init);
  ReadProtoFromFile(FLAGS_predict_net, &predict);
  Workspace params;
  if (!FLAGS_params.empty()) FeedTensorProtosFile(FLAGS_params, &params);
  OnnxExportOptions o;
  o.outputs = SplitList(FLAGS_outputs);
  o.strip_training = FLAGS_strip_training;
  o.graph_name = predict.name().empty() ? "halfcaf" : predict.name();
  o.input_dims[""] = dims;  // the net's one input
  const std::string bytes = ExportOnnx(init, predict, o, FLAGS_params.empty() ? nullptr : &params);
  WriteFileAtomically(FLAGS_out, bytes);
  const ImportedNet check = ImportOnnxBytes(bytes, FLAGS_out);
  std::cout << "caffe2_to_onnx: wrote " << FLAGS_out << " (" << bytes.size() << " bytes, opset "
            << check.opset << "): input " << check.inputs.at(0).name << " " << DimsString(dims) << ", "
            << check.outputs.size() << " output(s), " << predict.op_size() << " ops in"
            << std::endl;
  return 0;
}

}  // namespace
}  // namespace halfcaf

int main(int argc, char** argv) {
  return halfcaf::RunTool("caffe2_to_onnx",
                          "caffe2_to_onnx --init_net INIT --predict_net NET --input_shape "
                          "1,3,224,224 [--params checkpoint.pb] --out model.onnx",
                          argc, argv, halfcaf::Main);
}
