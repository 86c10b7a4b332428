// run_plan: runs a Caffe2 PlanDef (protobuf text or binary) with the plan executor
// (core/plan_executor.h), as Caffe2's binary of that name did: every step in order, its nets
// created once, loops, stop blobs, concurrent substeps, reporters and child workspaces. SIGINT
// or SIGTERM ends the running steps at their next iteration.
#include <gflags/gflags.h>

#include <iostream>

#include "core/plan_executor.h"
#include "core/proto_io.h"
#include "core/tensor_proto.h"
#include "tools/tool_common.h"

DEFINE_string(plan, "", "PlanDef to run (text or binary)");
DEFINE_string(init_net, "", "NetDef run once before the plan (text or binary)");
DEFINE_string(inputs, "", "TensorProtos file; each tensor is fed to the blob of its name first");
DEFINE_string(output_blobs, "", "comma-separated blobs to write to --output (or print) after");
DEFINE_string(output, "", "TensorProtos file to write (text when it ends in .pbtxt)");

namespace halfcaf {
namespace {

int Main() {
  HALFCAF_ENFORCE(!FLAGS_plan.empty(), "nothing to run: give --plan");
  PlanDef plan;
  ReadProtoFromFile(FLAGS_plan, &plan);
  CheckPlan(plan);  // before reading inputs or running anything
  Workspace ws;
  if (!FLAGS_inputs.empty()) FeedTensorProtosFile(FLAGS_inputs, &ws);
  if (!FLAGS_init_net.empty()) {
    NetDef init;
    ReadProtoFromFile(FLAGS_init_net, &init);
    ws.RunNetOnce(init);
  }
  InstallStopSignals("run_plan");
  RunPlan(plan, &ws, [](int64_t) { return StopSignal() == 0; });
  if (StopSignal() != 0) std::cerr << "run_plan: stopped by signal " << StopSignal() << "\n";
  OutputBlobs(ws, SplitList(FLAGS_output_blobs), FLAGS_output);
  return StopSignal() != 0 ? 128 + StopSignal() : 0;
}

}  // namespace
}  // namespace halfcaf

int main(int argc, char** argv) {
  return halfcaf::RunTool("run_plan",
                          "run_plan --plan PLAN [--init_net INIT] [--inputs FILE] "
                          "[--output_blobs a,b] [--output FILE]",
                          argc, argv, halfcaf::Main);
}
