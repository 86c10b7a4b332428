#include "models/residual_relu_fusion.h"

#include "core/argument.h"
#include "models/bn_relu_fusion.h"
#include "models/op_sequence.h"
#include "models/op_types.h"

namespace halfcaf {

namespace {

using op_sequence::Ops;

bool OnCpuDefaultEngine(const OperatorDef& op) { return RunsOnCpu(op) && op.engine().empty(); }

bool IsFusableAdd(const OperatorDef& op, const std::map<std::string, std::vector<int64_t>>& dims) {
  const ArgumentHelper a(op);
  if (op.type() != "Add" || op.input_size() != 2 || op.output_size() != 1 ||
      !OnCpuDefaultEngine(op) || a.HasArgument("broadcast") || a.HasArgument("axis") ||
      a.GetSingleArgument<int>("fuse_relu", 0) != 0) {
    return false;
  }
  auto x = dims.find(op.input(0)), y = dims.find(op.input(1));
  return x == dims.end() || y == dims.end() || x->second == y->second;
}

bool IsPlainReluGradient(const OperatorDef& op) {
  return op.type() == "ReluGradient" && op.input_size() == 2 && op.output_size() == 1 &&
         op.input(0) != op.input(1) && OnCpuDefaultEngine(op);
}

// The ReluGradient the Sum op i's output T can go into, or -1.
int FusableReluGradient(const Ops& ops, int i, const std::set<std::string>& keep,
                        const std::set<std::string>& outputs) {
  const std::string& t = ops[i].output(0);
  if (keep.count(t) || outputs.count(t)) return -1;
  bool escapes = false;
  const std::vector<int> readers = op_sequence::ReadersOf(ops, i, t, &escapes);
  if (readers.empty() || !IsPlainReluGradient(ops[readers[0]]) || ops[readers[0]].input(1) != t) {
    return -1;
  }
  const int j = readers[0];
  // T's value dies with the fusion: the ReluGradient is its only reader, and it does not outlive
  // the net, unless the ReluGradient overwrites it.
  if (ops[j].output(0) != t && (readers.size() != 1 || escapes)) return -1;
  for (const auto& in : ops[i].input()) {
    if (op_sequence::WrittenBetween(ops, i, j, in)) return -1;
  }
  return j;
}

bool IsFusableSum(const OperatorDef& op) {
  return op.type() == "Sum" && op.input_size() >= 2 && op.output_size() == 1 &&
         OnCpuDefaultEngine(op);
}

}  // namespace

ResidualReluFusion FuseResidualRelu(const NetDef& step, int backward_begin,
                                    const std::set<std::string>& keep,
                                    const std::map<std::string, std::vector<int64_t>>& dims) {
  const std::set<std::string> outputs(step.external_output().begin(), step.external_output().end());
  Ops ops(step.op().begin(), step.op().end());
  ResidualReluFusion r;
  int end = backward_begin;
  for (int i = 0; i < end; ++i) {
    if (!IsFusableAdd(ops[i], dims)) continue;
    const int j = ReluTakingOutput(ops, i, end, keep, outputs);
    if (j < 0) continue;
    ops[i].set_output(0, ops[j].output(0));
    SetArgument(&ops[i], "fuse_relu", 1);
    ops.erase(ops.begin() + j);
    --end;
    ++r.adds;
  }
  for (int i = end; i < static_cast<int>(ops.size()); ++i) {
    if (!IsFusableSum(ops[i])) continue;
    const int j = FusableReluGradient(ops, i, keep, outputs);
    if (j < 0) continue;
    OperatorDef& g = ops[j];
    const std::string y = g.input(0);
    g.clear_input();
    g.add_input(y);
    for (const auto& in : ops[i].input()) g.add_input(in);
    ops.erase(ops.begin() + i);
    --i;
    ++r.sums;
  }
  r.net = step;
  r.net.clear_op();
  for (const auto& op : ops) *r.net.add_op() = op;
  r.backward_begin = end;
  return r;
}

}  // namespace halfcaf
