// FP16MomentumSGDUpdate / FP32MomentumSGDUpdate against a straightforward reference in double,
// the float16-math rounding points, fp32_update's accuracy, errors and schema.
#include <gtest/gtest.h>

#include <cmath>

#include "core/gradient.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

struct Hyper {
  double lr = 0.05, mu = 0.9, wd = 0.0;
  bool nesterov = false;
};

std::vector<Argument> Args(const Hyper& h, int fp32_update = -1) {
  std::vector<Argument> a{MakeArgument("momentum", static_cast<float>(h.mu)),
                          MakeArgument("nesterov", h.nesterov ? 1 : 0),
                          MakeArgument("weight_decay", static_cast<float>(h.wd))};
  if (fp32_update >= 0) a.push_back(MakeArgument("fp32_update", fp32_update));
  return a;
}

OperatorDef Def(const std::string& type, const Hyper& h, bool in_place, int fp32_update = -1) {
  return MakeOperatorDef(type, "", {"g", "m", "lr", "p"},
                         in_place ? std::vector<std::string>{"g", "m", "p"}
                                  : std::vector<std::string>{"g_out", "m_out", "p_out"},
                         Args(h, fp32_update));
}

// Reference update in double on the (float) values of the inputs; also returns, per output, the
// sum of the magnitudes of the terms that make it (the scale of float16 rounding errors).
struct Reference {
  std::vector<double> g, m, p;     // outputs
  std::vector<double> gs, ms, ps;  // term magnitudes
  Reference(const std::vector<float>& g0, const std::vector<float>& m0,
            const std::vector<float>& p0, const Hyper& h) {
    for (size_t i = 0; i < g0.size(); ++i) {
      const double g1 = g0[i] + h.wd * p0[i];
      const double g1s = std::fabs(g0[i]) + std::fabs(h.wd * p0[i]);
      double step, step_s, m_new, m_new_s;
      m_new = h.mu * m0[i] + h.lr * g1;
      m_new_s = std::fabs(h.mu * m0[i]) + h.lr * g1s;
      if (h.nesterov) {
        step = (1 + h.mu) * m_new - h.mu * m0[i];
        step_s = (1 + h.mu) * m_new_s + std::fabs(h.mu * m0[i]);
      } else {
        step = m_new;
        step_s = m_new_s;
      }
      g.push_back(step);
      m.push_back(m_new);
      p.push_back(p0[i] - step);
      gs.push_back(step_s);
      ms.push_back(m_new_s);
      ps.push_back(std::fabs(p0[i]) + step_s);
    }
  }
};

struct Inputs {
  Tensor g, m, p;
  std::map<std::string, Tensor> Map(DataType dtype, float lr) const {
    if (dtype == DataType::FLOAT16) {
      return {{"g", ToHalf(g)}, {"m", ToHalf(m)}, {"p", ToHalf(p)}, {"lr", FloatTensor({1}, {lr})}};
    }
    return {{"g", g}, {"m", m}, {"p", p}, {"lr", FloatTensor({1}, {lr})}};
  }
};

// Random inputs; for float16 already rounded to float16 values so that the reference sees
// exactly what the op sees.
Inputs MakeInputs(std::vector<int64_t> dims, uint32_t seed, bool half) {
  Inputs in{RandomTensor(dims, seed), RandomTensor(dims, seed + 1, -0.5f, 0.5f),
            RandomTensor(dims, seed + 2, -2.f, 2.f)};
  if (half) {
    in.g = RoundThroughHalf(in.g);
    in.m = RoundThroughHalf(in.m);
    in.p = RoundThroughHalf(in.p);
  }
  return in;
}

std::vector<Hyper> Cases() {
  std::vector<Hyper> cases;
  for (bool nesterov : {false, true}) {
    for (double wd : {0.0, 0.01}) {
      Hyper h;
      h.nesterov = nesterov;
      h.wd = wd;
      cases.push_back(h);
    }
  }
  return cases;
}

std::string Name(const Hyper& h) {
  return std::string(h.nesterov ? "nesterov" : "plain") + " wd " + std::to_string(h.wd);
}

// The three outputs of one run.
struct Outputs {
  std::vector<float> g, m, p;
};

Outputs RunUpdate(const OperatorDef& def, const std::map<std::string, Tensor>& in) {
  Workspace ws;
  RunOp(def, in, &ws);
  return {ToFloatVector(ws.GetTensor(def.output(0))), ToFloatVector(ws.GetTensor(def.output(1))),
          ToFloatVector(ws.GetTensor(def.output(2)))};
}

// |got - want| <= atol + rtol * scale, element-wise; returns the sum of |got - want|.
double ExpectWithin(const std::vector<float>& got, const std::vector<double>& want,
                    const std::vector<double>& scale, double rtol, double atol,
                    const std::string& what) {
  EXPECT_EQ(got.size(), want.size()) << what;
  double sum = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]);
    sum += err;
    EXPECT_LE(err, atol + rtol * scale[i])
        << what << " element " << i << ": got " << got[i] << ", want " << want[i];
  }
  return sum;
}

