// ChannelsLastPass: in jobs with channels_last set, each forward net's 2-D convolutions and the
// batch normalization, pooling and element-wise ops between them run in NHWC (models/
// channels_last.h); with channel_block set, the FP32 convolutions, batch normalization and
// element-wise ops run on oneDNN's channel-blocked layout instead (ToChannelBlocked, the filters'
// shapes from the parameters ParamsPass found). Parameters and their 16-bit copies stay NCHW (the
// convolutions read them as they are with nchw_filters, CPU jobs; otherwise the filters are
// transposed in the forward net, their gradients back), so the optimizer, checkpoints and
// evaluation are as without it. Runs after the mixed-precision pass (the casts it adds are element-wise) and before
// the backward pass, which differentiates the transposes like any op.
#include "core/enforce.h"
#include "models/channels_last.h"
#include "models/passes/passes.h"

namespace halfcaf {

namespace {

class ChannelsLastPass : public TrainingPass {
 public:
  const char* name() const override { return "channels last"; }

  void Apply(TrainingJob* job) const override {
    if (!job->channels_last && job->channel_block == 0) return;
    HALFCAF_ENFORCE(!job->channels_last || job->channel_block == 0,
                    "channels last and the channel-blocked layout exclude each other");
    for (JobNet& net : job->nets) {
      std::map<std::string, std::vector<int64_t>>* dims =
          job->blob_dims.empty() ? nullptr : &job->blob_dims;
      if (job->channels_last) {
        net.forward =
            ToChannelsLast(net.forward, job->ReadAfterStep(net), dims, job->nchw_filters).net;
        continue;
      }
      std::map<std::string, std::vector<int64_t>> param_dims;
      for (const ParamInfo& p : net.params) {
        if (!p.shape.empty()) param_dims[p.name] = p.shape;
      }
      net.forward = ToChannelBlocked(net.forward, job->ReadAfterStep(net), job->channel_block,
                                     param_dims, dims)
                        .net;
    }
  }
};

}  // namespace

std::unique_ptr<TrainingPass> MakeChannelsLastPass() {
  return std::make_unique<ChannelsLastPass>();
}

}  // namespace halfcaf
