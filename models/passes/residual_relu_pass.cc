// ResidualReluPass: in CPU jobs (fuse_residual_relu), the ReLU after each residual Add runs
// in the Add, and the Sum of gradients before each ReluGradient in the ReluGradient
// (models/residual_relu_fusion.h): the separate ops' results bit for bit, a pass over the
// activation fewer each. Runs after the backward pass (the fused Add's gradient is still the
// ReluGradient and the Add's pass-through) and before recomputation (which then makes the fused
// Add again where it makes the Add and the Relu).
#include "models/passes/passes.h"
#include "models/residual_relu_fusion.h"

namespace halfcaf {

namespace {

class ResidualReluPass : public TrainingPass {
 public:
  const char* name() const override { return "residual relu"; }

  void Apply(TrainingJob* job) const override {
    if (!job->fuse_residual_relu) return;
    for (JobNet& net : job->nets) {
      ResidualReluFusion f =
          FuseResidualRelu(net.step, net.backward_begin, job->ReadAfterStep(net), job->blob_dims);
      net.step = std::move(f.net);
      net.backward_begin = f.backward_begin;
      job->residual_relu_fused += f.adds;
      job->residual_sums_fused += f.sums;
    }
  }
};

}  // namespace

std::unique_ptr<TrainingPass> MakeResidualReluPass() {
  return std::make_unique<ResidualReluPass>();
}

}  // namespace halfcaf