// |value| + 0.004 * terms: with rtol u (float16's unit roundoff) this allows one float16 rounding
// of the result plus float's own rounding errors (about 2^-24 of the terms each).
std::vector<double> RoundedOnceScale(const std::vector<double>& value,
                                     const std::vector<double>& terms) {
  std::vector<double> a;
  for (size_t i = 0; i < value.size(); ++i) a.push_back(std::fabs(value[i]) + 0.004 * terms[i]);
  return a;
}

TEST(FP32MomentumSGDUpdateTest, MatchesReference) {
  const Inputs in = MakeInputs({7, 13}, 1, false);
  for (const Hyper& h : Cases()) {
    const Reference ref(ToFloatVector(in.g), ToFloatVector(in.m), ToFloatVector(in.p), h);
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(Name(h) + (in_place ? " in place" : ""));
      const Outputs out = RunUpdate(Def("FP32MomentumSGDUpdate", h, in_place),
                                    in.Map(DataType::FLOAT, static_cast<float>(h.lr)));
      ExpectWithin(out.g, ref.g, ref.gs, 1e-6, 1e-7, "grad_out");
      ExpectWithin(out.m, ref.m, ref.ms, 1e-6, 1e-7, "moment_out");
      ExpectWithin(out.p, ref.p, ref.ps, 1e-6, 1e-7, "param_out");
    }
  }
}

// Three in-place steps, as a training loop runs it: the state carries over.
TEST(FP32MomentumSGDUpdateTest, ThreeStepsInPlace) {
  Hyper h;
  h.nesterov = true;
  h.wd = 0.1;
  Workspace ws;
  Inputs in = MakeInputs({5}, 7, false);
  SetInput(&ws, "m", in.m);
  SetInput(&ws, "p", in.p);
  SetInput(&ws, "lr", FloatTensor({1}, {0.05f}));
  SetInput(&ws, "g", in.g);
  auto op = CreateOperator(Def("FP32MomentumSGDUpdate", h, true), &ws);
  std::vector<float> m = ToFloatVector(in.m), p = ToFloatVector(in.p);
  for (int step = 0; step < 3; ++step) {
    const Tensor g = RandomTensor({5}, 20 + step);
    SetInput(&ws, "g", g);
    op->Run(0);
    const Reference ref(ToFloatVector(g), m, p, h);
    m.assign(ref.m.begin(), ref.m.end());
    p.assign(ref.p.begin(), ref.p.end());
    const std::string at = " step " + std::to_string(step);
    ExpectWithin(ToFloatVector(ws.GetTensor("m")), ref.m, ref.ms, 1e-6, 1e-7, "moment" + at);
    ExpectWithin(ToFloatVector(ws.GetTensor("p")), ref.p, ref.ps, 1e-6, 1e-7, "param" + at);
  }
}

// Without weight decay the op is MomentumSGDUpdate.
TEST(FP32MomentumSGDUpdateTest, EqualsMomentumSGDUpdateWithoutWeightDecay) {
  const Inputs in = MakeInputs({4, 9}, 3, false);
  for (bool nesterov : {false, true}) {
    Hyper h;
    h.nesterov = nesterov;
    const auto inputs = in.Map(DataType::FLOAT, 0.05f);
    const Outputs a = RunUpdate(Def("FP32MomentumSGDUpdate", h, false), inputs);
    const Outputs b = RunUpdate(
        MakeOperatorDef("MomentumSGDUpdate", "", {"g", "m", "lr", "p"}, {"g_out", "m_out", "p_out"},
                        {MakeArgument("momentum", 0.9f), MakeArgument("nesterov", nesterov)}),
        inputs);
    EXPECT_EQ(a.g, b.g);
    EXPECT_EQ(a.m, b.m);
    EXPECT_EQ(a.p, b.p);
  }
}

