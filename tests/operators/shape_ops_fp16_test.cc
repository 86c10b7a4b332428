// FP16 vs FP32 for the data-movement operators: they move float16 elements exactly as float ones
// (same shapes, the same values after rounding the inputs to half).
#include <gtest/gtest.h>

#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(ShapeOpsFp16Test, MoveHalfElementsLikeFloat) {
  const Tensor x = RandomTensor({2, 3, 4, 5}, 11);
  const Tensor y = RandomTensor({2, 2, 4, 5}, 12);
  const std::vector<std::pair<OperatorDef, std::vector<int>>> cases = {
      {MakeOperatorDef("Concat", "", {"x", "y"}, {"c", "info"}, {MakeArgument("axis", 1)}), {0}},
      {MakeOperatorDef("Split", "", {"x"}, {"s0", "s1"},
                       {MakeArgument("axis", 3), MakeArgument("split", std::vector<int>{2, 3})}),
       {0, 1}},
      {MakeOperatorDef("Flatten", "", {"x"}, {"f"}, {MakeArgument("axis", 2)}), {0}},
      {MakeOperatorDef("Reshape", "", {"x"}, {"r", "old"},
                       {MakeArgument("shape", std::vector<int>{0, -1, 10})}),
       {0}},
      {MakeOperatorDef("Transpose", "", {"x"}, {"t"},
                       {MakeArgument("axes", std::vector<int>{3, 1, 0, 2})}),
       {0}},
      {MakeOperatorDef("NCHW2NHWC", "", {"x"}, {"n"}), {0}},
      {MakeOperatorDef("NHWC2NCHW", "", {"x"}, {"n"}), {0}},
      {MakeOperatorDef("Copy", "", {"x"}, {"k"}), {0}},
      {MakeOperatorDef("Alias", "", {"x"}, {"a"}), {0}},
      {MakeOperatorDef("StopGradient", "", {"x"}, {"g"}), {0}},
      {MakeOperatorDef("ResizeLike", "", {"x", "y"}, {"z"}), {0}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.first.type());
    std::map<std::string, Tensor> in;
    for (const auto& name : c.first.input()) in[name] = name == "x" ? x : y;
    std::vector<std::string> half_inputs(c.first.input().begin(), c.first.input().end());
    if (c.first.type() == "ResizeLike") {
      in["y"] = RandomTensor({120}, 13);  // same element count, other shape
    }
    CheckFp16MatchesFp32(c.first, in, half_inputs, c.second, 0.f, 0.f);
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
