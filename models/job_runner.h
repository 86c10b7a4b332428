// Runs a TrainingJob built by the passes (models/training_job.h): the init net once, then each
// iteration every net's step and update in the job's order (a GAN: discriminator, then
// generator), in one workspace. What feeds the nets (data, noise, labels) is the caller's: it
// writes those blobs before each iteration (or a net's own input ops make them).
//
//   JobRunner runner(job, &ws);     // runs job.init
//   for (...) { FeedBatch(&ws); runner.Iteration(); }
#pragma once

#include <vector>

#include "core/workspace.h"
#include "models/training_job.h"

namespace halfcaf {

class NetBase;

class JobRunner {
 public:
  // Runs job.init in `ws` and creates every net's step and update (named "<net>_step",
  // "<net>_update"; "train_step" for an unnamed net). Throws on a job the passes did not build.
  JobRunner(const TrainingJob& job, Workspace* ws);

  // One iteration: each net's step, then its update, net after net.
  void Iteration();
  // Net k's step or update alone (tests, custom orders).
  void RunStep(size_t k);
  void RunUpdate(size_t k);
  size_t num_nets() const { return steps_.size(); }

 private:
  std::vector<NetBase*> steps_, updates_;
};

}  // namespace halfcaf
