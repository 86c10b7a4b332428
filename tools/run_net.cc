// run_net: runs an init net once and a net N times, feeding inputs from a TensorProtos file and
// writing chosen blobs to one. Errors print one line and exit 1.
#include <gflags/gflags.h>
#include <google/protobuf/stubs/logging.h>

#include <iostream>
#include <sstream>

#include "core/gradient.h"
#include "core/net.h"
#include "core/proto_io.h"
#include "core/tensor_proto.h"
#include "core/trace.h"
#include "models/inference_optimize.h"
#include "models/memory_plan.h"
#include "onnx/onnx_import.h"
#include "tools/tool_common.h"

DEFINE_string(init_net, "", "NetDef run once before --net (text or binary)");
DEFINE_string(net, "", "NetDef to run --iters times (text or binary)");
DEFINE_string(inputs, "", "TensorProtos file; each tensor is fed to the blob of its name");
DEFINE_string(onnx_inputs, "", "--net model.onnx: comma-separated ONNX TensorProto files (e.g. "
              "input_0.pb), fed to the model's inputs in order");
DEFINE_int32(batch_size, 0, "--net model.onnx: sets the first dim of every input (0: the model's)");
DEFINE_int32(iters, 1, "number of times to run --net");
DEFINE_string(output_blobs, "", "comma-separated blobs to write to --output (or print)");
DEFINE_string(output, "", "TensorProtos file to write (text when it ends in .pbtxt)");
DEFINE_string(trace, "", "write a timeline of every net and operator run (Chrome trace-event JSON "
              "for Perfetto UI or chrome://tracing) to this file");
DEFINE_bool(list_ops, false, "print every registered operator with devices, engines and docs");
DEFINE_bool(optimize_memory, false, "memory planning: --net's temporaries share buffers when their "
            "lifetimes do not overlap (the net's external outputs and --output_blobs keep theirs); "
            "the plan goes to stderr");

DEFINE_bool(optimize_inference, true, "a forward-only CPU --net gets the inference plan (SpatialBN "
            "folded into Conv, Relu and Add fused into it, NHWC convolution regions; the net's "
            "external outputs and --output_blobs keep their values); what it did goes to stderr");

namespace halfcaf {
namespace {

void ListOps() {
  std::map<std::string, std::vector<std::string>> impls;
  for (const auto& k : OperatorRegistry::Keys()) {
    impls[k.type].push_back(std::string(DeviceTypeName(k.device)) +
                            (k.engine.empty() ? "" : "/" + k.engine));
  }
  for (const auto& kv : impls) {
    std::string where;
    for (const auto& s : kv.second) where += (where.empty() ? "" : ", ") + s;
    const OpSchema* schema = OpSchemaRegistry::Schema(kv.first);
    std::cout << "== " << kv.first << "  [" << where << "]"
              << (GradientRegistry::Find(kv.first) ? "" : "  (no gradient maker)") << "\n";
    if (schema) {
      std::cout << schema->FormattedDoc();
    } else {
      std::cout << "  (no schema)\n";
    }
  }
}

int Main() {
  if (FLAGS_list_ops) {
    ListOps();
    return 0;
  }
  HALFCAF_ENFORCE(!FLAGS_net.empty() || !FLAGS_init_net.empty(),
                  "nothing to run: give --net (and usually --init_net)");
  HALFCAF_ENFORCE(FLAGS_iters >= 0, "--iters must be >= 0, got ", FLAGS_iters);
  ScopedTrace trace(FLAGS_trace);
  Workspace ws;
  NetDef init, net;
  std::vector<std::string> onnx_outputs;
  if (IsOnnxPath(FLAGS_net)) {
    // An ONNX model: the init net comes from its initializers.
    HALFCAF_ENFORCE(FLAGS_init_net.empty(), "--net ", FLAGS_net, " is an ONNX model, which holds "
                    "its own parameters: leave out --init_net");
    OnnxImportOptions options;
    if (FLAGS_batch_size > 0) options.batch_size = FLAGS_batch_size;
    ImportedNet imported = ImportOnnxFile(FLAGS_net, options);
    init = imported.init;
    net = imported.predict;
    const std::vector<std::string> files = SplitList(FLAGS_onnx_inputs);
    HALFCAF_ENFORCE(files.empty() || files.size() == imported.inputs.size(), "--onnx_inputs: ",
                    files.size(), " file(s) for the model's ", imported.inputs.size(), " input(s)");
    for (size_t i = 0; i < files.size(); ++i) {
      ReadOnnxTensorFile(files[i], ws.CreateTensor(imported.inputs[i].name));
    }
    for (const auto& o : imported.outputs) onnx_outputs.push_back(o.name);
    ws.RunNetOnce(init);
  } else {
    HALFCAF_ENFORCE(FLAGS_onnx_inputs.empty(), "--onnx_inputs needs --net model.onnx");
    if (!FLAGS_init_net.empty()) ReadProtoFromFile(FLAGS_init_net, &init);
    if (!FLAGS_net.empty()) ReadProtoFromFile(FLAGS_net, &net);
  }
  if (!FLAGS_inputs.empty()) FeedTensorProtosFile(FLAGS_inputs, &ws);
  if (!FLAGS_init_net.empty()) ws.RunNetOnce(init);
  std::vector<std::string> blobs = SplitList(FLAGS_output_blobs);
  if (blobs.empty()) blobs = onnx_outputs;  // an ONNX model's outputs by default
  if (!FLAGS_net.empty()) {
    if (net.name().empty()) net.set_name("net");
    if (FLAGS_optimize_inference) {
      InferenceOptions o;
      o.keep.insert(blobs.begin(), blobs.end());
      const InferenceReport r = OptimizeForInference(&net, &ws, o);
      if (r.changed()) std::cerr << "run_net: " << r.Summary() << "\n";
    }
    if (FLAGS_optimize_memory) {
      MemoryPlanOptions o;
      o.keep.insert(blobs.begin(), blobs.end());
      const MemoryPlan plan = PlanMemory(net, o);
      ApplyMemoryPlan(plan, &net);
      std::cerr << "run_net: " << plan.Summary();
    }
    ws.CreateNet(net);
    for (int i = 0; i < FLAGS_iters; ++i) ws.RunNet(net.name());
    ws.GetNet(net.name())->CheckDeferredErrors();  // e.g. a label out of range on CUDA
  }
  trace.Finish();
  OutputBlobs(ws, blobs, FLAGS_output);
  return 0;
}

}  // namespace
}  // namespace halfcaf

int main(int argc, char** argv) {
  return halfcaf::RunTool("run_net",
                          "run_net --init_net INIT --net NET [--inputs FILE] [--iters N] "
                          "[--output_blobs a,b] [--output FILE] [--trace trace.json] [--list_ops]",
                          argc, argv, halfcaf::Main);
}
