#include <gtest/gtest.h>

#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

struct UpdateCase {
  Tensor grad = RandomTensor({3, 4}, 1);
  Tensor moment = RandomTensor({3, 4}, 2, -0.1f, 0.1f);
  Tensor param = RandomTensor({3, 4}, 3);
};

// Reference: the update rule written out, in double.
void Reference(const UpdateCase& c, float lr, float mom, float wd, float scale, bool nesterov,
               std::vector<double>* m, std::vector<double>* p) {
  for (int64_t i = 0; i < c.param.numel(); ++i) {
    double g = c.grad.data<float>()[i] / scale + wd * c.param.data<float>()[i];
    double m0 = c.moment.data<float>()[i], p0 = c.param.data<float>()[i];
    if (nesterov) {
      double mn = mom * m0 + lr * g;
      m->push_back(mn);
      p->push_back(p0 - ((1 + mom) * mn - mom * m0));
    } else {
      double v = lr * g + mom * m0;
      m->push_back(v);
      p->push_back(p0 - v);
    }
  }
}

void RunCase(bool nesterov, bool half_grad) {
  UpdateCase c;
  const float lr = 0.1f, mom = 0.9f, wd = 1e-2f, scale = 64.f;
  Workspace ws;
  SetInput(&ws, "g", half_grad ? ToHalf(c.grad) : c.grad);
  SetInput(&ws, "m", c.moment);
  SetInput(&ws, "p", c.param);
  SetInput(&ws, "lr", FloatTensor({}, {lr}));
  SetInput(&ws, "scale", FloatTensor({}, {scale}));
  SetInput(&ws, "inf", FloatTensor({}, {0.f}));
  RunOp(MakeOperatorDef("MixedPrecisionMomentumSGDUpdate", "", {"g", "m", "lr", "p", "scale", "inf"},
                        {"m", "p", "p16"},
                        {MakeArgument("momentum", mom), MakeArgument("weight_decay", wd),
                         MakeArgument("nesterov", nesterov ? 1 : 0)}),
        {}, &ws);
  UpdateCase ref_case = c;
  if (half_grad) ref_case.grad = RoundThroughHalf(c.grad);
  std::vector<double> m, p;
  Reference(ref_case, lr, mom, wd, scale, nesterov, &m, &p);
  auto gm = ToFloatVector(ws.GetTensor("m")), gp = ToFloatVector(ws.GetTensor("p"));
  for (size_t i = 0; i < m.size(); ++i) {
    EXPECT_NEAR(gm[i], m[i], 1e-6);
    EXPECT_NEAR(gp[i], p[i], 1e-6);
  }
  // The float16 copy is the new master rounded once.
  const Tensor& p16 = ws.GetTensor("p16");
  ASSERT_EQ(p16.dtype(), DataType::FLOAT16);
  for (size_t i = 0; i < gp.size(); ++i) EXPECT_EQ(p16.data<Half>()[i].x, Half(gp[i]).x);
}

TEST(MixedPrecisionSGDTest, MomentumUpdate) { RunCase(false, true); }
TEST(MixedPrecisionSGDTest, NesterovUpdate) { RunCase(true, true); }
TEST(MixedPrecisionSGDTest, Fp32GradientsToo) { RunCase(false, false); }

TEST(MixedPrecisionSGDTest, OverflowSkipsTheStep) {
  UpdateCase c;
  Workspace ws;
  SetInput(&ws, "g", ToHalf(c.grad));
  SetInput(&ws, "m", c.moment);
  SetInput(&ws, "p", c.param);
  SetInput(&ws, "p16", ToHalf(c.param));
  SetInput(&ws, "lr", FloatTensor({}, {0.1f}));
  SetInput(&ws, "scale", FloatTensor({}, {8.f}));
  SetInput(&ws, "inf", FloatTensor({}, {1.f}));
  RunOp(MakeOperatorDef("MixedPrecisionMomentumSGDUpdate", "", {"g", "m", "lr", "p", "scale", "inf"},
                        {"m", "p", "p16"}, {MakeArgument("momentum", 0.9f)}),
        {}, &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("p")), ToFloatVector(c.param));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("m")), ToFloatVector(c.moment));
}

