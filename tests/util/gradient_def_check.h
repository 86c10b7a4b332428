// Checks on what a registered gradient maker emits for one forward op: the Caffe2 gradient op's
// type, inputs and outputs (the blob names a net's backward pass will wire).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/operator.h"

namespace halfcaf {
namespace testing {

// Builds the gradient of `def` with a dense gradient "<output>_grad" for every output and
// expects exactly one op of `type` reading `inputs` and writing `outputs`, each registered on the
// CPU and accepted by its schema.
inline void ExpectSingleGradientOp(const OperatorDef& def, const std::string& type,
                                   const std::vector<std::string>& inputs,
                                   const std::vector<std::string>& outputs) {
  SCOPED_TRACE(def.type() + " gradient maker");
  std::vector<GradientWrapper> g(def.output_size());
  for (int o = 0; o < def.output_size(); ++o) g[o].dense = def.output(o) + "_grad";
  const GradientOpsMeta meta = GetGradientForOp(def, g);
  ASSERT_EQ(meta.ops.size(), 1u);
  const OperatorDef& op = meta.ops[0];
  EXPECT_EQ(op.type(), type);
  EXPECT_EQ(std::vector<std::string>(op.input().begin(), op.input().end()), inputs);
  EXPECT_EQ(std::vector<std::string>(op.output().begin(), op.output().end()), outputs);
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CPU, op.type())) << op.type();
  const OpSchema* schema = OpSchemaRegistry::Schema(op.type());
  ASSERT_NE(schema, nullptr) << op.type();
  EXPECT_NO_THROW(schema->Verify(op)) << op.ShortDebugString();
}

}  // namespace testing
}  // namespace halfcaf
