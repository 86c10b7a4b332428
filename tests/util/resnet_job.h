// Three steps of momentum SGD on ResNet-18 (3 x 32 x 32 images, 10 classes, batch 4) through a
// TrainingJob and its passes, as the trainer runs them, with `configure` setting the job's
// options: every loss and the parameters after the steps, for tests that compare two ways of
// running the same training bit for bit.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/workspace.h"
#include "models/job_runner.h"
#include "models/model_helper.h"
#include "models/passes/passes.h"
#include "models/training_job.h"
#include "models/zoo.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {

struct TrainedJob {
  std::vector<float> losses;
  std::map<std::string, std::vector<float>> params;
  TrainingJob job;
};

inline TrainedJob TrainResNet18Job(DataType precision,
                                   const std::function<void(TrainingJob*)>& configure) {
  ModelHelper h("resnet18", "NCHW", false);
  BuildResNet(&h, 18, 10, 32);
  TrainedJob t;
  t.job = MakeJob(h.init_net(), precision);
  configure(&t.job);
  OptimizerOptions o;
  o.base_lr = 0.05f;
  o.momentum = 0.9f;
  t.job.nets.push_back(JobNet::Make("", h.net(), {{"loss", 1.f}}, o));
  RunPasses(StandardPasses(), &t.job);
  SetGlobalSeed(5);  // the same initial weights for every run
  Workspace ws;
  SetInput(&ws, "data", RandomTensor({4, 3, 32, 32}, 19));
  SetInput(&ws, "label", IntTensor({4}, {1, 3, 7, 9}));
  JobRunner runner(t.job, &ws);
  for (int i = 0; i < 3; ++i) {
    SetInput(&ws, "data", RandomTensor({4, 3, 32, 32}, 20 + i));
    SetInput(&ws, "label", IntTensor({4}, {i % 10, 3, 7, 9}));
    runner.Iteration();
    t.losses.push_back(ToFloatVector(ws.GetTensor("loss"))[0]);
  }
  for (const ParamInfo& p : t.job.nets[0].params) {
    t.params[p.name] = ToFloatVector(ws.GetTensor(p.name));
  }
  return t;
}

// Every loss and parameter of `b` equal to `a`'s, bit for bit.
inline void ExpectSameTraining(const TrainedJob& a, const TrainedJob& b) {
  EXPECT_EQ(b.losses, a.losses);
  ASSERT_EQ(b.params.size(), a.params.size());
  for (const auto& [name, v] : a.params) {
    const std::vector<float>& g = b.params.at(name);
    ASSERT_EQ(g.size(), v.size()) << name;
    int64_t differ = 0;
    for (size_t i = 0; i < v.size(); ++i) differ += g[i] != v[i];
    EXPECT_EQ(differ, 0) << name << ": " << differ << " of " << v.size() << " values differ";
  }
}

}  // namespace testing
}  // namespace halfcaf
