// bfloat16 through the operators: Cast to and from BFLOAT16 (16), FloatToBFloat16 /
// BFloat16ToFloat and their gradients, and the CPU operators that read and write through
// core/float_io (computing in float, rounding once).
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "core/gradient.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

std::vector<uint16_t> Bits(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DataType::BFLOAT16);
  std::vector<uint16_t> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.data<BFloat16>()[i].x);
  return out;
}

Tensor BFloat16Tensor(std::vector<int64_t> dims, const std::vector<uint16_t>& bits) {
  Tensor t(std::move(dims), DataType::BFLOAT16);
  EXPECT_EQ(static_cast<int64_t>(bits.size()), t.numel());
  for (size_t i = 0; i < bits.size(); ++i) t.mutable_data<BFloat16>()[i].x = bits[i];
  return t;
}

TEST(BFloat16CastOpTest, FloatToBFloat16RoundsToNearestEven) {
  Workspace ws;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  RunOp(MakeOperatorDef("FloatToBFloat16", "", {"x"}, {"b"}),
        {{"x", FloatTensor({2, 4}, {1.f / 3, -2.f, FLT_MAX, -0.f, 1e-40f, nan,
                                    1.00390625f /* tie, even below */, 257.f /* tie */})}},
        &ws);
  EXPECT_EQ(ws.GetTensor("b").dims(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(Bits(ws.GetTensor("b")),
            (std::vector<uint16_t>{0x3eab, 0xc000, 0x7f80, 0x8000, FloatToBFloat16Bits(1e-40f),
                                   0x7fc0, 0x3f80, 0x4380}));
  EXPECT_NE(Bits(ws.GetTensor("b"))[4], 0);  // a subnormal is kept, not flushed
  RunOp(MakeOperatorDef("BFloat16ToFloat", "", {"b"}, {"f"}), {}, &ws);
  const std::vector<float> f = ToFloatVector(ws.GetTensor("f"));
  EXPECT_EQ(ws.GetTensor("f").dtype(), DataType::FLOAT);
  EXPECT_EQ(f[0], 0.333984375f);
  EXPECT_EQ(f[2], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(f[3]));
  EXPECT_TRUE(std::isnan(f[5]));
  EXPECT_EQ(f[7], 256.f);
}

TEST(BFloat16CastOpTest, FixedCastsRejectOtherTypes) {
  ExpectError(MakeOperatorDef("BFloat16ToFloat", "", {"x"}, {"y"}),
              {{"x", FloatTensor({3}, {1, 2, 3})}},
              "BFloat16ToFloat expects bfloat16 input, got float[3]");
  ExpectError(MakeOperatorDef("FloatToBFloat16", "", {"x"}, {"y"}),
              {{"x", ToHalf(FloatTensor({2}, {1, 2}))}},
              "FloatToBFloat16 expects float input, got float16[2]");
}

// Cast's `to` takes the enum value 16 or the names, and converts between bfloat16 and every
// numeric type: through float, rounding once.
TEST(BFloat16CastOpTest, CastToAndFromEveryType) {
  for (const Argument& to : {MakeArgument("to", 16), MakeArgument("to", "bfloat16"),
                             MakeArgument("to", "BFLOAT16"), MakeArgument("to", "bf16")}) {
    Workspace ws;
    RunOp(MakeOperatorDef("Cast", "", {"x"}, {"y"}, {to}),
          {{"x", FloatTensor({3}, {1.f / 3, 3e38f, -1.5f})}}, &ws);
    EXPECT_EQ(Bits(ws.GetTensor("y")), (std::vector<uint16_t>{0x3eab, 0x7f62, 0xbfc0}));
  }
  Workspace ws;
  // int32 -> bfloat16: 257 is a tie between 256 and 258 (even: 256); 259 rounds to 260.
  RunOp(MakeOperatorDef("Cast", "", {"i"}, {"b"}, {MakeArgument("to", 16)}),
        {{"i", IntTensor({3}, {257, 259, -7})}}, &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("b")), (std::vector<float>{256, 260, -7}));
  // bfloat16 -> int32 truncates toward zero, as float does.
  RunOp(MakeOperatorDef("Cast", "", {"c"}, {"i2"}, {MakeArgument("to", 2)}),
        {{"c", BFloat16Tensor({2}, {0x3fe0 /* 1.75 */, 0xc020 /* -2.5 */})}}, &ws);
  EXPECT_EQ(ws.GetTensor("i2").data<int32_t>()[0], 1);
  EXPECT_EQ(ws.GetTensor("i2").data<int32_t>()[1], -2);
  // float16 <-> bfloat16: 65504 (largest float16) rounds up to 65536 in bfloat16, which is past
  // float16's range on the way back.
  RunOp(MakeOperatorDef("Cast", "", {"h"}, {"hb"}, {MakeArgument("to", "BFLOAT16")}),
        {{"h", ToHalf(FloatTensor({2}, {65504.f, 0.1f}))}}, &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("hb")),
            (std::vector<float>{65536.f, static_cast<float>(BFloat16(static_cast<float>(
                                             Half(0.1f))))}));
  RunOp(MakeOperatorDef("Cast", "", {"hb"}, {"h2"}, {MakeArgument("to", 12)}), {}, &ws);
  EXPECT_EQ(ws.GetTensor("h2").data<Half>()[0].x, 0x7c00);
  // double -> bfloat16 and back; in place with a size change (float -> bfloat16).
  Tensor d({1}, DataType::DOUBLE);
  d.mutable_data<double>()[0] = 0.1;
  RunOp(MakeOperatorDef("Cast", "", {"d"}, {"db"}, {MakeArgument("to", 16)}), {{"d", d}}, &ws);
  EXPECT_EQ(Bits(ws.GetTensor("db")), std::vector<uint16_t>{0x3dcd});
  RunOp(MakeOperatorDef("Cast", "", {"u"}, {"u"}, {MakeArgument("to", 16)}),
        {{"u", FloatTensor({2}, {2.f, -0.5f})}}, &ws);
  EXPECT_EQ(Bits(ws.GetTensor("u")), (std::vector<uint16_t>{0x4000, 0xbf00}));
  // Unknown values still name the valid ones, 16 included.
  ExpectError(MakeOperatorDef("Cast", "", {"x"}, {"y"}, {MakeArgument("to", 14)}),
              {{"x", FloatTensor({1}, {1})}}, "0-10, 12, 13, 16 = BFLOAT16");
}

