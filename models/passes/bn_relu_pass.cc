// BNReluPass: in CPU jobs that allow it (fuse_bn_relu: float32, bfloat16 channels last), each
// training SpatialBN whose output only a Relu reads takes the Relu in (models/bn_relu_fusion.h):
// the separate ops' results bit for bit, with two element-wise passes fewer forward and three
// backward. Runs after the channels-last pass (which may block the batch normalization) and before
// the backward pass (which makes the fused op's gradient).
#include "models/bn_relu_fusion.h"
#include "models/passes/passes.h"

namespace halfcaf {

namespace {

class BNReluPass : public TrainingPass {
 public:
  const char* name() const override { return "batch norm + relu"; }

  void Apply(TrainingJob* job) const override {
    if (!job->fuse_bn_relu) return;
    for (JobNet& net : job->nets) {
      BNReluFusion f = FuseBNRelu(net.forward, job->ReadAfterStep(net));
      net.forward = std::move(f.net);
      job->bn_relu_fused += f.fused;
    }
  }
};

}  // namespace

std::unique_ptr<TrainingPass> MakeBNReluPass() { return std::make_unique<BNReluPass>(); }

}  // namespace halfcaf
