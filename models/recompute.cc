#include "models/recompute.h"

#include <map>
#include <utility>

#include "core/enforce.h"
#include "models/op_types.h"

namespace halfcaf {

const char kRecomputedSuffix[] = "_recomputed";

bool IsRecomputableType(const std::string& type) {
  static const std::set<std::string> types = {
      "SpatialBN", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "Clip",
      "Sum", "Add", "Sub", "Mul", "Max", "Min",
      "FloatToHalf", "HalfToFloat", "FloatToBFloat16", "BFloat16ToFloat",
      "NCHW2NHWC", "NHWC2NCHW", "NCHW2NCHWc", "NCHWc2NCHW"};
  return types.count(type) > 0;
}

bool ParseRecompute(const std::string& setting, bool* convolutions) {
  HALFCAF_ENFORCE(setting == "off" || setting == "elementwise" || setting == "all",
                  "recompute: '", setting, "' is not one of off, elementwise, all");
  *convolutions = setting == "all";
  return setting != "off";
}

namespace {

// SpatialBN in training mode: inputs 3 and 4 (running mean and variance) are updated in place as
// outputs 1 and 2, outputs 3 and 4 are the batch statistics.
bool IsTrainingBN(const OperatorDef& op) {
  return op.type() == "SpatialBN" && op.output_size() == 5 && op.input_size() == 5;
}

class Recomputer {
 public:
  Recomputer(const NetDef& step, int backward_begin, const std::set<std::string>& keep,
             bool convolutions)
      : step_(step), begin_(backward_begin), keep_(keep), convolutions_(convolutions) {
    HALFCAF_ENFORCE(backward_begin >= 0 && backward_begin <= step.op_size(),
                    "recompute: the backward part starts at op ", backward_begin, " of ",
                    step.op_size());
    in_version_.resize(backward_begin);
    std::map<std::string, int> last;
    for (int i = 0; i < backward_begin; ++i) {
      for (const auto& in : step.op(i).input()) {
        auto it = last.find(in);
        in_version_[i].push_back(it == last.end() ? -1 : it->second);
      }
      // A residual merge: its output (and the in-place ops' after it) is a checkpoint.
      const OperatorDef& op = step.op(i);
      int activations = 0;
      for (int k = 0; k < op.input_size(); ++k) activations += in_version_[i][k] >= 0;
      if ((op.type() == "Sum" || op.type() == "Add") && activations >= 2) {
        checkpoints_.insert(op.output(0));
      }
      for (const auto& out : op.output()) last[out] = i;
    }
    final_writer_ = last;
  }

  RecomputeResult Run() {
    RecomputeResult r;
    r.net = step_;
    r.net.clear_op();
    for (int i = 0; i < begin_; ++i) *r.net.add_op() = step_.op(i);
    std::set<std::string> written;  // by the backward part so far
    for (int i = begin_; i < step_.op_size(); ++i) {
      OperatorDef op = step_.op(i);
      for (int k = 0; k < op.input_size(); ++k) {
        const std::string& in = op.input(k);
        if (written.count(in) || keep_.count(in)) continue;
        auto fw = final_writer_.find(in);
        if (fw == final_writer_.end()) continue;
        // Batch statistics are a few floats per channel: kept, not worth a recompute.
        const OperatorDef& writer = step_.op(fw->second);
        if (IsTrainingBN(writer) && writer.output(0) != in) continue;
        if (!CanRecompute(in, fw->second)) continue;
        const std::string name = Emit(in, fw->second, &r.net);
        if (targets_.insert(in).second) r.blobs.push_back(in);
        op.set_input(k, name);
      }
      for (const auto& out : op.output()) written.insert(out);
      *r.net.add_op() = op;
    }
    r.ops_added = r.net.op_size() - step_.op_size();
    return r;
  }

 private:
  using Version = std::pair<int, std::string>;  // (writer, blob)

