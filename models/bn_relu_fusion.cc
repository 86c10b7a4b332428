#include "models/bn_relu_fusion.h"

#include <vector>

#include "models/op_sequence.h"
#include "models/op_types.h"

namespace halfcaf {

namespace {

using op_sequence::Ops;

bool IsFusableBN(const OperatorDef& op) {
  const ArgumentHelper a(op);
  return op.type() == "SpatialBN" && op.output_size() == 5 && RunsOnCpu(op) &&
         op.engine().empty() &&
         (op_sequence::OrderOf(op) == "NCHW" || op_sequence::OrderOf(op) == "NHWC") &&
         a.GetSingleArgument<int>("is_test", 0) == 0 &&
         a.GetSingleArgument<int>("fuse_relu", 0) == 0;
}

bool IsPlainRelu(const OperatorDef& op) {
  return op.type() == "Relu" && op.input_size() == 1 && op.output_size() == 1 && RunsOnCpu(op) &&
         op.engine().empty();
}

}  // namespace

int ReluTakingOutput(const Ops& ops, int i, int end, const std::set<std::string>& keep,
                     const std::set<std::string>& outputs) {
  const std::string& y = ops[i].output(0);
  if (keep.count(y) || outputs.count(y)) return -1;
  bool escapes = false;
  const std::vector<int> readers = op_sequence::ReadersOf(ops, i, y, &escapes);
  if (readers.empty() || readers[0] >= end || !IsPlainRelu(ops[readers[0]])) return -1;
  const int j = readers[0];
  const std::string& z = ops[j].output(0);
  if (z == y) return j;  // in place: later readers read the Relu's output
  // Y's value dies with the fusion: the Relu must be its only reader; Z is written earlier, so
  // nothing in between may touch it, and it may not be op i's input (the BN's gradient reads X).
  if (readers.size() != 1 || keep.count(z) || op_sequence::Reads(ops[i], z) ||
      op_sequence::TouchedBetween(ops, i, j, z)) {
    return -1;
  }
  return j;
}

BNReluFusion FuseBNRelu(const NetDef& forward, const std::set<std::string>& keep) {
  const std::set<std::string> outputs(forward.external_output().begin(),
                                      forward.external_output().end());
  Ops ops(forward.op().begin(), forward.op().end());
  BNReluFusion r;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (!IsFusableBN(ops[i])) continue;
    const int j = ReluTakingOutput(ops, i, static_cast<int>(ops.size()), keep, outputs);
    if (j < 0) continue;
    ops[i].set_output(0, ops[j].output(0));
    SetArgument(&ops[i], "fuse_relu", 1);
    ops.erase(ops.begin() + j);
    ++r.fused;
  }
  r.net = forward;
  r.net.clear_op();
  for (const auto& op : ops) *r.net.add_op() = op;
  return r;
}

}  // namespace halfcaf
