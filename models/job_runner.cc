#include "models/job_runner.h"

#include "core/enforce.h"
#include "core/net.h"

namespace halfcaf {

JobRunner::JobRunner(const TrainingJob& job, Workspace* ws) {
  HALFCAF_ENFORCE(!job.nets.empty(), "the training job has no net");
  ws->RunNetOnce(job.init);
  for (const JobNet& net : job.nets) {
    HALFCAF_ENFORCE(net.step.op_size() > 0 && net.update.op_size() > 0, "net '", net.name,
                    "' has no step or update: run the training passes on the job first");
    const std::string base = net.name.empty() ? "train" : net.name;
    NetDef step = net.step, update = net.update;
    step.set_name(base + "_step");
    update.set_name(base + "_update");
    steps_.push_back(ws->CreateNet(step));
    updates_.push_back(ws->CreateNet(update));
  }
}

void JobRunner::RunStep(size_t k) { steps_.at(k)->Run(); }

void JobRunner::RunUpdate(size_t k) { updates_.at(k)->Run(); }

void JobRunner::Iteration() {
  for (size_t k = 0; k < steps_.size(); ++k) {
    RunStep(k);
    RunUpdate(k);
  }
}

}  // namespace halfcaf