// Both float16 modes against the double reference, and fp32_update=1 at least as accurate.
TEST(FP16MomentumSGDUpdateTest, BothModesMatchReferenceAndFp32UpdateIsMoreAccurate) {
  const Inputs in = MakeInputs({37, 29}, 11, true);
  const double u = std::ldexp(1.0, -11);  // float16 unit roundoff
  for (const Hyper& h : Cases()) {
    const Reference ref(ToFloatVector(in.g), ToFloatVector(in.m), ToFloatVector(in.p), h);
    const auto inputs = in.Map(DataType::FLOAT16, static_cast<float>(h.lr));
    double err[2] = {0, 0};
    for (int fp32 : {0, 1}) {
      SCOPED_TRACE(Name(h) + " fp32_update " + std::to_string(fp32));
      const Outputs out = RunUpdate(Def("FP16MomentumSGDUpdate", h, false, fp32), inputs);
      if (fp32) {
        // Rounded once: within half an ulp of the exact value (plus float's own error).
        err[1] += ExpectWithin(out.g, ref.g, RoundedOnceScale(ref.g, ref.gs), u, 1e-7, "grad_out");
        err[1] +=
            ExpectWithin(out.m, ref.m, RoundedOnceScale(ref.m, ref.ms), u, 1e-7, "moment_out");
        err[1] += ExpectWithin(out.p, ref.p, RoundedOnceScale(ref.p, ref.ps), u, 1e-7, "param_out");
      } else {
        // A handful of float16 roundings (of lr, momentum, each product and sum), each at most
        // u times the magnitude of the terms involved.
        err[0] += ExpectWithin(out.g, ref.g, ref.gs, 12 * u, 1e-7, "grad_out");
        err[0] += ExpectWithin(out.m, ref.m, ref.ms, 12 * u, 1e-7, "moment_out");
        err[0] += ExpectWithin(out.p, ref.p, ref.ps, 12 * u, 1e-7, "param_out");
      }
    }
    EXPECT_LT(err[1], err[0]) << Name(h) << ": fp32_update=1 should be more accurate";
  }
}

// fp32_update=0 rounds exactly the documented intermediates to float16: an emulation in double
// (products and sums of float16 values are exact in double) rounded at the same points.
TEST(FP16MomentumSGDUpdateTest, Fp16MathRoundsTheDocumentedIntermediates) {
  const Inputs in = MakeInputs({3, 41}, 21, true);
  auto h16 = [](double x) { return static_cast<double>(Half(static_cast<float>(x))); };
  for (const Hyper& h : Cases()) {
    SCOPED_TRACE(Name(h));
    const float lr = 0.1f;  // not a float16 value: rounded too
    const Outputs out =
        RunUpdate(Def("FP16MomentumSGDUpdate", h, false, 0), in.Map(DataType::FLOAT16, lr));
    const std::vector<float> g = ToFloatVector(in.g), m = ToFloatVector(in.m),
                             p = ToFloatVector(in.p);
    const double lr16 = h16(lr), mu = h16(h.mu), wd = h16(h.wd), one_mu = h16(1 + mu);
    int differs_from_fp32 = 0;
    const Outputs out32 =
        RunUpdate(Def("FP16MomentumSGDUpdate", h, false, 1), in.Map(DataType::FLOAT16, lr));
    for (size_t i = 0; i < g.size(); ++i) {
      const double g1 = h16(g[i] + h16(wd * p[i]));
      double m_new = h16(h16(mu * m[i]) + h16(lr16 * g1)), step = m_new;
      if (h.nesterov) step = h16(h16(one_mu * m_new) - h16(mu * m[i]));
      ASSERT_EQ(out.m[i], m_new) << "moment_out " << i;
      ASSERT_EQ(out.g[i], step) << "grad_out " << i;
      ASSERT_EQ(out.p[i], h16(p[i] - step)) << "param_out " << i;
      differs_from_fp32 += out.p[i] != out32.p[i] || out.m[i] != out32.m[i];
    }
    EXPECT_GT(differs_from_fp32, 0) << "the two modes should not coincide on these inputs";
  }
}

TEST(FP16MomentumSGDUpdateTest, InPlaceEqualsOutOfPlace) {
  const Inputs in = MakeInputs({6, 11}, 31, true);
  for (const Hyper& h : Cases()) {
    for (int fp32 : {0, 1}) {
      SCOPED_TRACE(Name(h) + " fp32_update " + std::to_string(fp32));
      const auto inputs = in.Map(DataType::FLOAT16, 0.05f);
      const Outputs a = RunUpdate(Def("FP16MomentumSGDUpdate", h, false, fp32), inputs);
      const Outputs b = RunUpdate(Def("FP16MomentumSGDUpdate", h, true, fp32), inputs);
      EXPECT_EQ(a.g, b.g);
      EXPECT_EQ(a.m, b.m);
      EXPECT_EQ(a.p, b.p);
    }
  }
}

// The float16 op with fp32_update=1 is the float op rounded once per output.
TEST(FP16MomentumSGDUpdateTest, Fp32UpdateIsTheFloatOpRounded) {
  const Inputs in = MakeInputs({5, 17}, 41, true);
  for (const Hyper& h : Cases()) {
    SCOPED_TRACE(Name(h));
    const Outputs a =
        RunUpdate(Def("FP16MomentumSGDUpdate", h, true, 1), in.Map(DataType::FLOAT16, 0.05f));
    const Outputs b =
        RunUpdate(Def("FP32MomentumSGDUpdate", h, true), in.Map(DataType::FLOAT, 0.05f));
    EXPECT_EQ(a.g, ToFloatVector(ToHalf(FloatTensor({85}, b.g))));
    EXPECT_EQ(a.m, ToFloatVector(ToHalf(FloatTensor({85}, b.m))));
    EXPECT_EQ(a.p, ToFloatVector(ToHalf(FloatTensor({85}, b.p))));
  }
}

