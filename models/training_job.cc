#include "models/training_job.h"

#include "core/enforce.h"
#include "models/passes/passes.h"

namespace halfcaf {

const char kLossScale[] = "loss_scale";
const char kFoundInf[] = "found_inf";
const char kGoodSteps[] = "loss_scale_good_steps";
const char kSkipped[] = "skipped_steps";
const char kSkipStreak[] = "skipped_streak";
const char kMaxSkipStreak[] = "skipped_streak_max";
const char kLossGradSeed[] = "loss_grad_seed";

JobNet JobNet::Make(const std::string& name, const NetDef& forward, std::vector<LossTerm> losses,
                    const OptimizerOptions& optimizer) {
  JobNet net;
  net.name = name;
  net.forward = forward;
  net.losses = std::move(losses);
  net.optimizer = optimizer;
  return net;
}

TrainingJob MakeJob(const NetDef& init, DataType precision) {
  TrainingJob job;
  job.init = init;
  job.precision = precision;
  return job;
}

void RunPasses(const std::vector<std::unique_ptr<TrainingPass>>& passes, TrainingJob* job) {
  HALFCAF_ENFORCE(!job->nets.empty(), "the training job has no net");
  for (const auto& pass : passes) {
    try {
      pass->Apply(job);
    } catch (EnforceNotMet& e) {
      e.AddContext(std::string("training pass ") + pass->name());
      throw;
    }
  }
}

bool ResolveWinograd(const std::string& setting, DataType precision, DeviceType device) {
  HALFCAF_ENFORCE(setting == "direct" || setting == "winograd",
                  "conv_algorithm must be direct or winograd, got '", setting, "'");
  if (setting == "direct") return false;
  HALFCAF_ENFORCE(device == DeviceType::CPU && precision == DataType::FLOAT,
                  "conv_algorithm winograd needs float32 training on the CPU (oneDNN's Winograd "
                  "kernels); got ", DataTypeName(precision), " on ", DeviceTypeName(device));
  return true;
}

std::vector<std::unique_ptr<TrainingPass>> StandardPasses() {
  std::vector<std::unique_ptr<TrainingPass>> passes;
  passes.push_back(MakeParamsPass());
  passes.push_back(MakeMixedPrecisionPass());
  passes.push_back(MakeChannelsLastPass());
  passes.push_back(MakeConvAlgorithmPass());
  passes.push_back(MakeBNReluPass());
  passes.push_back(MakeBackwardPass());
  passes.push_back(MakeResidualReluPass());
  passes.push_back(MakeRecomputePass());
  passes.push_back(MakeOptimizerPass());
  return passes;
}

}  // namespace halfcaf