  // Whether version (j, name) can be made again in the backward part.
  bool CanRecompute(const std::string& name, int j) {
    const Version v{j, name};
    auto memo = can_.find(v);
    if (memo != can_.end()) return memo->second;
    can_[v] = false;  // no cycles in a forward net, but stay finite on a malformed one
    const OperatorDef& op = step_.op(j);
    bool ok = IsRecomputableType(op.type()) || (convolutions_ && IsConvType(op.type()));
    if (convolutions_ && checkpoints_.count(name) && IsFinal(name, j)) ok = false;
    for (int k = 0; ok && k < op.input_size(); ++k) {
      if (IsTrainingBN(op) && k >= 3) continue;
      ok = Available(op.input(k), in_version_[j][k]);
    }
    can_[v] = ok;
    return ok;
  }

  // Whether version `v` of `name` (its writer, -1 for a blob from outside the step) is the one
  // the blob holds at the end of the forward part.
  bool IsFinal(const std::string& name, int v) const {
    auto fw = final_writer_.find(name);
    return v == (fw == final_writer_.end() ? -1 : fw->second);
  }

  // Whether input `name` as version `v` is there in the backward part or can be made again.
  bool Available(const std::string& name, int v) {
    return IsFinal(name, v) || (v >= 0 && CanRecompute(name, v));
  }

  // The name version (j, name) has in the backward part: the forward's own for a final version
  // that is kept, else a recomputed copy, whose ops (and those of the inputs it needs) are
  // appended to `net` the first time.
  std::string Resolve(const std::string& name, int v, NetDef* net) {
    if (v < 0 || keep_.count(name) || (IsFinal(name, v) && !CanRecompute(name, v))) return name;
    return Emit(name, v, net);
  }

  std::string Emit(const std::string& name, int j, NetDef* net) {
    auto done = emitted_.find({j, name});
    if (done != emitted_.end()) return done->second;
    OperatorDef op = step_.op(j);
    const bool bn = IsTrainingBN(op);
    for (int k = 0; k < op.input_size(); ++k) {
      if (bn && k >= 3) continue;
      op.set_input(k, Resolve(op.input(k), in_version_[j][k], net));
    }
    for (int m = 0; m < op.output_size(); ++m) {
      const std::string& out = step_.op(j).output(m);
      std::string renamed = out + kRecomputedSuffix;
      if (!IsFinal(out, j)) renamed += "_" + std::to_string(j);
      op.set_output(m, renamed);
      emitted_[{j, out}] = renamed;
    }
    if (bn) {
      // The running statistics go to throwaway copies (made from the real ones, for their shape).
      for (int s = 0; s < 2; ++s) {
        OperatorDef copy;
        copy.set_type("Copy");
        copy.add_input(step_.op(j).input(3 + s));
        copy.add_output(op.output(1 + s));
        if (op.has_device_option()) *copy.mutable_device_option() = op.device_option();
        *net->add_op() = copy;
        op.set_input(3 + s, op.output(1 + s));
      }
    }
    if (!op.name().empty()) op.set_name(op.name() + kRecomputedSuffix);
    *net->add_op() = op;
    return emitted_.at({j, name});
  }

  const NetDef& step_;
  const int begin_;
  const std::set<std::string>& keep_;
  const bool convolutions_;
  std::set<std::string> checkpoints_;  // with convolutions: kept, the segments' boundaries
  std::vector<std::vector<int>> in_version_;  // per forward op and input: its writer or -1
  std::map<std::string, int> final_writer_;   // last forward writer of each blob
  std::map<Version, bool> can_;
  std::map<Version, std::string> emitted_;
  std::set<std::string> targets_;
};

}  // namespace

RecomputeResult RecomputeInBackward(const NetDef& step, int backward_begin,
                                    const std::set<std::string>& keep, bool convolutions) {
  return Recomputer(step, backward_begin, keep, convolutions).Run();
}

}  // namespace halfcaf