std::string RunError(const OperatorDef& def, const std::map<std::string, Tensor>& inputs) {
  return RunOpError(def, inputs);
}

void ExpectErrorHas(const std::string& e, const std::string& needle) {
  EXPECT_NE(e.find(needle), std::string::npos) << e;
}

TEST(FP16MomentumSGDUpdateTest, BadInputs) {
  const Hyper h;
  const Inputs in = MakeInputs({4}, 51, true);
  const auto fp16 = in.Map(DataType::FLOAT16, 0.1f);
  const auto fp32 = in.Map(DataType::FLOAT, 0.1f);
  // Wrong dtypes name the op, the input and what it got.
  ExpectErrorHas(RunError(Def("FP32MomentumSGDUpdate", h, true), fp16),
                 "FP32MomentumSGDUpdate input 0 (grad) must be a float tensor, got float16[4]");
  ExpectErrorHas(RunError(Def("FP16MomentumSGDUpdate", h, true), fp32),
                 "FP16MomentumSGDUpdate input 0 (grad) must be a float16 tensor, got float[4]");
  auto mixed = fp16;
  mixed["p"] = in.p;
  ExpectErrorHas(RunError(Def("FP16MomentumSGDUpdate", h, true), mixed),
                 "FP16MomentumSGDUpdate input 3 (param) must be a float16 tensor, got float[4]");
  mixed = fp32;
  mixed["m"] = ToHalf(in.m);
  ExpectErrorHas(RunError(Def("FP32MomentumSGDUpdate", h, true), mixed),
                 "input 1 (moment) must be a float tensor, got float16[4]");
  // lr: one float element.
  auto bad_lr = fp16;
  bad_lr["lr"] = FloatTensor({2}, {0.1f, 0.2f});
  ExpectErrorHas(RunError(Def("FP16MomentumSGDUpdate", h, true), bad_lr),
                 "input 2 (lr) must be a float tensor with one element, got float[2]");
  bad_lr["lr"] = ToHalf(FloatTensor({1}, {0.1f}));
  ExpectErrorHas(RunError(Def("FP16MomentumSGDUpdate", h, true), bad_lr),
                 "input 2 (lr) must be a float tensor with one element, got float16[1]");
  // Shapes.
  auto bad_shape = fp32;
  bad_shape["m"] = RandomTensor({2, 2}, 5);
  ExpectErrorHas(RunError(Def("FP32MomentumSGDUpdate", h, true), bad_shape),
                 "grad [4], moment [2, 2] and param [4] must have the same shape");
  bad_shape = fp16;
  bad_shape["p"] = ToHalf(RandomTensor({5}, 6));
  ExpectErrorHas(RunError(Def("FP16MomentumSGDUpdate", h, false), bad_shape),
                 "grad [4], moment [4] and param [5] must have the same shape");
  // Only the listed in-place pairs.
  ExpectErrorHas(RunError(MakeOperatorDef("FP16MomentumSGDUpdate", "", {"g", "m", "lr", "p"},
                                          {"g_out", "m_out", "g"}),
                          fp16),
                 "cannot run in place");
}

TEST(FP16MomentumSGDUpdateTest, SchemaShapesCostAndNoGradient) {
  for (const char* type : {"FP16MomentumSGDUpdate", "FP32MomentumSGDUpdate"}) {
    const OpSchema* schema = OpSchemaRegistry::Schema(type);
    ASSERT_NE(schema, nullptr) << type;
    const DataType dt =
        std::string(type) == "FP16MomentumSGDUpdate" ? DataType::FLOAT16 : DataType::FLOAT;
    const OperatorDef def = Def(type, Hyper(), true);
    const std::vector<TensorShape> in = {
        {{3, 5}, dt}, {{3, 5}, dt}, {{}, DataType::FLOAT}, {{3, 5}, dt}};
    const auto out = schema->InferShapes(def, in);
    ASSERT_EQ(out.size(), 3u) << type;
    for (const auto& s : out) {
      EXPECT_EQ(s.dims, (std::vector<int64_t>{3, 5})) << type;
      EXPECT_EQ(s.dtype, dt) << type;
    }
    const OpCost c = schema->InferCost(def, in);
    EXPECT_GT(c.flops, 15 * 5);
    EXPECT_EQ(c.bytes_written, 3.0 * 15 * DataTypeSize(dt));
    EXPECT_THROW(GetGradientForOp(def, {GradientWrapper{}, GradientWrapper{}, GradientWrapper{}}),
                 EnforceNotMet)
        << type;
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
