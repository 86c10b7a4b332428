#include <gtest/gtest.h>

#include "core/gradient.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

GradientWrapper DenseGrad(const std::string& name) {
  GradientWrapper g;
  g.dense = name;
  return g;
}

std::vector<float> Values(const Workspace& ws, const std::string& name) {
  return ToFloatVector(ws.GetTensor(name));
}

OperatorDef UpdateDef(bool nesterov) {
  return MakeOperatorDef("MomentumSGDUpdate", "", {"g", "m", "lr", "p"}, {"g", "m", "p"},
                         {MakeArgument("momentum", 0.9f), MakeArgument("nesterov", nesterov)});
}

// Three in-place steps with lr 0.1, momentum 0.9, p = 1, m = 0 and grads 1, 2, -1; the
// expected values below were worked out by hand from the update rules.
void RunThreeSteps(bool nesterov, std::vector<float>* p, std::vector<float>* m,
                   std::vector<float>* g) {
  Workspace ws;
  SetInput(&ws, "p", FloatTensor({1}, {1.f}));
  SetInput(&ws, "m", FloatTensor({1}, {0.f}));
  SetInput(&ws, "lr", FloatTensor({1}, {0.1f}));
  SetInput(&ws, "g", FloatTensor({1}, {0.f}));
  auto op = CreateOperator(UpdateDef(nesterov), &ws);
  for (float grad : {1.f, 2.f, -1.f}) {
    SetInput(&ws, "g", FloatTensor({1}, {grad}));
    op->Run(0);
    p->push_back(Values(ws, "p")[0]);
    m->push_back(Values(ws, "m")[0]);
    g->push_back(Values(ws, "g")[0]);
  }
}

TEST(MomentumSGDUpdateTest, PlainByHand) {
  std::vector<float> p, m, g;
  RunThreeSteps(false, &p, &m, &g);
  // v1 = 0.1, v2 = 0.2 + 0.09 = 0.29, v3 = -0.1 + 0.261 = 0.161
  ExpectNear(m, {0.1f, 0.29f, 0.161f}, 1e-6f, 0.f, "moment");
  ExpectNear(g, {0.1f, 0.29f, 0.161f}, 1e-6f, 0.f, "grad_out");
  ExpectNear(p, {0.9f, 0.61f, 0.449f}, 1e-6f, 0.f, "param");
}

TEST(MomentumSGDUpdateTest, NesterovByHand) {
  std::vector<float> p, m, g;
  RunThreeSteps(true, &p, &m, &g);
  // m1 = 0.1,  g1 = 1.9 * 0.1 = 0.19
  // m2 = 0.09 + 0.2 = 0.29,  g2 = 1.9 * 0.29 - 0.9 * 0.1 = 0.461
  // m3 = 0.261 - 0.1 = 0.161,  g3 = 1.9 * 0.161 - 0.9 * 0.29 = 0.0449
  ExpectNear(m, {0.1f, 0.29f, 0.161f}, 1e-6f, 0.f, "moment");
  ExpectNear(g, {0.19f, 0.461f, 0.0449f}, 1e-6f, 0.f, "grad_out");
  ExpectNear(p, {0.81f, 0.349f, 0.3041f}, 1e-6f, 0.f, "param");
}

// Reference for a whole vector, in double.
void Reference(bool nesterov, double mu, double lr, std::vector<double>* g,
               std::vector<double>* m, std::vector<double>* p) {
  for (size_t i = 0; i < g->size(); ++i) {
    double step;
    if (nesterov) {
      double m_new = mu * (*m)[i] + lr * (*g)[i];
      step = (1 + mu) * m_new - mu * (*m)[i];
      (*m)[i] = m_new;
    } else {
      step = lr * (*g)[i] + mu * (*m)[i];
      (*m)[i] = step;
    }
    (*g)[i] = step;
    if (p) (*p)[i] -= step;
  }
}

std::vector<double> ToDouble(const Tensor& t) {
  auto f = ToFloatVector(t);
  return std::vector<double>(f.begin(), f.end());
}

std::vector<float> ToFloat(const std::vector<double>& d) {
  return std::vector<float>(d.begin(), d.end());
}

