// MixedPrecisionPass: in FP16 / BF16 jobs, each forward net computes in 16 bits where the recipe
// allows (models/mixed_precision.h), reading 16-bit copies of its Conv / FC parameters, frozen ones
// included; the init net makes each copy once from its FP32 master (the update refreshes the
// copies of trained parameters). Nets whose init net already makes the copies are left as they are.
#include "core/argument.h"
#include "models/mixed_precision.h"
#include "models/op_sequence.h"
#include "models/passes/passes.h"

namespace halfcaf {

namespace {

class MixedPrecisionPass : public TrainingPass {
 public:
  const char* name() const override { return "mixed precision"; }

  void Apply(TrainingJob* job) const override {
    if (!job->mixed_precision()) return;
    for (JobNet& net : job->nets) {
      if (!job->premade_copies.empty()) {
        for (const auto& kv : job->premade_copies) net.lowp.insert(kv.second);
        continue;
      }
      std::set<std::string> learned;
      for (const auto& kv : net.param_group) learned.insert(kv.first);
      MixedPrecisionResult mp =
          ToMixedPrecision(net.forward, net.no_cast_inputs, learned, job->precision);
      net.forward = mp.net;
      net.lowp.insert(mp.fp16_params.begin(), mp.fp16_params.end());
    }
    // The copies, once each (nets may share parameters), in the order of the first net's set.
    for (const JobNet& net : job->nets) {
      for (const auto& p : net.lowp) {
        const std::string copy = LowPrecisionCopyName(p, job->precision);
        if (job->premade_copies.count(copy) || NetWrites(job->init, copy)) continue;
        *job->init.add_op() =
            MakeOperatorDef(CastOpType(DataType::FLOAT, job->precision), "", {p}, {copy});
      }
    }
  }
};

}  // namespace

std::unique_ptr<TrainingPass> MakeMixedPrecisionPass() {
  return std::make_unique<MixedPrecisionPass>();
}

}  // namespace halfcaf
