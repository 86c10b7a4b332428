#include "models/bn_relu_fusion.h"

#include <vector>

#include "core/argument.h"

namespace halfcaf {

namespace {

bool OnCpu(const OperatorDef& op) {
  return !op.has_device_option() || op.device_option().device_type() == 0;
}

bool Reads(const OperatorDef& op, const std::string& b) {
  for (const auto& in : op.input()) {
    if (in == b) return true;
  }
  return false;
}

bool Touches(const OperatorDef& op, const std::string& b) {
  if (Reads(op, b)) return true;
  for (const auto& out : op.output()) {
    if (out == b) return true;
  }
  return false;
}

bool IsFusableBN(const OperatorDef& op) {
  const ArgumentHelper a(op);
  const std::string order = a.GetSingleArgument<std::string>("order", "NCHW");
  return op.type() == "SpatialBN" && op.output_size() == 5 && OnCpu(op) &&
         op.engine().empty() && (order == "NCHW" || order == "nchw") &&
         a.GetSingleArgument<int>("is_test", 0) == 0 &&
         a.GetSingleArgument<int>("fuse_relu", 0) == 0;
}

bool IsPlainRelu(const OperatorDef& op) {
  return op.type() == "Relu" && op.input_size() == 1 && op.output_size() == 1 && OnCpu(op) &&
         op.engine().empty();
}

}  // namespace

BNReluFusion FuseBNRelu(const NetDef& forward, const std::set<std::string>& keep) {
  std::set<std::string> outputs(forward.external_output().begin(), forward.external_output().end());
  std::vector<OperatorDef> ops(forward.op().begin(), forward.op().end());
  std::vector<bool> dropped(ops.size(), false);
  BNReluFusion r;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (dropped[i] || !IsFusableBN(ops[i])) continue;
    const std::string y = ops[i].output(0);
    if (keep.count(y) || outputs.count(y)) continue;
    size_t j = i + 1;
    while (j < ops.size() && (dropped[j] || !Touches(ops[j], y))) ++j;
    if (j == ops.size() || !IsPlainRelu(ops[j]) || ops[j].input(0) != y) continue;
    const std::string z = ops[j].output(0);
    bool ok = true;
    if (z != y) {
      // Y dies with the fusion: nothing else may read it; Z is written earlier, so nothing in
      // between may touch it.
      if (keep.count(z) || Reads(ops[i], z)) ok = false;
      for (size_t k = i + 1; k < ops.size() && ok; ++k) {
        if (k != j && !dropped[k] && Touches(ops[k], y)) ok = false;
        if (k < j && !dropped[k] && Touches(ops[k], z)) ok = false;
      }
    }
    if (!ok) continue;
    ops[i].set_output(0, z);
    SetArgument(&ops[i], "fuse_relu", 1);
    dropped[j] = true;
    ++r.fused;
  }
  r.net = forward;
  r.net.clear_op();
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!dropped[i]) *r.net.add_op() = ops[i];
  }
  return r;
}

}  // namespace halfcaf