TEST(MixedPrecisionSGDTest, ShapeAndTypeErrors) {
  Workspace ws;
  SetInput(&ws, "g", RandomTensor({3, 5}, 1));
  SetInput(&ws, "m", RandomTensor({3, 4}, 2));
  SetInput(&ws, "p", RandomTensor({3, 4}, 3));
  SetInput(&ws, "lr", FloatTensor({}, {0.1f}));
  try {
    RunOp(MakeOperatorDef("MixedPrecisionMomentumSGDUpdate", "", {"g", "m", "lr", "p"}, {"m", "p"}),
          {}, &ws);
    FAIL();
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("[3, 5]"), std::string::npos) << e.what();
  }
  SetInput(&ws, "g", RandomTensor({3, 4}, 1));
  SetInput(&ws, "p", ToHalf(RandomTensor({3, 4}, 3)));
  EXPECT_THROW(RunOp(MakeOperatorDef("MixedPrecisionMomentumSGDUpdate", "", {"g", "m", "lr", "p"},
                                     {"m", "p"}),
                     {}, &ws),
               EnforceNotMet);
}

// copy_dtype bfloat16: a bfloat16 gradient in, the new master rounded once to bfloat16 out.
TEST(MixedPrecisionSGDTest, BFloat16CopyAndGradient) {
  UpdateCase c;
  Workspace ws;
  SetInput(&ws, "g", ToBFloat16(c.grad));
  SetInput(&ws, "m", c.moment);
  SetInput(&ws, "p", c.param);
  SetInput(&ws, "lr", FloatTensor({}, {0.1f}));
  RunOp(MakeOperatorDef("MixedPrecisionMomentumSGDUpdate", "", {"g", "m", "lr", "p"},
                        {"m", "p", "pb"},
                        {MakeArgument("momentum", 0.9f), MakeArgument("copy_dtype", "bfloat16")}),
        {}, &ws);
  UpdateCase ref_case = c;
  ref_case.grad = RoundThroughBFloat16(c.grad);
  std::vector<double> m, p;
  Reference(ref_case, 0.1f, 0.9f, 0.f, 1.f, false, &m, &p);
  const auto gp = ToFloatVector(ws.GetTensor("p"));
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(gp[i], p[i], 1e-6);
  const Tensor& pb = ws.GetTensor("pb");
  ASSERT_EQ(pb.dtype(), DataType::BFLOAT16);
  for (size_t i = 0; i < gp.size(); ++i) EXPECT_EQ(pb.data<BFloat16>()[i].x, BFloat16(gp[i]).x);
  ExpectError(MakeOperatorDef("MixedPrecisionMomentumSGDUpdate", "", {"g", "m", "lr", "p"},
                              {"m", "p", "pb"}, {MakeArgument("copy_dtype", "double")}),
              {{"g", c.grad}, {"m", c.moment}, {"p", c.param}, {"lr", FloatTensor({}, {0.1f})}},
              "copy_dtype must be float16 or bfloat16, got double");
}

// A parameter of several pieces, updated on several threads: every fused update writes its 16-bit
// copy a piece at a time as it goes (LowPrecisionCopy), and every element of it is the new master
// rounded once, float16 and bfloat16.
TEST(MixedPrecisionUpdateCopyTest, EveryPieceOfALargeParameterIsCopied) {
  const int64_t n = 3 * 4096 + 17;
  struct Op {
    const char* type;
    std::vector<std::string> in, out;  // the copy is out.back()
  };
  const Op ops[] = {
      {"MixedPrecisionMomentumSGDUpdate", {"g", "s0", "lr", "p"}, {"s0", "p", "copy"}},
      {"MixedPrecisionAdamUpdate", {"g", "s0", "s1", "lr", "p", "iter"}, {"s0", "s1", "p", "copy"}},
      {"MixedPrecisionAdagradUpdate", {"g", "s0", "lr", "p"}, {"s0", "p", "copy"}},
      {"MixedPrecisionRmsPropUpdate", {"g", "s0", "s1", "lr", "p"}, {"s0", "s1", "p", "copy"}},
  };
  for (const Op& op : ops) {
    for (const char* type : {"float16", "bfloat16"}) {
      Workspace ws;
      SetInput(&ws, "g", RandomTensor({n}, 1));
      SetInput(&ws, "s0", RandomTensor({n}, 2, 0.f, 0.1f));
      SetInput(&ws, "s1", RandomTensor({n}, 3, 0.f, 0.1f));
      SetInput(&ws, "p", RandomTensor({n}, 4));
      SetInput(&ws, "lr", FloatTensor({}, {0.1f}));
      SetInput(&ws, "iter", Int64Scalar(1));
      RunOp(MakeOperatorDef(op.type, "", op.in, op.out,
                            {MakeArgument("copy_dtype", std::string(type))}),
            {}, &ws);
      const Tensor& copy = ws.GetTensor("copy");
      ASSERT_EQ(copy.numel(), n) << op.type;
      EXPECT_EQ(ToFloatVector(copy), ToFloatVector(RoundThrough(ws.GetTensor("p"), copy.dtype())))
          << op.type << " " << type;
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
