// The training passes (models/training_job.h) on a job of two nets sharing a workspace and a
// parameter: each with its own losses (one of them two weighted losses), optimizer state and loss
// scale, parameter groups with their own learning rates, and a frozen parameter. Frozen
// parameters never change (bitwise, 16-bit copies included), and each group's update is its own
// rate times its gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/net.h"
#include "core/workspace.h"
#include "models/job_runner.h"
#include "models/passes/passes.h"
#include "models/training_job.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

constexpr float kLr = 0.1f;

OperatorDef Given(const std::string& name, std::vector<int64_t> dims, uint32_t seed) {
  const Tensor t = RandomTensor(dims, seed, -0.5f, 0.5f);
  const std::vector<float> v = ToFloatVector(t);
  return MakeOperatorDef("GivenTensorFill", "", {}, {name},
                         {MakeArgument("shape", dims), MakeArgument("values", v)});
}

// FC(in, w, b) -> out.
OperatorDef Fc(const std::string& in, const std::string& p, const std::string& out) {
  return MakeOperatorDef("FC", "", {in, p + "_w", p + "_b"}, {out});
}

// Mean squared distance of `y` to `target`, as blob `loss`.
void AddL2Loss(NetDef* net, const std::string& y, const std::string& target,
               const std::string& loss) {
  *net->add_op() = MakeOperatorDef("SquaredL2Distance", "", {y, target}, {loss + "_dist"});
  *net->add_op() = MakeOperatorDef("AveragedLoss", "", {loss + "_dist"}, {loss});
}

OptimizerOptions Sgd() {
  OptimizerOptions o;
  o.base_lr = kLr;
  o.momentum = 0.9f;
  return o;
}

// Net "a": x -> FC(a) -> h -> FC(shared) -> y; losses: |y - t|^2 and 0.5 |h - th|^2; group a_*
// at twice the rate. Net "b": x -> FC(frozen) -> z -> FC(shared) -> u; loss |u - t|^2; frozen_*
// frozen, shared_* at half the rate.
TrainingJob TwoNetJob(DataType precision) {
  NetDef init;
  *init.add_op() = Given("a_w", {8, 6}, 1);
  *init.add_op() = Given("a_b", {8}, 2);
  *init.add_op() = Given("frozen_w", {8, 6}, 3);
  *init.add_op() = Given("frozen_b", {8}, 4);
  *init.add_op() = Given("shared_w", {4, 8}, 5);
  *init.add_op() = Given("shared_b", {4}, 6);
  TrainingJob job = MakeJob(init, precision);
  job.loss_scale = precision == DataType::FLOAT ? 1.f : 64.f;

  NetDef a;
  *a.add_op() = Fc("x", "a", "h");
  *a.add_op() = Fc("h", "shared", "y");
  AddL2Loss(&a, "y", "t", "loss_a");
  AddL2Loss(&a, "h", "th", "loss_h");
  JobNet net_a = JobNet::Make("a", a, {{"loss_a", 1.f}, {"loss_h", 0.5f}}, Sgd());
  net_a.groups = {ParamGroup{"^a_", 2.f, 1.f, false}};
  job.nets.push_back(net_a);

  NetDef b;
  *b.add_op() = Fc("x", "frozen", "z");
  *b.add_op() = Fc("z", "shared", "u");
  AddL2Loss(&b, "u", "t", "loss_b");
  JobNet net_b = JobNet::Make("b", b, {{"loss_b", 1.f}}, Sgd());
  net_b.groups = {ParamGroup{"^frozen_", 0.f, 0.f, true}, ParamGroup{"^shared_", 0.5f, 1.f, false}};
  job.nets.push_back(net_b);
  return job;
}

std::vector<uint32_t> Bits(const Tensor& t) {
  Tensor cpu;
  cpu.CopyFrom(t);
  std::vector<uint32_t> out(static_cast<size_t>(cpu.nbytes() + 3) / 4, 0);
  std::memcpy(out.data(), cpu.raw_data(), static_cast<size_t>(cpu.nbytes()));
  return out;
}

