// The two fused forms models/residual_relu_fusion.h writes: Add with fuse_relu (Add + Relu as one
// op) and ReluGradient with more than one dY (Sum + ReluGradient as one op), bit for bit the
// separate ops, NaN, inf and -0 included, in float, float16 and bfloat16, in place on any input;
// the cases they refuse are one clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/op_schema.h"
#include "core/workspace.h"
#include "tests/util/bf16_switch.h"
#include "tests/util/error_of.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

void RunNamed(Workspace* ws, const std::string& type, const std::vector<std::string>& in,
              const std::vector<std::string>& out, std::vector<Argument> args = {}) {
  CreateOperator(MakeOperatorDef(type, "", in, out, std::move(args)), ws)->Run(0);
}

// Random values with NaN, +-inf and -0 among them.
Tensor Awkward(const std::vector<int64_t>& dims, uint32_t seed) {
  Tensor t = RandomTensor(dims, seed, -2.f, 2.f);
  float* d = t.mutable_data<float>();
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), -0.f, 0.f};
  for (int k = 0; k < 5; ++k) d[(seed * 7 + k * 13) % t.numel()] = specials[k];
  d[0] = -0.f;  // in every tensor: -0 + -0 is -0, which the ReLU makes +0
  return t;
}

void ExpectBits(const Workspace& ws, const std::string& got, const std::string& want) {
  const Tensor& g = ws.GetTensor(got);
  const Tensor& w = ws.GetTensor(want);
  ASSERT_EQ(g.dims(), w.dims()) << got;
  ASSERT_EQ(g.dtype(), w.dtype()) << got;
  EXPECT_EQ(std::memcmp(g.raw_data(), w.raw_data(), static_cast<size_t>(g.nbytes())), 0)
      << got << " differs from " << want;
}

void ExpectError(const std::function<void()>& f, const std::string& what) {
  const std::string e = ErrorOf(f);
  EXPECT_NE(e.find(what), std::string::npos) << "expected '" << what << "', got '" << e << "'";
}

const std::vector<int64_t> kDims = {2, 3, 17, 13};  // a tail after every vector width

TEST(ResidualReluOpsTest, AddWithFuseReluIsAddThenReluBitForBit) {
  Workspace ws;
  SetInput(&ws, "A", Awkward(kDims, 1));
  SetInput(&ws, "B", Awkward(kDims, 2));
  RunNamed(&ws, "Add", {"A", "B"}, {"S"});
  RunNamed(&ws, "Relu", {"S"}, {"Y"});
  RunNamed(&ws, "Add", {"A", "B"}, {"F"}, {MakeArgument("fuse_relu", 1)});
  ExpectBits(ws, "F", "Y");
  // In place on either input.
  for (const std::string in_place : {"A", "B"}) {
    Workspace w2;
    SetInput(&w2, "A", Awkward(kDims, 1));
    SetInput(&w2, "B", Awkward(kDims, 2));
    RunNamed(&w2, "Add", {"A", "B"}, {in_place}, {MakeArgument("fuse_relu", 1)});
    SetInput(&w2, "Y", ws.GetTensor("Y"));
    ExpectBits(w2, in_place, "Y");
  }
}

TEST(ResidualReluOpsTest, ReluGradientOfSummedDYsIsSumThenReluGradientBitForBit) {
  for (const int terms : {2, 3}) {
    SCOPED_TRACE(terms);
    Workspace ws;
    SetInput(&ws, "Y", Awkward(kDims, 3));
    std::vector<std::string> dys;
    for (int k = 0; k < terms; ++k) {
      dys.push_back("dY" + std::to_string(k));
      SetInput(&ws, dys.back(), Awkward(kDims, 10 + k));
    }
    RunNamed(&ws, "Sum", dys, {"T"});
    RunNamed(&ws, "ReluGradient", {"Y", "T"}, {"dX"});
    std::vector<std::string> in = {"Y"};
    in.insert(in.end(), dys.begin(), dys.end());
    RunNamed(&ws, "ReluGradient", in, {"F"});
    ExpectBits(ws, "F", "dX");
    // In place on any dY.
    for (const std::string& out : dys) {
      Workspace w2;
      SetInput(&w2, "Y", ws.GetTensor("Y"));
      for (const std::string& d : dys) SetInput(&w2, d, ws.GetTensor(d));
      RunNamed(&w2, "ReluGradient", in, {out});
      SetInput(&w2, "want", ws.GetTensor("dX"));
      ExpectBits(w2, out, "want");
    }
  }
}

// Awkward values with sums that overflow float16 (to +inf and -inf), in `dtype`.
Tensor Awkward16(const std::vector<int64_t>& dims, uint32_t seed, DataType dtype) {
  Tensor t = Awkward(dims, seed);
  float* d = t.mutable_data<float>();
  d[7] = 60000.f;
  d[8] = -60000.f;
  return ToFloat16Type(t, dtype);
}

