#include "models/backward.h"

#include <algorithm>
#include <set>
#include <utility>

#include "core/argument.h"
#include "core/enforce.h"

namespace halfcaf {

namespace {

// A blob at one version: (name, number of earlier writes counted as in Caffe2's SSA).
using BlobVersion = std::pair<std::string, int>;

std::string OpLabel(const OperatorDef& op, int i) {
  return MakeString("op #", i, " (", op.type(),
                    op.name().empty() ? std::string() : " '" + op.name() + "'", ")");
}

// Whether an op names its device. A device option that carries only a random seed (the trainers
// seed their forward nets before the passes) leaves the op on the net's default device.
bool NamesDevice(const OperatorDef& op) {
  return op.has_device_option() &&
         (op.device_option().has_device_type() || op.device_option().has_device_id());
}

std::string DeviceLabel(bool has, const DeviceOption& d) {
  if (!has) return "default device";
  return MakeString(d.device_type() == 1 ? "CUDA:" : "CPU:", d.device_id());
}

// One gradient contribution to a blob version: written by a gradient op (op >= 0, output slot
// `output`) or passed through from an existing blob (op < 0).
struct Contribution {
  int op = -1;
  int output = -1;
  GradientWrapper grad;
  bool has_device = false;
  DeviceOption device;
};

class BackwardBuilder {
 public:
  BackwardBuilder(NetDef* net, const std::vector<std::string>& losses,
                  const std::map<std::string, std::string>& seeds, const BlobDims* blob_dims)
      : net_(net), losses_(losses), seeds_(seeds), blob_dims_(blob_dims) {}

  std::map<std::string, GradientWrapper> Build() {
    Replay();
    Seed();
    for (int i = net_->op_size() - 1; i >= 0; --i) {
      ProcessOp(i);
      Accumulate(i);
    }
    for (auto& op : grad_ops_) *net_->add_op() = std::move(op);
    std::map<std::string, GradientWrapper> out;
    for (const auto& kv : name_to_grad_) {
      if (!kv.second.IsEmpty()) out[kv.first] = kv.second;
    }
    return out;
  }

 private:
  // Versions of every input and output of every forward op, and who reads each version.
  void Replay() {
    const int n = net_->op_size();
    in_versions_.resize(n);
    out_versions_.resize(n);
    for (int i = 0; i < n; ++i) {
      const OperatorDef& op = net_->op(i);
      for (const auto& s : op.input()) {
        const int v = frontier_.emplace(s, 0).first->second;
        in_versions_[i].push_back(v);
        readers_[{s, v}].push_back(i);
      }
      for (const auto& s : op.output()) {
        auto it = frontier_.find(s);
        const int v = it == frontier_.end() ? 0 : it->second + 1;
        frontier_[s] = v;
        out_versions_[i].push_back(v);
        producer_[s] = i;
      }
    }
  }

  void Seed() {
    HALFCAF_ENFORCE(!losses_.empty(), "Backward needs at least one loss blob");
    std::set<std::string> seen;
    for (const auto& kv : seeds_) {
      HALFCAF_ENFORCE(std::find(losses_.begin(), losses_.end(), kv.first) != losses_.end(),
                      "Backward: a seed is given for '", kv.first,
                      "', which is not one of the losses");
      HALFCAF_ENFORCE(!kv.second.empty(), "Backward: the seed blob name for loss '", kv.first,
                      "' is empty");
    }
    for (const auto& loss : losses_) {
      HALFCAF_ENFORCE(seen.insert(loss).second, "Backward: loss '", loss, "' is listed twice");
      auto prod = producer_.find(loss);
      HALFCAF_ENFORCE(prod != producer_.end(), "Backward: loss blob '", loss,
                      "' is not produced by any op of net '", net_->name(), "' (",
                      net_->op_size(), " ops)");
      const OperatorDef& producer = net_->op(prod->second);
      const BlobVersion key{loss, frontier_.at(loss)};
      // The gradient pass reads the loss after every forward op.
      readers_[key].push_back(net_->op_size());
      Contribution c;
      c.has_device = NamesDevice(producer);
      c.device = producer.device_option();
      auto seed = seeds_.find(loss);
      if (seed != seeds_.end()) {
        c.grad.dense = seed->second;
      } else {
        OperatorDef fill = MakeOperatorDef("ConstantFill", "", {loss}, {loss + "_autogen_grad"},
                                           {MakeArgument("value", 1.0f)});
        if (c.has_device) *fill.mutable_device_option() = c.device;
        c.op = static_cast<int>(grad_ops_.size());
        c.output = 0;
        c.grad.dense = fill.output(0);
        grad_ops_.push_back(std::move(fill));
      }
      name_to_grad_[loss] = c.grad;
      contributions_[key].push_back(std::move(c));
    }
  }

