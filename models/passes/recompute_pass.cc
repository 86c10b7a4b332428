// RecomputePass: in jobs with recompute set, each step's backward part makes the outputs of
// batch normalization and the element-wise ops (with recompute_convolutions, the convolutions
// between pools and residual merges too) again (models/recompute.h) instead of keeping them from
// the forward part, so the memory plan can reuse their buffers during the forward pass. Runs
// after the backward pass (which marks where the gradient ops begin).
#include "models/passes/passes.h"
#include "models/recompute.h"

namespace halfcaf {

namespace {

class RecomputePass : public TrainingPass {
 public:
  const char* name() const override { return "recompute"; }

  void Apply(TrainingJob* job) const override {
    if (!job->recompute) return;
    for (JobNet& net : job->nets) {
      net.step = RecomputeInBackward(net.step, net.backward_begin, job->ReadAfterStep(net),
                                     job->recompute_convolutions)
                     .net;
    }
  }
};

}  // namespace

std::unique_ptr<TrainingPass> MakeRecomputePass() { return std::make_unique<RecomputePass>(); }

}  // namespace halfcaf