void ExpectTwoNetJobTrains(DataType precision) {
  TrainingJob job = TwoNetJob(precision);
  RunPasses(StandardPasses(), &job);
  const JobNet& a = job.nets[0];
  const JobNet& b = job.nets[1];
  EXPECT_EQ(a.trained, (std::set<std::string>{"a_w", "a_b", "shared_w", "shared_b"}));
  EXPECT_EQ(b.trained, (std::set<std::string>{"shared_w", "shared_b"}));

  Workspace ws;
  SetInput(&ws, "x", RandomTensor({5, 6}, 11));
  SetInput(&ws, "t", RandomTensor({5, 4}, 12));
  SetInput(&ws, "th", RandomTensor({5, 8}, 13));
  JobRunner runner(job, &ws);  // the init net, then each net's step and update
  // Each net keeps its own optimizer and loss-scale state; the frozen parameter has none.
  for (const std::string blob : {"a/iter", "b/iter", "a/shared_w_momentum", "b/shared_w_momentum",
                                 "a/a_w_momentum", "a/loss_scale", "b/loss_scale"}) {
    EXPECT_TRUE(ws.HasBlob(blob)) << blob;
  }
  EXPECT_FALSE(ws.HasBlob("b/frozen_w_momentum"));
  EXPECT_FALSE(ws.HasBlob("a/frozen_w_momentum"));

  std::vector<std::string> frozen{"frozen_w", "frozen_b"};
  if (precision != DataType::FLOAT) {
    const std::string suffix = precision == DataType::FLOAT16 ? "_fp16" : "_bf16";
    frozen.push_back("frozen_w" + suffix);
    frozen.push_back("frozen_b" + suffix);
  }
  std::map<std::string, std::vector<uint32_t>> before;
  for (const auto& f : frozen) before[f] = Bits(ws.GetTensor(f));

  const JobNet* nets[2] = {&a, &b};
  const float scale = job.loss_scale;
  for (int iter = 0; iter < 3; ++iter) {
    for (int k = 0; k < 2; ++k) {
      runner.RunStep(k);
      // Parameters and gradients before this net's update (the gradients are loss-scaled).
      std::map<std::string, std::vector<float>> p0, g;
      for (const auto& pg : nets[k]->param_grads) {
        p0[pg.param] = ToFloatVector(ws.GetTensor(pg.param));
        g[pg.param] = ToFloatVector(ws.GetTensor(pg.grad));
      }
      runner.RunUpdate(k);
      if (iter > 0) continue;  // with momentum 0 the first step is -rate * gradient exactly
      for (const auto& pg : nets[k]->param_grads) {
        const float rate = kLr * nets[k]->param_group.at(pg.param).lr_mult;
        const std::vector<float> p1 = ToFloatVector(ws.GetTensor(pg.param));
        double worst = 0;
        for (size_t i = 0; i < p1.size(); ++i) {
          const double want = -static_cast<double>(rate) * g[pg.param][i] / scale;
          const double got = static_cast<double>(p1[i]) - p0[pg.param][i];
          worst = std::max(worst, std::fabs(got - want) /
                                      std::max(std::fabs(want), 1e-6 * std::fabs(p0[pg.param][i])));
        }
        EXPECT_LT(worst, 1e-3) << nets[k]->name << ": " << pg.param << " (rate " << rate << ")";
      }
    }
    for (const auto& f : frozen) {
      EXPECT_EQ(Bits(ws.GetTensor(f)), before[f]) << f << " changed at iteration " << iter;
    }
  }
  EXPECT_EQ(ws.GetTensor("a/iter").data<int64_t>()[0], 3);
  EXPECT_EQ(ws.GetTensor("b/iter").data<int64_t>()[0], 3);
  // Iteration() runs both nets in order: net a's loss falls over ten more iterations.
  const float loss_before = ws.GetTensor("loss_a").data<float>()[0];
  for (int i = 0; i < 10; ++i) runner.Iteration();
  EXPECT_LT(ws.GetTensor("loss_a").data<float>()[0], loss_before);
  EXPECT_EQ(ws.GetTensor("a/iter").data<int64_t>()[0], 13);
  for (const auto& f : frozen) EXPECT_EQ(Bits(ws.GetTensor(f)), before[f]) << f;
}

TEST(TrainingJobTest, TwoNetsSharingAParameterFloat32) { ExpectTwoNetJobTrains(DataType::FLOAT); }

TEST(TrainingJobTest, TwoNetsSharingAParameterFloat16) {
  ExpectTwoNetJobTrains(DataType::FLOAT16);
}

TEST(TrainingJobTest, TwoNetsSharingAParameterBFloat16) {
  ExpectTwoNetJobTrains(DataType::BFLOAT16);
}

// A pass alone: ParamsPass sorts parameters into groups and names the group that matches none.
TEST(TrainingJobTest, ParamsPassAlone) {
  TrainingJob job = TwoNetJob(DataType::FLOAT);
  MakeParamsPass()->Apply(&job);
  EXPECT_EQ(job.nets[1].param_group.at("frozen_w").frozen, true);
  EXPECT_EQ(job.nets[1].param_group.at("shared_b").lr_mult, 0.5f);
  EXPECT_TRUE(job.nets[0].step.op().empty());  // the later passes did not run

  TrainingJob typo = TwoNetJob(DataType::FLOAT);
  typo.nets[1].groups.push_back(ParamGroup{"^backbone", 1.f, 1.f, true});
  try {
    RunPasses(StandardPasses(), &typo);
    FAIL() << "a group matching nothing was accepted";
  } catch (const EnforceNotMet& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("parameter group '^backbone' of net 'b' matches no parameter"),
              std::string::npos) << msg;
    EXPECT_NE(msg.find("training pass params"), std::string::npos) << msg;
  }
  TrainingJob all = TwoNetJob(DataType::FLOAT);
  all.nets[0].groups = {ParamGroup{".", 1.f, 1.f, true}};
  EXPECT_THROW(RunPasses(StandardPasses(), &all), EnforceNotMet);
}

// A loss's weight scales its gradient: weight 0.5 on one loss of two gives half that loss's
// gradient (checked on the gradient of h's own loss through a_w).
TEST(TrainingJobTest, LossWeightsScaleTheirGradients) {
  std::vector<float> grads[2];
  for (int k = 0; k < 2; ++k) {
    TrainingJob job = TwoNetJob(DataType::FLOAT);
    job.nets.resize(1);
    job.nets[0].losses = {{"loss_h", k == 0 ? 1.f : 0.5f}};
    job.nets[0].groups.clear();
    // Only the parameters before h receive a gradient from loss_h.
    RunPasses(StandardPasses(), &job);
    Workspace ws;
    ws.RunNetOnce(job.init);
    SetInput(&ws, "x", RandomTensor({5, 6}, 11));
    SetInput(&ws, "t", RandomTensor({5, 4}, 12));
    SetInput(&ws, "th", RandomTensor({5, 8}, 13));
    ws.RunNetOnce(job.nets[0].step);
    grads[k] = ToFloatVector(ws.GetTensor("a_w_grad"));
  }
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (size_t i = 0; i < grads[0].size(); ++i) EXPECT_FLOAT_EQ(grads[1][i], 0.5f * grads[0][i]);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