TEST(BFloat16CastOpTest, GradientsCastBack) {
  std::vector<GradientWrapper> g{{"y_grad", "", ""}};
  for (const auto& pair : std::vector<std::pair<std::string, std::string>>{
           {"FloatToBFloat16", "BFloat16ToFloat"}, {"BFloat16ToFloat", "FloatToBFloat16"}}) {
    auto meta = GetGradientForOp(MakeOperatorDef(pair.first, "", {"x"}, {"y"}), g);
    ASSERT_EQ(meta.ops.size(), 1u);
    EXPECT_EQ(meta.ops[0].type(), pair.second);
    EXPECT_EQ(meta.ops[0].input(0), "y_grad");
    EXPECT_EQ(meta.ops[0].output(0), "x_grad");
  }
  auto cast = MakeOperatorDef("Cast", "", {"x"}, {"y"},
                              {MakeArgument("to", 16), MakeArgument("from_type", 1)});
  auto meta = GetGradientForOp(cast, g);
  ASSERT_EQ(meta.ops.size(), 1u);
  ArgumentHelper args(meta.ops[0]);
  EXPECT_EQ(args.GetSingleArgument<int>("to", 0), 1);
  EXPECT_EQ(args.GetSingleArgument<int>("from_type", 0), 16);
  // The gradient ops run: a bfloat16 gradient comes back as float, exactly.
  Workspace ws;
  RunOp(meta.ops[0], {{"y_grad", BFloat16Tensor({2}, {0x3f80, 0xc0a0})}}, &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("x_grad")), (std::vector<float>{1.f, -5.f}));
  EXPECT_EQ(ws.GetTensor("x_grad").dtype(), DataType::FLOAT);
}

// An operator fed bfloat16 computes in float on the bfloat16 values and rounds its bfloat16
// output once: the same bits as the float operator on the rounded inputs, rounded.
void ExpectBFloat16IsRoundedFloat(const OperatorDef& def,
                                  const std::map<std::string, Tensor>& inputs,
                                  const std::vector<std::string>& bf16_inputs) {
  std::map<std::string, Tensor> in32, in16;
  for (const auto& kv : inputs) {
    const bool bf16 =
        std::find(bf16_inputs.begin(), bf16_inputs.end(), kv.first) != bf16_inputs.end();
    in32[kv.first] = bf16 ? RoundThroughBFloat16(kv.second) : kv.second;
    in16[kv.first] = bf16 ? ToBFloat16(kv.second) : kv.second;
  }
  Workspace ws32, ws16;
  RunOp(def, in32, &ws32);
  RunOp(def, in16, &ws16);
  const Tensor& y32 = ws32.GetTensor(def.output(0));
  const Tensor& y16 = ws16.GetTensor(def.output(0));
  ASSERT_EQ(y16.dtype(), DataType::BFLOAT16) << def.type();
  ASSERT_EQ(y16.dims(), y32.dims()) << def.type();
  EXPECT_EQ(Bits(y16), Bits(ToBFloat16(y32))) << def.type();
}

