// caffe2_to_onnx: exports an inference net (init + predict, e.g. a trained model's nets and its
// checkpoint) to an ONNX model (opset 11) that any ONNX runtime runs. Training-only ops (the loss,
// Accuracy) are dropped: SoftmaxWithLoss becomes the Softmax of its logits. With --onnx instead
// of the two nets, an ONNX model fine-tuned by train_net goes back to ONNX with its checkpoint.
#include <gflags/gflags.h>

#include <iostream>

#include "core/proto_io.h"
#include "core/tensor_proto.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "tools/tool_common.h"

DEFINE_string(init_net, "", "init net (text or binary NetDef)");
DEFINE_string(predict_net, "", "predict (or training forward) net (text or binary NetDef)");
DEFINE_string(onnx, "", "instead of --init_net and --predict_net: the ONNX model train_net "
              "fine-tuned (--net model.onnx), to export with --params");
DEFINE_string(params, "", "optional TensorProtos file (e.g. train_net's checkpoint.pb) whose "
              "blobs replace the init net's");
DEFINE_string(input_shape, "", "shape of the net's input, e.g. 1,3,224,224 (one input; with "
              "--onnx, default: the model's)");
DEFINE_string(outputs, "", "comma-separated outputs (default: the net's external outputs)");
DEFINE_bool(strip_training, true, "drop the loss and Accuracy (SoftmaxWithLoss -> Softmax)");
DEFINE_string(out, "", "the ONNX model to write (.onnx)");

namespace halfcaf {
namespace {

int Main() {
  HALFCAF_ENFORCE(OnnxAvailable(), OnnxMissingHint());
  HALFCAF_ENFORCE(FLAGS_onnx.empty() != (FLAGS_init_net.empty() && FLAGS_predict_net.empty()),
                  "give either --onnx, or --init_net and --predict_net");
  HALFCAF_ENFORCE(!FLAGS_onnx.empty() || (!FLAGS_init_net.empty() && !FLAGS_predict_net.empty()),
                  "--init_net and --predict_net are required");
  HALFCAF_ENFORCE(!FLAGS_out.empty(), "--out is required (the .onnx file to write)");
  NetDef init, predict;
  std::vector<int64_t> dims;
  if (!FLAGS_onnx.empty()) {
    const ImportedNet model = ImportOnnxFile(FLAGS_onnx);
    HALFCAF_ENFORCE(model.inputs.size() == 1, "--onnx ", FLAGS_onnx, " has ", model.inputs.size(),
                    " inputs; caffe2_to_onnx exports nets of one input");
    init = model.init;
    predict = model.predict;
    dims = model.inputs[0].dims;
  } else {
    ReadProtoFromFile(FLAGS_init_net, &init);
    ReadProtoFromFile(FLAGS_predict_net, &predict);
  }
  if (!FLAGS_input_shape.empty()) dims.clear();
  for (const auto& s : SplitList(FLAGS_input_shape)) {
    try {
      size_t used = 0;
      dims.push_back(std::stoll(s, &used));
      HALFCAF_ENFORCE(used == s.size() && dims.back() > 0, "");
    } catch (...) {
      HALFCAF_THROW("--input_shape: '", s, "' is not a positive integer");
    }
  }
  HALFCAF_ENFORCE(!dims.empty(), "--input_shape is required, e.g. 1,3,224,224");
  for (int64_t d : dims) {
    HALFCAF_ENFORCE(d > 0, "--input_shape is required: the input of ", FLAGS_onnx,
                    " has a dimension unknown until run time, ", DimsString(dims));
  }
  Workspace params;
  if (!FLAGS_params.empty()) FeedTensorProtosFile(FLAGS_params, &params);
  OnnxExportOptions o;
  o.outputs = SplitList(FLAGS_outputs);
  o.strip_training = FLAGS_strip_training;
  o.graph_name = predict.name().empty() ? "halfcaf" : predict.name();
  o.input_dims[""] = dims;  // the net's one input
  int taken = 0;
  const std::string bytes =
      ExportOnnx(init, predict, o, FLAGS_params.empty() ? nullptr : &params, &taken);
  WriteFileAtomically(FLAGS_out, bytes);
  const ImportedNet check = ImportOnnxBytes(bytes, FLAGS_out);
  std::cout << "caffe2_to_onnx: wrote " << FLAGS_out << " (" << bytes.size() << " bytes, opset "
            << check.opset << "): input " << check.inputs.at(0).name << " " << DimsString(dims) << ", "
            << check.outputs.size() << " output(s), " << predict.op_size() << " ops in"
            << std::endl;
  if (!FLAGS_params.empty()) {
    std::cout << "  " << taken << " parameters from " << FLAGS_params << std::endl;
  }
  return 0;
}

}  // namespace
}  // namespace halfcaf

int main(int argc, char** argv) {
  return halfcaf::RunTool("caffe2_to_onnx",
                          "caffe2_to_onnx --init_net INIT --predict_net NET --input_shape "
                          "1,3,224,224 [--params checkpoint.pb] --out model.onnx\n"
                          "       caffe2_to_onnx --onnx model.onnx --params checkpoint.pb --out "
                          "fine_tuned.onnx",
                          argc, argv, halfcaf::Main);
}
