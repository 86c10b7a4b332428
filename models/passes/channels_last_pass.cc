// ChannelsLastPass: in jobs with channels_last set, each forward net's 2-D convolutions and the
// batch normalization, pooling and element-wise ops between them run in NHWC (models/
// channels_last.h). Parameters and their 16-bit copies stay NCHW (the filters are transposed in
// the forward net, their gradients back), so the optimizer, checkpoints and evaluation are as
// without it. Runs after the mixed-precision pass (the casts it adds are element-wise) and before
// the backward pass, which differentiates the transposes like any op.
#include "models/channels_last.h"
#include "models/passes/passes.h"

namespace halfcaf {

namespace {

class ChannelsLastPass : public TrainingPass {
 public:
  const char* name() const override { return "channels last"; }

  void Apply(TrainingJob* job) const override {
    if (!job->channels_last) return;
    for (JobNet& net : job->nets) {
      std::map<std::string, std::vector<int64_t>>* dims =
          job->blob_dims.empty() ? nullptr : &job->blob_dims;
      net.forward = ToChannelsLast(net.forward, job->ReadAfterStep(net), dims).net;
    }
  }
};

}  // namespace

std::unique_ptr<TrainingPass> MakeChannelsLastPass() {
  return std::make_unique<ChannelsLastPass>();
}

}  // namespace halfcaf
