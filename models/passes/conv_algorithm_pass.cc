// ConvAlgorithmPass: in jobs with `winograd` set, each forward net's 2-D convolutions with a 3 x 3
// filter, stride 1, no dilation and one group take conv_algorithm = 1 (Caffe2's
// CONV_ALGORITHM_WINOGRAD): oneDNN's Winograd kernels where it has them (float32 on AVX-512), its
// direct ones elsewhere. The backward pass copies the argument into their gradients. Runs after
// the channels-last pass (a blocked convolution keeps its arguments) and before the backward pass.
#include "models/passes/passes.h"
#include "operators/nn/conv_op.h"

namespace halfcaf {

namespace {

class ConvAlgorithmPass : public TrainingPass {
 public:
  const char* name() const override { return "conv algorithm"; }

  void Apply(TrainingJob* job) const override {
    if (!job->winograd) return;
    for (JobNet& net : job->nets) {
      for (OperatorDef& op : *net.forward.mutable_op()) {
        if (IsWinogradCandidate(op)) SetArgument(&op, "conv_algorithm", 1);
      }
    }
  }
};

}  // namespace

std::unique_ptr<TrainingPass> MakeConvAlgorithmPass() {
  return std::make_unique<ConvAlgorithmPass>();
}

}  // namespace halfcaf
