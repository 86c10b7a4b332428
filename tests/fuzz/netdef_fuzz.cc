// Fuzz target: a NetDef in protobuf text or binary (the format is detected from the content, as
// every tool does), then what a tool does with a net before it runs: each op checked against its
// schema, shapes and costs inferred through the net, and the net created in a workspace (every
// operator constructed, arguments parsed). Ops that open files are not constructed (a net
// may name any path; the data readers have their own target).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/op_schema.h"
#include "core/proto_io.h"
#include "core/workspace.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

const std::set<std::string> kOpensFiles = {"DataInput", "CreateDB", "TensorProtosDBInput",
                                           "ImageInput", "Load", "Save"};

void InferThroughNet(const halfcaf::NetDef& net) {
  using halfcaf::TensorShape;
  std::map<std::string, TensorShape> shapes;
  for (const auto& name : net.external_input()) shapes[name] = TensorShape{{2, 3, 4, 4}};
  for (const auto& op : net.op()) {
    const halfcaf::OpSchema* schema = halfcaf::OpSchemaRegistry::Schema(op.type());
    if (schema == nullptr) continue;
    std::vector<TensorShape> in;
    for (const auto& name : op.input()) {
      auto it = shapes.find(name);
      TensorShape s;
      s.unknown = true;
      in.push_back(it == shapes.end() ? s : it->second);
    }
    halfcaf::fuzz::ExpectCleanRejection([&] {
      schema->Verify(op);
      if (schema->HasCostInference()) schema->InferCost(op, in);
      if (!schema->HasShapeInference()) return;
      std::vector<TensorShape> out = schema->InferShapes(op, in);
      for (int i = 0; i < op.output_size() && i < static_cast<int>(out.size()); ++i) {
        shapes[op.output(i)] = out[static_cast<size_t>(i)];
      }
    });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  halfcaf::NetDef net;
  try {
    halfcaf::ParseProtoFromString(bytes, "fuzz input", &net);
  } catch (const halfcaf::EnforceNotMet&) {
    return 0;
  }
  if (net.op_size() > 256) return 0;  // keep one input cheap
  InferThroughNet(net);
  for (const auto& op : net.op()) {
    if (kOpensFiles.count(op.type())) return 0;
  }
  net.set_num_workers(std::min(net.num_workers(), 2));
  halfcaf::Workspace ws;
  for (const auto& name : net.external_input()) ws.CreateTensor(name);
  halfcaf::fuzz::ExpectCleanRejection([&] { ws.CreateNet(net); });
  return 0;
}