TEST(BFloat16FloatIoTest, OperatorsComputeInFloatAndRoundOnce) {
  const Tensor x = RandomTensor({4, 13}, 1), w = RandomTensor({7, 13}, 2);
  const Tensor b = RandomTensor({7}, 3), x2 = RandomTensor({4, 13}, 4);
  ExpectBFloat16IsRoundedFloat(MakeOperatorDef("FC", "", {"x", "w", "b"}, {"y"}),
                               {{"x", x}, {"w", w}, {"b", b}}, {"x", "w", "b"});
  ExpectBFloat16IsRoundedFloat(MakeOperatorDef("Relu", "", {"x"}, {"y"}), {{"x", x}}, {"x"});
  ExpectBFloat16IsRoundedFloat(MakeOperatorDef("Add", "", {"x", "x2"}, {"y"}),
                               {{"x", x}, {"x2", x2}}, {"x", "x2"});
  ExpectBFloat16IsRoundedFloat(MakeOperatorDef("Sum", "", {"x", "x2", "x"}, {"y"}),
                               {{"x", x}, {"x2", x2}}, {"x", "x2"});
  ExpectBFloat16IsRoundedFloat(MakeOperatorDef("Negative", "", {"x"}, {"y"}), {{"x", x}}, {"x"});
  ExpectBFloat16IsRoundedFloat(MakeOperatorDef("Softmax", "", {"x"}, {"y"}), {{"x", x}}, {"x"});
  ExpectBFloat16IsRoundedFloat(
      MakeOperatorDef("WeightedSum", "", {"x", "a", "x2", "c"}, {"y"}),
      {{"x", x}, {"a", FloatTensor({1}, {0.3f})}, {"x2", x2}, {"c", FloatTensor({1}, {-2.f})}},
      {"x", "x2"});
}

TEST(BFloat16FloatIoTest, FillsCheckFiniteAndErrors) {
  Workspace ws;
  RunOp(MakeOperatorDef("ConstantFill", "", {}, {"c"},
                        {MakeArgument("shape", std::vector<int64_t>{2}),
                         MakeArgument("value", 0.1f), MakeArgument("dtype", 16)}),
        {}, &ws);
  EXPECT_EQ(Bits(ws.GetTensor("c")), (std::vector<uint16_t>{0x3dcd, 0x3dcd}));
  RunOp(MakeOperatorDef("GivenTensorFill", "", {}, {"g"},
                        {MakeArgument("shape", std::vector<int64_t>{2}),
                         MakeArgument("values", std::vector<float>{1.f, -1e30f}),
                         MakeArgument("dtype", "bfloat16")}),
        {}, &ws);
  EXPECT_EQ(Bits(ws.GetTensor("g")), (std::vector<uint16_t>{0x3f80, FloatToBFloat16Bits(-1e30f)}));
  // CheckFinite reads bfloat16 gradients: inf and nan are caught, large finite values are not.
  auto check = MakeOperatorDef("CheckFinite", "", {"g"}, {"found"});
  EXPECT_EQ(RunAndGet(check, {{"g", BFloat16Tensor({2}, {0x7f7f, 0xff7f})}}),
            std::vector<float>{0.f});
  EXPECT_EQ(RunAndGet(check, {{"g", BFloat16Tensor({2}, {0x3f80, 0xff80})}}),
            std::vector<float>{1.f});
  EXPECT_EQ(RunAndGet(check, {{"g", BFloat16Tensor({2}, {0x7fc1, 0x0000})}}),
            std::vector<float>{1.f});
  // Errors that list the float types name bfloat16.
  ExpectError(MakeOperatorDef("FC", "", {"x", "w", "b"}, {"y"}),
              {{"x", IntTensor({1, 2}, {1, 2})},
               {"w", FloatTensor({1, 2}, {1, 2})},
               {"b", FloatTensor({1}, {0})}},
              "X must be float, float16 or bfloat16, got int32[1, 2]");
  ExpectError(MakeOperatorDef("UniformFill", "", {}, {"u"},
                              {MakeArgument("shape", std::vector<int64_t>{2}),
                               MakeArgument("dtype", 2)}),
              {}, "fills float, float16 or bfloat16, not int32");
  // An operator that does not take bfloat16 yet says which types it takes.
  ExpectError(MakeOperatorDef("ArgMax", "", {"x"}, {"y"}),
              {{"x", BFloat16Tensor({2}, {0x3f80, 0x4000})}},
              "X must be float, float16, int32 or int64, got bfloat16[2]");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