// float16 and bfloat16 (and a float operand beside them): the sums rounded once, as the unfused
// Add and Sum round them, and the ReLU's choice after; in place too.
void ExpectSixteenBitFormsAreTheSeparateOps() {
  for (const DataType dtype : {DataType::FLOAT16, DataType::BFLOAT16}) {
    SCOPED_TRACE(DataTypeName(dtype));
    Workspace ws;
    SetInput(&ws, "A", Awkward16(kDims, 1, dtype));
    SetInput(&ws, "B", Awkward16(kDims, 2, dtype));
    SetInput(&ws, "B32", Awkward(kDims, 2));
    for (const std::string b : {"B", "B32"}) {
      RunNamed(&ws, "Add", {"A", b}, {"S"});
      RunNamed(&ws, "Relu", {"S"}, {"Y"});
      RunNamed(&ws, "Add", {"A", b}, {"F"}, {MakeArgument("fuse_relu", 1)});
      ExpectBits(ws, "F", "Y");
    }
    Workspace w2;
    SetInput(&w2, "A", ws.GetTensor("A"));
    SetInput(&w2, "B", ws.GetTensor("B"));
    RunNamed(&w2, "Add", {"A", "B"}, {"B"}, {MakeArgument("fuse_relu", 1)});
    RunNamed(&ws, "Add", {"A", "B"}, {"S"});
    RunNamed(&ws, "Relu", {"S"}, {"Y"});
    SetInput(&w2, "Y", ws.GetTensor("Y"));
    ExpectBits(w2, "B", "Y");

    for (const int terms : {2, 3}) {
      SCOPED_TRACE(terms);
      SetInput(&ws, "Y16", Awkward16(kDims, 3, dtype));
      SetInput(&ws, "Y32", Awkward(kDims, 3));
      std::vector<std::string> dys;
      for (int k = 0; k < terms; ++k) {
        dys.push_back("dY" + std::to_string(k));
        SetInput(&ws, dys.back(), Awkward16(kDims, 10 + k, dtype));
      }
      RunNamed(&ws, "Sum", dys, {"T"});
      for (const std::string y : {"Y16", "Y32"}) {
        RunNamed(&ws, "ReluGradient", {y, "T"}, {"dX"});
        std::vector<std::string> in = {y};
        in.insert(in.end(), dys.begin(), dys.end());
        RunNamed(&ws, "ReluGradient", in, {"F"});
        ExpectBits(ws, "F", "dX");
        Workspace w3;  // in place on the last dY
        SetInput(&w3, y, ws.GetTensor(y));
        for (const std::string& d : dys) SetInput(&w3, d, ws.GetTensor(d));
        RunNamed(&w3, "ReluGradient", in, {dys.back()});
        SetInput(&w3, "want", ws.GetTensor("dX"));
        ExpectBits(w3, dys.back(), "want");
      }
    }
  }
}

// bfloat16 on AVX-512F vectors where the CPU has them, and on the scalar loops.
TEST(ResidualReluOpsTest, SixteenBitFormsAreTheSeparateOpsBitForBit) {
  WithAndWithoutBFloat16Vectors(ExpectSixteenBitFormsAreTheSeparateOps);
}

TEST(ResidualReluOpsTest, WhatTheFusedFormsRefuse) {
  Workspace ws;
  SetInput(&ws, "A", RandomTensor(kDims, 1));
  SetInput(&ws, "B", RandomTensor(kDims, 2));
  SetInput(&ws, "row", RandomTensor({13}, 3));
  SetInput(&ws, "A16", ToHalf(RandomTensor(kDims, 4)));
  const std::vector<Argument> fuse = {MakeArgument("fuse_relu", 1)};
  Tensor ints(kDims, DataType::INT32);
  std::fill_n(ints.mutable_data<int32_t>(), ints.numel(), 1);
  SetInput(&ws, "I", ints);
  for (const char* b : {"row", "I"}) {
    ExpectError(
        [&] {
          RunNamed(&ws, "Add", {"A", b}, {"C"}, fuse);
        },
        "fuse_relu (Add + Relu as one op) takes float, float16 or bfloat16 A and B of one "
        "shape");
  }
  ExpectError(
      [&] {
        RunNamed(&ws, "Sub", {"A", "B"}, {"C"}, fuse);
      },
      "argument fuse_relu is Add's only");
  ExpectError(
      [&] {
        RunNamed(&ws, "ReluGradient", {"A", "B", "row"}, {"C"});
      },
      "with more than one dY (their sum) every dY must be a float, float16 or bfloat16 tensor "
      "of one type and of Y's shape");
  ExpectError([&] { RunNamed(&ws, "ReluGradient", {"A", "B", "A16"}, {"C"}); }, "dY 1 ('A16')");
  // The other unary gradients keep one dY (their schemas).
  EXPECT_THROW(RunNamed(&ws, "TanhGradient", {"A", "B", "B"}, {"C"}), EnforceNotMet);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
