// NaN propagation checks: put a NaN into one element of one input, run the op, and see which
// elements of an output came out NaN. Operators must propagate NaN as IEEE arithmetic would
// (core/nan_math.h), so that a diverged value cannot turn into a finite output.
#pragma once

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {

// Runs `def` with element `index` of the float input `input` set to NaN; returns output `output`
// as floats.
inline std::vector<float> RunWithNaN(const OperatorDef& def, std::map<std::string, Tensor> inputs,
                                     const std::string& input, int64_t index,
                                     const std::string& output) {
  Tensor t;  // a deep copy: tensor copies share storage, and the caller's must stay as it is
  t.CopyFrom(inputs.at(input));
  t.mutable_data<float>()[index] = std::numeric_limits<float>::quiet_NaN();
  inputs[input] = t;
  Workspace ws;
  RunOp(def, inputs, &ws);
  return ToFloatVector(ws.GetTensor(output));
}

// Expects the elements listed in `nan_at` to be NaN and every other element not to be.
inline void ExpectNaNExactlyAt(const std::vector<float>& got, const std::vector<int64_t>& nan_at) {
  std::vector<bool> want(got.size(), false);
  for (int64_t i : nan_at) want.at(static_cast<size_t>(i)) = true;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(std::isnan(got[i]), want[i]) << "element " << i << " is " << got[i];
  }
}

// Both in one: NaN at input[index] must give NaN exactly at output[nan_at].
inline void ExpectNaNPropagates(const OperatorDef& def, const std::map<std::string, Tensor>& inputs,
                                const std::string& input, int64_t index, const std::string& output,
                                const std::vector<int64_t>& nan_at) {
  SCOPED_TRACE(def.type() + ": NaN in " + input + "[" + std::to_string(index) + "]");
  ExpectNaNExactlyAt(RunWithNaN(def, inputs, input, index, output), nan_at);
}

}  // namespace testing
}  // namespace halfcaf