TEST(MomentumSGDUpdateTest, VectorAgainstReferenceNotInPlace) {
  for (bool nesterov : {false, true}) {
    Tensor g = RandomTensor({3, 7}, 1), m = RandomTensor({3, 7}, 2), p = RandomTensor({3, 7}, 3);
    auto def = MakeOperatorDef("MomentumSGDUpdate", "", {"g", "m", "lr", "p"},
                               {"g2", "m2", "p2"},
                               {MakeArgument("momentum", 0.8f),
                                MakeArgument("nesterov", nesterov)});
    Workspace ws;
    RunOp(def, {{"g", g}, {"m", m}, {"p", p}, {"lr", FloatTensor({1}, {0.05f})}}, &ws);
    auto rg = ToDouble(g), rm = ToDouble(m), rp = ToDouble(p);
    Reference(nesterov, 0.8, 0.05, &rg, &rm, &rp);
    ExpectNear(Values(ws, "g2"), ToFloat(rg), 1e-6f, 1e-6f, "grad_out");
    ExpectNear(Values(ws, "m2"), ToFloat(rm), 1e-6f, 1e-6f, "moment_out");
    ExpectNear(Values(ws, "p2"), ToFloat(rp), 1e-6f, 1e-6f, "param_out");
    // Inputs untouched.
    EXPECT_EQ(Values(ws, "g"), ToFloatVector(g));
    EXPECT_EQ(Values(ws, "p"), ToFloatVector(p));
  }
}

TEST(MomentumSGDTest, ThreeStepsInPlace) {
  for (bool nesterov : {false, true}) {
    Workspace ws;
    Tensor m0 = RandomTensor({5}, 4);
    SetInput(&ws, "m", m0);
    SetInput(&ws, "lr", FloatTensor({1}, {0.1f}));
    SetInput(&ws, "g", FloatTensor({5}, {0, 0, 0, 0, 0}));
    auto op = CreateOperator(
        MakeOperatorDef("MomentumSGD", "", {"g", "m", "lr"}, {"g", "m"},
                        {MakeArgument("momentum", 0.9f), MakeArgument("nesterov", nesterov)}),
        &ws);
    std::vector<double> rm = ToDouble(m0);
    for (int step = 0; step < 3; ++step) {
      Tensor g = RandomTensor({5}, 10 + step);
      SetInput(&ws, "g", g);
      op->Run(0);
      std::vector<double> rg = ToDouble(g);
      Reference(nesterov, 0.9, 0.1, &rg, &rm, nullptr);
      const std::string at = " step " + std::to_string(step);
      ExpectNear(Values(ws, "g"), ToFloat(rg), 1e-6f, 1e-6f, "grad_out" + at);
      ExpectNear(Values(ws, "m"), ToFloat(rm), 1e-6f, 1e-6f, "moment" + at);
    }
  }
}

std::string RunError(const OperatorDef& def, const std::map<std::string, Tensor>& inputs) {
  return RunOpError(def, inputs);
}

TEST(MomentumSGDUpdateTest, Errors) {
  auto def = UpdateDef(false);
  Tensor v = RandomTensor({4}, 5);
  std::string e = RunError(def, {{"g", ToHalf(v)}, {"m", v}, {"p", v},
                                 {"lr", FloatTensor({1}, {0.1f})}});
  EXPECT_NE(e.find("grad must be a float tensor"), std::string::npos) << e;
  EXPECT_NE(e.find("float16[4]"), std::string::npos) << e;
  e = RunError(def, {{"g", v}, {"m", v}, {"p", v}, {"lr", FloatTensor({2}, {0.1f, 0.2f})}});
  EXPECT_NE(e.find("lr must have exactly one element"), std::string::npos) << e;
  e = RunError(def, {{"g", v}, {"m", RandomTensor({2, 2}, 6)}, {"p", v},
                     {"lr", FloatTensor({1}, {0.1f})}});
  EXPECT_NE(e.find("grad and moment must have the same shape, got [4] and [2, 2]"),
            std::string::npos)
      << e;
  e = RunError(def, {{"g", v}, {"m", v}, {"p", RandomTensor({5}, 7)},
                     {"lr", FloatTensor({1}, {0.1f})}});
  EXPECT_NE(e.find("param and grad must have the same shape"), std::string::npos) << e;
  // param may only be updated in place into param_out.
  e = RunError(MakeOperatorDef("MomentumSGDUpdate", "", {"g", "m", "lr", "p"}, {"p", "m", "p2"}),
               {{"g", v}, {"m", v}, {"p", v}, {"lr", FloatTensor({1}, {0.1f})}});
  EXPECT_NE(e.find("cannot run in place"), std::string::npos) << e;
}

TEST(MomentumSGDUpdateTest, ShouldNotDoGradient) {
  for (const char* type : {"MomentumSGD", "MomentumSGDUpdate"}) {
    auto def = MakeOperatorDef(type, "", {"g", "m", "lr"}, {"g", "m"});
    EXPECT_THROW(GetGradientForOp(def, {DenseGrad("g_grad"), GradientWrapper{}}),
                 EnforceNotMet)
        << type;
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
