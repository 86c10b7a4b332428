// onnx_to_caffe2: converts an ONNX model into a Caffe2 init net (its initializers) and predict net
// (Caffe2's convert-onnx-to-caffe2). Unsupported nodes, attributes and types are refused with a
// message naming the node.
#include <gflags/gflags.h>

#include <iostream>
#include <map>
#include <memory>

#include "core/proto_io.h"
#include "onnx/onnx_import.h"
#include "tools/progress_bar.h"
#include "tools/tool_common.h"

DEFINE_string(onnx, "", "the ONNX model (.onnx)");
DEFINE_string(init_net, "", "where to write the init net (text for .pbtxt, binary otherwise)");
DEFINE_string(predict_net, "", "where to write the predict net (text for .pbtxt, binary otherwise)");
DEFINE_int32(batch_size, 0, "sets the first dim of every input (0: the model's)");

namespace halfcaf {
namespace {

int Main() {
  HALFCAF_ENFORCE(OnnxAvailable(), OnnxMissingHint());
  HALFCAF_ENFORCE(!FLAGS_onnx.empty(), "--onnx is required");
  HALFCAF_ENFORCE(!FLAGS_init_net.empty() && !FLAGS_predict_net.empty(),
                  "--init_net and --predict_net are required (where to write the nets)");
  HALFCAF_ENFORCE(FLAGS_batch_size >= 0, "--batch_size must be >= 0, got ", FLAGS_batch_size);
  OnnxImportOptions options;
  if (FLAGS_batch_size > 0) options.batch_size = FLAGS_batch_size;
  // A bar per stage (big models take a while to read and convert).
  std::unique_ptr<ProgressBar> bar;
  std::string stage;
  options.progress = [&](const char* s, int64_t done, int64_t total) {
    if (stage != s) {
      if (bar) bar->Clear();
      stage = s;
      bar.reset(new ProgressBar(std::string("onnx_to_caffe2: ") + s, total,
                                stage == "nodes" ? "nodes" : stage == "initializers" ? "tensors"
                                                                                      : "steps"));
    }
    bar->Update(done);
  };
  const ImportedNet net = ImportOnnxFile(FLAGS_onnx, options);
  if (bar) bar->Clear();
  WriteProtoToFile(net.init, FLAGS_init_net, PathWantsText(FLAGS_init_net));
  WriteProtoToFile(net.predict, FLAGS_predict_net, PathWantsText(FLAGS_predict_net));
  std::map<std::string, int> types;
  for (const auto& op : net.predict.op()) ++types[op.type()];
  std::cout << "onnx_to_caffe2: " << FLAGS_onnx << " (IR " << net.ir_version << ", opset "
            << net.opset << (net.producer.empty() ? "" : ", from " + net.producer) << "): "
            << net.predict.op_size() << " ops, " << net.init.op_size() << " constants\n";
  for (const auto& in : net.inputs) {
    std::cout << "  input  " << in.name << " " << DataTypeName(in.dtype) << " "
              << DimsString(in.dims) << "\n";
  }
  for (const auto& out : net.outputs) {
    std::cout << "  output " << out.name << " " << DataTypeName(out.dtype) << " "
              << DimsString(out.dims) << "\n";
  }
  std::cout << "  ops:";
  for (const auto& kv : types) std::cout << " " << kv.first << " x" << kv.second;
  std::cout << std::endl;
  return 0;
}

}  // namespace
}  // namespace halfcaf

int main(int argc, char** argv) {
  return halfcaf::RunTool("onnx_to_caffe2",
                          "onnx_to_caffe2 --onnx model.onnx --init_net init.pb --predict_net "
                          "net.pbtxt [--batch_size N]",
                          argc, argv, halfcaf::Main);
}
