// ParamsPass: each net's parameters (from the init net and what its forward net reads), which
// of them its optimizer trains, and the group each belongs to. BatchNorm running statistics are
// never trained (SpatialBN updates them); a parameter of a frozen group is not trained either,
// but keeps its 16-bit copy and passes gradients on. A group that matches no parameter is an error
// (a misspelt pattern would otherwise freeze nothing, silently).
#include <regex>
#include <sstream>

#include "core/enforce.h"
#include "models/mixed_precision.h"
#include "models/op_sequence.h"
#include "models/passes/passes.h"

namespace halfcaf {

namespace {

// FP16 copies that the init net makes (`FloatToHalf(p) -> p_fp16`) and the forward net reads:
// copy name -> master name.
std::map<std::string, std::string> ReadyMadeCopies(const NetDef& init, const NetDef& forward) {
  std::map<std::string, std::string> copies;
  for (const auto& op : init.op()) {
    if (op.type() == "FloatToHalf" && op.input_size() == 1 && op.output_size() == 1 &&
        op.output(0) == Fp16CopyName(op.input(0)) && NetReads(forward, op.output(0))) {
      copies[op.output(0)] = op.input(0);
    }
  }
  return copies;
}

class ParamsPass : public TrainingPass {
 public:
  const char* name() const override { return "params"; }

  void Apply(TrainingJob* job) const override {
    for (JobNet& net : job->nets) {
      // A forward net that is already mixed precision (make_model --dtype float16): its init net
      // makes the FP16 copies itself; the masters are trained.
      const std::map<std::string, std::string> premade = ReadyMadeCopies(job->init, net.forward);
      NetDef on_masters = net.forward;
      if (!premade.empty()) {
        HALFCAF_ENFORCE(job->precision == DataType::FLOAT16, "the forward net is already mixed "
                        "precision (its init net makes the float16 copy '",
                        premade.begin()->first, "'); train it with float16 (--dtype float16) "
                        "or give the float32 net");
        for (auto& op : *on_masters.mutable_op()) {
          for (auto& in : *op.mutable_input()) {
            auto it = premade.find(in);
            if (it != premade.end()) in = it->second;
          }
        }
        job->premade_copies.insert(premade.begin(), premade.end());
      }
      net.params = ParamsFromNets(job->init, on_masters);
      Group(&net);
    }
  }

 private:
  static void Group(JobNet* net) {
    std::vector<std::regex> patterns;
    std::vector<int> matches(net->groups.size(), 0);
    for (const auto& g : net->groups) {
      try {
        patterns.emplace_back(g.pattern);
      } catch (const std::regex_error& e) {
        HALFCAF_THROW("parameter group pattern '", g.pattern, "' is not a valid regex: ", e.what());
      }
      HALFCAF_ENFORCE(g.lr_mult >= 0 && g.decay_mult >= 0, "parameter group '", g.pattern,
                      "': lr_mult and decay_mult must be >= 0, got ", g.lr_mult, " and ",
                      g.decay_mult);
    }
    net->trained.clear();
    net->param_group.clear();
    for (const auto& p : net->params) {
      if (p.role == ParamRole::BN_RUNNING_MEAN || p.role == ParamRole::BN_RUNNING_VAR) continue;
      ParamGroup group;  // lr_mult 1, decay_mult 1
      for (size_t k = 0; k < patterns.size(); ++k) {
        if (std::regex_search(p.name, patterns[k])) {
          group = net->groups[k];
          ++matches[k];
          break;
        }
      }
      net->param_group[p.name] = group;
      if (!group.frozen) net->trained.insert(p.name);
    }
    for (size_t k = 0; k < matches.size(); ++k) {
      if (matches[k] > 0) continue;
      std::ostringstream names;
      int listed = 0;
      for (const auto& kv : net->param_group) {
        if (listed++ < 12) names << (listed > 1 ? ", " : "") << kv.first;
      }
      HALFCAF_THROW("parameter group '", net->groups[k].pattern, "'", net->name.empty() ? "" :
                    " of net '" + net->name + "'", " matches no parameter (an earlier group may "
                    "take them); the parameters are ", names.str(),
                    net->param_group.size() > 12 ? ", ..." : "");
    }
    HALFCAF_ENFORCE(!net->trained.empty() || net->param_group.empty(), "every parameter",
                    net->name.empty() ? "" : " of net '" + net->name + "'",
                    " is frozen: nothing to train");
  }
};

}  // namespace

std::unique_ptr<TrainingPass> MakeParamsPass() { return std::make_unique<ParamsPass>(); }

}  // namespace halfcaf
