// The training passes (models/training_job.h says what each does and in which order they run).
// Each is built by a function here and defined in its own file.
#pragma once

#include <memory>
#include <vector>

#include "models/training_job.h"

namespace halfcaf {

std::unique_ptr<TrainingPass> MakeParamsPass();          // params_pass.cc
std::unique_ptr<TrainingPass> MakeMixedPrecisionPass();  // mixed_precision_pass.cc
std::unique_ptr<TrainingPass> MakeChannelsLastPass();     // channels_last_pass.cc
std::unique_ptr<TrainingPass> MakeConvAlgorithmPass();   // conv_algorithm_pass.cc
std::unique_ptr<TrainingPass> MakeBNReluPass();          // bn_relu_pass.cc
std::unique_ptr<TrainingPass> MakeBackwardPass();        // backward_pass.cc
std::unique_ptr<TrainingPass> MakeResidualReluPass();    // residual_relu_pass.cc
std::unique_ptr<TrainingPass> MakeRecomputePass();       // recompute_pass.cc
std::unique_ptr<TrainingPass> MakeOptimizerPass();       // optimizer_pass.cc

// Params, MixedPrecision, ChannelsLast, ConvAlgorithm, BNRelu, Backward, ResidualRelu, Recompute,
// Optimizer.
std::vector<std::unique_ptr<TrainingPass>> StandardPasses();

}  // namespace halfcaf