  // The dims of op's inputs from blob_dims_, in *dims, or null unless all of them are known.
  const std::vector<std::vector<int64_t>>* InputDims(const OperatorDef& op,
                                                     std::vector<std::vector<int64_t>>* dims) {
    if (!blob_dims_) return nullptr;
    for (const auto& name : op.input()) {
      auto it = blob_dims_->find(name);
      if (it == blob_dims_->end()) return nullptr;
      dims->push_back(it->second);
    }
    return dims;
  }

  // The gradient of a blob version once every reader has been processed (empty if none).
  GradientWrapper GradientOf(const BlobVersion& key) const {
    auto r = resolved_.find(key);
    if (r != resolved_.end()) return r->second;
    auto c = contributions_.find(key);
    if (c == contributions_.end() || c->second.empty()) return {};
    HALFCAF_ENFORCE(c->second.size() == 1, "Backward: internal error: '", key.first,
                    "' version ", key.second, " has ", c->second.size(),
                    " unsummed gradient contributions");
    return c->second[0].grad;
  }

  void ProcessOp(int i) {
    const OperatorDef& op = net_->op(i);
    std::vector<GradientWrapper> g_output;
    bool any = op.type() == "ZeroGradient";
    for (int k = 0; k < op.output_size(); ++k) {
      g_output.push_back(GradientOf({op.output(k), out_versions_[i][k]}));
      any |= !g_output.back().IsEmpty();
    }
    if (!any) return;

    GradientOpsMeta meta;
    try {
      std::vector<std::vector<int64_t>> dims;
      meta = GetGradientForOp(op, g_output, InputDims(op, &dims));
    } catch (EnforceNotMet& e) {
      std::string needed;
      for (int k = 0; k < op.output_size(); ++k) {
        if (!g_output[k].IsEmpty()) needed += (needed.empty() ? "'" : ", '") + op.output(k) + "'";
      }
      e.AddContext(MakeString("Backward: cannot make the gradient of forward ", OpLabel(op, i),
                              " of net '", net_->name(), "' (gradient needed because of ",
                              needed, ")"));
      throw;
    }
    HALFCAF_ENFORCE(static_cast<int>(meta.g_input.size()) == op.input_size(), "Backward: the ",
                    op.type(), " gradient maker returned ", meta.g_input.size(),
                    " input gradients for ", op.input_size(), " inputs");
    const int first = static_cast<int>(grad_ops_.size());
    for (auto& g : meta.ops) grad_ops_.push_back(std::move(g));
    const int end = static_cast<int>(grad_ops_.size());

    for (int k = 0; k < op.input_size(); ++k) {
      const std::string& name = op.input(k);
      const GradientWrapper& g = meta.g_input[k];
      // Caffe2's name map: a missing gradient does not hide a later version's gradient, except
      // when this op also writes the blob (in place), which starts a new version.
      const bool writes_it =
          std::find(op.output().begin(), op.output().end(), name) != op.output().end();
      if (!g.IsEmpty() || !name_to_grad_.count(name) || writes_it) name_to_grad_[name] = g;
      if (g.IsEmpty()) continue;

      Contribution c;
      c.grad = g;
      const std::string& produced = g.IsDense() ? g.dense : (g.values.empty() ? g.indices
                                                                             : g.values);
      for (int j = end - 1; j >= first && c.op < 0; --j) {
        for (int o = 0; o < grad_ops_[j].output_size(); ++o) {
          if (grad_ops_[j].output(o) == produced) {
            c.op = j;
            c.output = o;
            break;
          }
        }
      }
      const OperatorDef& source = c.op >= 0 ? grad_ops_[c.op] : op;
      c.has_device = NamesDevice(source);
      c.device = source.device_option();
      contributions_[{name, in_versions_[i][k]}].push_back(std::move(c));
    }
  }

  // Sums the contributions of every blob version whose first reader is op i.
  void Accumulate(int i) {
    const OperatorDef& op = net_->op(i);
    std::set<std::string> done;
    for (int k = 0; k < op.input_size(); ++k) {
      const std::string& name = op.input(k);
      if (!done.insert(name).second) continue;
      const BlobVersion key{name, in_versions_[i][k]};
      const std::vector<int>& readers = readers_[key];
      if (readers.size() <= 1 || readers.front() != i) continue;
      std::vector<Contribution>& cs = contributions_[key];
      if (cs.size() < 2) continue;
      grad_ops_.push_back(MakeSum(name, key.second, i, &cs));
      resolved_[key] = GradientWrapper{grad_ops_.back().output(0), "", ""};
      name_to_grad_[name] = resolved_[key];
    }
  }

  OperatorDef MakeSum(const std::string& name, int version, int i,
                      std::vector<Contribution>* cs) {
    const std::string where = MakeString("gradient of '", name, "' (version ", version,
                                         ", first read by ", OpLabel(net_->op(i), i), ")");
    for (const auto& c : *cs) {
      HALFCAF_ENFORCE(c.grad.IsDense(), "Backward: the ", where, " has ", cs->size(),
                      " contributions and at least one is sparse ('", c.grad.indices, "', '",
                      c.grad.values, "'); summing sparse gradients is not supported");
      HALFCAF_ENFORCE(c.has_device == cs->front().has_device &&
                          (!c.has_device ||
                           (c.device.device_type() == cs->front().device.device_type() &&
                            c.device.device_id() == cs->front().device.device_id())),
                      "Backward: the contributions to the ", where,
                      " come from different devices (",
                      DeviceLabel(cs->front().has_device, cs->front().device), " and ",
                      DeviceLabel(c.has_device, c.device), ")");
    }
    for (size_t a = 0; a < cs->size(); ++a) {
      for (size_t b = a + 1; b < cs->size(); ++b) {
        HALFCAF_ENFORCE((*cs)[a].op < 0 || (*cs)[a].op != (*cs)[b].op ||
                            (*cs)[a].output != (*cs)[b].output,
                        "Backward: one gradient op (", grad_ops_[(*cs)[a].op].type(),
                        ") writes two contributions to the ", where,
                        " into the same blob; this is not supported");
      }
    }
    std::vector<std::string> inputs;
    std::string out;
    int renamed = 0;
    for (auto& c : *cs) {
      if (c.op < 0) {
        inputs.push_back(c.grad.dense);
        continue;
      }
      OperatorDef& g = grad_ops_[c.op];
      if (out.empty()) {
        out = g.output(c.output);
      } else {
        g.set_output(c.output, MakeString("_", g.output(c.output), "_autosplit_", renamed++));
      }
      inputs.push_back(g.output(c.output));
    }
    if (out.empty()) out = name + "_grad";
    auto pos = std::find(inputs.begin(), inputs.end(), out);
    if (pos != inputs.end()) std::iter_swap(inputs.begin(), pos);
    OperatorDef sum = MakeOperatorDef("Sum", "", inputs, {out});
    if (cs->front().has_device) *sum.mutable_device_option() = cs->front().device;
    return sum;
  }

  NetDef* net_;
  const std::vector<std::string>& losses_;
  const std::map<std::string, std::string>& seeds_;
  const BlobDims* blob_dims_;

  std::map<std::string, int> frontier_;   // latest version of each blob
  std::map<std::string, int> producer_;   // last forward op writing each blob
  std::vector<std::vector<int>> in_versions_, out_versions_;
  std::map<BlobVersion, std::vector<int>> readers_;  // forward ops reading a version, in order
  std::map<BlobVersion, std::vector<Contribution>> contributions_;
  std::map<BlobVersion, GradientWrapper> resolved_;  // results of sums
  std::map<std::string, GradientWrapper> name_to_grad_;
  std::vector<OperatorDef> grad_ops_;
};

}  // namespace

std::map<std::string, GradientWrapper> AddGradientOperators(
    NetDef* net, const std::vector<std::string>& losses,
    const std::map<std::string, std::string>& seeds, const BlobDims* blob_dims) {
  HALFCAF_ENFORCE(net != nullptr, "Backward: net is null");
  return BackwardBuilder(net, losses, seeds, blob_dims).Build();
}

}  // namespace halfcaf
