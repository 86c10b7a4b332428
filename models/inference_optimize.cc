#include "models/inference_optimize.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>
#include <vector>

#include "core/argument.h"
#include "core/enforce.h"
#include "core/op_schema.h"
#include "core/operator.h"
#include "models/op_sequence.h"
#include "operators/nn/conv_op.h"
#include "operators/tensor/transpose_op.h"

namespace halfcaf {

namespace {

using namespace op_sequence;  // NOLINT: Reads, Writes, ReadersOf, ...

class Optimizer {
 public:
  Optimizer(NetDef* net, Workspace* ws, const InferenceOptions& o, InferenceReport* r)
      : net_(net), ws_(ws), o_(o), r_(r), ops_(net->op().begin(), net->op().end()) {
    for (const auto& op : ops_) {
      for (const auto& out : op.output()) written_.insert(out);
      for (const auto& in : op.input()) names_.insert(in);
      for (const auto& out : op.output()) names_.insert(out);
    }
    pinned_ = o.keep;
    pinned_.insert(net->external_output().begin(), net->external_output().end());
  }

  // Why the net is not a forward-only CPU net (empty when it is).
  std::string Refusal() const {
    if (net_->has_device_option() &&
        net_->device_option().device_type() != static_cast<int>(DeviceType::CPU)) {
      return "the net is not a CPU net";
    }
    for (size_t k = 0; k < ops_.size(); ++k) {
      const OperatorDef& op = ops_[k];
      if (op.has_device_option() &&
          op.device_option().device_type() != static_cast<int>(DeviceType::CPU)) {
        return "op " + std::to_string(k) + " (" + op.type() + ") is not on the CPU";
      }
      const std::string& t = op.type();
      if (t.size() > 8 && t.compare(t.size() - 8, 8, "Gradient") == 0) {
        return "op " + std::to_string(k) + " is a gradient op (" + t + "): not a forward net";
      }
      if (InTrainingMode(op)) {
        return "op " + std::to_string(k) + " (" + t +
               ") runs in training mode (is_test is 0): a training net";
      }
      for (const auto& out : op.output()) {
        // In place on a blob no earlier op made (a parameter, running statistics, an input):
        // an update too.
        const bool updates_input = Reads(op, out) && WriterBefore(ops_, static_cast<int>(k), out) < 0;
        for (size_t j = 0; j <= k; ++j) {
          if ((j < k && Reads(ops_[j], out)) || (j == k && updates_input)) {
            return "op " + std::to_string(k) + " (" + t + ") writes '" + out +
                   "', which an earlier op reads (an update: not a forward net)";
          }
        }
      }
    }
    return "";
  }

  void FoldBatchNorm() {
    for (int j = 0; j < static_cast<int>(ops_.size()); ++j) {
      if (FoldOne(j)) --j;  // op j was removed
    }
  }

  void Fuse() {
    for (int i = 0; i < static_cast<int>(ops_.size()); ++i) {
      if (IsConv(ops_[i].type())) i = FuseOne(i);
    }
  }

  void ChannelsLast();
  void DropUnusedParams();

  void Finish() {
    net_->clear_op();
    for (auto& op : ops_) *net_->add_op() = std::move(op);
    if (net_->external_input_size() > 0) {
      for (const auto& p : added_params_) net_->add_external_input(p);
    }
    r_->params_added = static_cast<int>(added_params_.size());
  }

 private:
  // A float CPU tensor of the workspace that no op of the net writes (a constant), or nullptr.
  const Tensor* Constant(const std::string& name) const {
    if (written_.count(name)) return nullptr;
    const Blob* b = ws_->GetBlob(name);
    if (b == nullptr || !b->IsTensor()) return nullptr;
    const Tensor& t = b->GetTensor();
    if (!t.initialized() || t.dtype() != DataType::FLOAT || t.device().type != DeviceType::CPU) {
      return nullptr;
    }
    return &t;
  }

  std::string UniqueName(const std::string& base) {
    std::string name = base;
    for (int k = 1; names_.count(name) || ws_->HasBlob(name); ++k) {
      name = base + "_" + std::to_string(k);
    }
    names_.insert(name);
    return name;
  }

  // A new parameter blob named after `base`: returns its name, *t the tensor to fill.
  std::string NewParam(const std::string& base, const std::vector<int64_t>& dims, Tensor** t) {
    const std::string name = UniqueName(base);
    added_params_.push_back(name);
    *t = ws_->CreateTensor(name);
    (*t)->Resize(dims);
    return name;
  }

  bool FoldOne(int j);
  int FuseOne(int i);
  std::map<std::string, TensorShape> InferShapes(std::vector<std::vector<TensorShape>>* in) const;

  NetDef* net_;
  Workspace* ws_;
  const InferenceOptions& o_;
  InferenceReport* r_;
  Ops ops_;
  std::set<std::string> written_, names_, pinned_;
  std::vector<std::string> added_params_;
};

// SpatialBN (test mode) at j folds into the Conv that wrote its input, when that Conv's output
// feeds nothing else.
bool Optimizer::FoldOne(int j) {
  const OperatorDef& bn = ops_[j];
  if (bn.type() != "SpatialBN" || bn.input_size() != 5 || bn.output_size() != 1) return false;
  const ArgumentHelper args(bn);
  if (args.GetSingleArgument<int64_t>("is_test", 0) == 0) return false;
  if (args.GetSingleArgument<int>("fuse_relu", 0) != 0) return false;  // its ReLU stays with it
  const std::string& x = bn.input(0);
  const std::string& z = bn.output(0);
  const int i = WriterBefore(ops_, j, x);
  if (i < 0 || !IsConv(ops_[i].type()) || ops_[i].output_size() != 1) return false;
  OperatorDef& conv = ops_[i];
  bool escapes = false;
  if (ReadersOf(ops_, i, x, &escapes) != std::vector<int>{j} || pinned_.count(x)) return false;
  if (x != z && TouchedBetween(ops_, i, j, z)) return false;
  if (OrderOf(conv) != OrderOf(bn)) return false;
  const Tensor* w = Constant(conv.input(1));
  const Tensor* b = conv.input_size() > 2 ? Constant(conv.input(2)) : nullptr;
  if (w == nullptr || w->ndim() < 3 || (conv.input_size() > 2 && b == nullptr)) return false;
  const int64_t M = w->dim(0);
  const Tensor* p[4];
  for (int k = 0; k < 4; ++k) {
    p[k] = Constant(bn.input(1 + k));
    if (p[k] == nullptr || p[k]->numel() != M) return false;
  }
  if (b != nullptr && b->numel() != M) return false;
  const float eps = args.GetSingleArgument<float>("epsilon", 1e-5f);
  const float *scale = p[0]->data<float>(), *shift = p[1]->data<float>();
  const float *mean = p[2]->data<float>(), *var = p[3]->data<float>();

  const int64_t per = w->numel() / M;
  Tensor *w2 = nullptr, *b2 = nullptr;
  const std::string w2_name = NewParam(conv.input(1) + "_bn", w->dims(), &w2);
  const std::string b2_name = NewParam((b ? conv.input(2) : conv.input(1)) + "_bnb", {M}, &b2);
  const float* wd = w->data<float>();
  float* w2d = w2->mutable_data<float>();
  float* b2d = b2->mutable_data<float>();
  for (int64_t m = 0; m < M; ++m) {
    // The BN op's own arithmetic: y = x * alpha + beta.
    const float alpha = scale[m] / std::sqrt(var[m] + eps);
    const float beta = shift[m] - mean[m] * alpha;
    for (int64_t e = 0; e < per; ++e) w2d[m * per + e] = wd[m * per + e] * alpha;
    b2d[m] = (b ? b->data<float>()[m] * alpha : 0.f) + beta;
  }
  const std::string in0 = conv.input(0);
  conv.clear_input();
  conv.add_input(in0);
  conv.add_input(w2_name);
  conv.add_input(b2_name);
  conv.set_output(0, z);
  ops_.erase(ops_.begin() + j);
  ++r_->bn_folded;
  return true;
}

std::map<std::string, TensorShape> Optimizer::InferShapes(
    std::vector<std::vector<TensorShape>>* in_shapes) const {
  std::map<std::string, TensorShape> known;
  for (const auto& name : names_) {
    const Blob* b = ws_->GetBlob(name);
    if (b && b->IsTensor() && b->GetTensor().initialized()) {
      known[name] = TensorShape{b->GetTensor().dims(), b->GetTensor().dtype()};
    }
  }
  const TensorShape unknown{{}, DataType::UNDEFINED, true};
  in_shapes->assign(ops_.size(), {});
  for (size_t k = 0; k < ops_.size(); ++k) {
    const OperatorDef& op = ops_[k];
    std::vector<TensorShape>& in = (*in_shapes)[k];
    bool all_known = true;
    for (const auto& name : op.input()) {
      auto it = known.find(name);
      in.push_back(it == known.end() ? unknown : it->second);
      all_known &= !in.back().unknown;
    }
    std::vector<TensorShape> out;
    const OpSchema* schema = OpSchemaRegistry::Schema(op.type());
    if (schema && schema->HasShapeInference() && all_known) {
      try {
        out = schema->InferShapes(op, in);
      } catch (const EnforceNotMet&) {
        out.clear();
      }
    }
    for (int o = 0; o < op.output_size(); ++o) {
      known[op.output(o)] = o < static_cast<int>(out.size()) ? out[o] : unknown;
    }
  }
  return known;
}

// Conv at i: fuses what follows into a ConvFusion placed where the last fused op was; returns
// the index after which to go on looking for convolutions.
int Optimizer::FuseOne(int i) {
  std::vector<std::vector<TensorShape>> in_shapes;
  if (o_.fuse) InferShapes(&in_shapes);
  const OperatorDef conv = ops_[i];
  int type = 0, last = i;
  std::string out = conv.output(0), sum_input;
  std::vector<int> absorbed;
  auto single_reader = [&](int at, const std::string& name) {
    bool escapes = false;
    const std::vector<int> r = ReadersOf(ops_, at, name, &escapes);
    return r.size() == 1 && !pinned_.count(name) ? r[0] : -1;
  };
  auto is_relu = [&](int k, const std::string& from) {
    return k >= 0 && ops_[k].type() == "Relu" && ops_[k].input_size() == 1 &&
           ops_[k].output_size() == 1 && ops_[k].input(0) == from;
  };
  const int j = o_.fuse && conv.output_size() == 1 ? single_reader(i, out) : -1;
  if (j >= 0) {
    const OperatorDef& next = ops_[j];
    const ArgumentHelper na(next);  // an Add with fuse_relu keeps its ReLU: left alone
    const bool add = (next.type() == "Add" || next.type() == "Sum") && next.input_size() == 2 &&
                     next.output_size() == 1 && next.input(0) != next.input(1) &&
                     na.GetSingleArgument<int64_t>("broadcast", 0) == 0 &&
                     na.GetSingleArgument<int>("fuse_relu", 0) == 0;
    if (add) {
      const std::string& s = next.input(0) == out ? next.input(1) : next.input(0);
      const TensorShape& ys = in_shapes[j][next.input(0) == out ? 0 : 1];
      const TensorShape& ss = in_shapes[j][next.input(0) == out ? 1 : 0];
      if (!ys.unknown && !ss.unknown && ys.dims == ss.dims && ys.dtype == ss.dtype) {
        type = 2;
        sum_input = s;
        absorbed.push_back(j);
        last = j;
        out = next.output(0);
        const int k = single_reader(j, out);
        if (is_relu(k, out) && !WrittenBetween(ops_, j, k, s)) {
          type = 3;
          absorbed.push_back(k);
          last = k;
          out = ops_[k].output(0);
        }
      }
    } else if (is_relu(j, out)) {
      type = 1;
      absorbed.push_back(j);
      last = j;
      out = next.output(0);
    }
  }
  // The convolution's inputs must hold the same values where the fused op runs.
  for (const auto& in : conv.input()) {
    if (WrittenBetween(ops_, i, last, in)) {
      type = 0;
      absorbed.clear();
      last = i;
      out = conv.output(0);
      sum_input.clear();
      break;
    }
  }
  OperatorDef fused = conv;
  fused.set_type("ConvFusion");
  fused.clear_engine();
  SetArgument(&fused, "fusion_type", type);
  if (!sum_input.empty()) fused.add_input(sum_input);
  fused.set_output(0, out);
  ops_[last] = fused;
  if (last != i) ops_.erase(ops_.begin() + i);
  for (size_t a = 0; a + 1 < absorbed.size(); ++a) {
    ops_.erase(ops_.begin() + (absorbed[a] - 1 - static_cast<int>(a)));
  }
  ++r_->conv_fusion;
  if (type == 1 || type == 3) ++r_->relu_fused;
  if (type >= 2) ++r_->sum_fused;
  // The ops that were between the conv and the fused op moved up to i: look at them next.
  return last == i ? i : i - 1;
}

// ---- NHWC regions --------------------------------------------------------------------------------

enum class Layout { kAware, kAgnostic, kOther };

bool IsPool(const std::string& t) {
  return t == "MaxPool" || t == "AveragePool" || t == "MaxPool2D" || t == "AveragePool2D";
}

bool IsElementwiseUnary(const OperatorDef& op) {
  static const std::set<std::string> kTypes{"Relu", "Sigmoid", "Tanh", "LeakyRelu",
                                            "Elu",  "Clip",    "Scale"};
  return kTypes.count(op.type()) && op.input_size() == 1 && op.output_size() == 1;
}

void Optimizer::ChannelsLast() {
  std::vector<std::vector<TensorShape>> in_shapes;
  InferShapes(&in_shapes);
  auto four_d = [&](size_t k) {
    return !in_shapes[k].empty() && !in_shapes[k][0].unknown && in_shapes[k][0].dims.size() == 4;
  };
  std::map<std::string, std::string> filter_nhwc;  // NCHW filter -> its NHWC copy
  auto classify = [&](size_t k) {
    const OperatorDef& op = ops_[k];
    const ArgumentHelper a(op);
    // (A filter_order filter is laid out otherwise: left alone.)
    if (op.type() == "ConvFusion" && OrderOf(op) == "NCHW" && !a.HasArgument("filter_order") &&
        four_d(k)) {
      const Tensor* w = Constant(op.input(1));
      if (w != nullptr && w->ndim() == 4) return Layout::kAware;
    }
    if (IsPool(op.type()) && OrderOf(op) == "NCHW" && four_d(k) && op.output_size() == 1) {
      return Layout::kAware;
    }
    if (op.type() == "SpatialBN" && OrderOf(op) == "NCHW" && four_d(k) &&
        a.GetSingleArgument<int64_t>("is_test", 0) != 0 && op.output_size() == 1) {
      return Layout::kAware;
    }
    if (IsElementwiseUnary(op) && four_d(k)) return Layout::kAgnostic;
    if ((op.type() == "Add" || op.type() == "Sum") && op.output_size() == 1 &&
        op.input_size() >= 1 && a.GetSingleArgument<int64_t>("broadcast", 0) == 0 && four_d(k)) {
      for (const auto& s : in_shapes[k]) {
        if (s.unknown || s.dims != in_shapes[k][0].dims) return Layout::kOther;
      }
      return Layout::kAgnostic;
    }
    return Layout::kOther;
  };

  std::set<std::string> nhwc;                        // blobs whose current value is NHWC
  std::map<std::string, std::string> as_nhwc, as_nchw;  // converted copies of current values
  Ops out;
  auto convert = [&](const std::string& name, bool to_nhwc) {
    auto& cache = to_nhwc ? as_nhwc : as_nchw;
    auto it = cache.find(name);
    if (it != cache.end()) return it->second;
    const std::string copy = UniqueName(name + (to_nhwc ? "_nhwc" : "_nchw"));
    OperatorDef t = MakeOperatorDef(to_nhwc ? "NCHW2NHWC" : "NHWC2NCHW", "", {name}, {copy});
    out.push_back(t);
    ++r_->transposes;
    cache[name] = copy;
    return copy;
  };
  auto wrote = [&](const OperatorDef& op, bool is_nhwc) {
    for (const auto& o : op.output()) {
      as_nhwc.erase(o);
      as_nchw.erase(o);
      if (is_nhwc) {
        nhwc.insert(o);
      } else {
        nhwc.erase(o);
      }
    }
  };

  for (size_t k = 0; k < ops_.size(); ++k) {
    OperatorDef op = ops_[k];
    Layout layout = classify(k);
    if (layout == Layout::kAgnostic) {
      // Runs in NHWC when its inputs are there already.
      for (const auto& in : op.input()) {
        if (!nhwc.count(in)) layout = Layout::kOther;
      }
    }
    if (layout == Layout::kAware) {
      if (!nhwc.count(op.input(0))) op.set_input(0, convert(op.input(0), true));
      if (op.type() == "ConvFusion") {
        const std::string& w = op.input(1);
        auto it = filter_nhwc.find(w);
        if (it == filter_nhwc.end()) {
          // (M, C, kH, kW) -> (M, kH, kW, C)
          const Tensor& src = *Constant(w);
          Tensor* dst = nullptr;
          const std::string name =
              NewParam(w + "_nhwc", TransposeDims(src.dims(), {0, 2, 3, 1}), &dst);
          TransposeBytes(src.dims(), OrderSwitchAxes(4, true), sizeof(float), src.data<float>(),
                         dst->mutable_data<float>());
          it = filter_nhwc.emplace(w, name).first;
        }
        op.set_input(1, it->second);
        // S of a fused sum is an activation: it follows the conversion rules too.
        if (ArgumentHelper(op).GetSingleArgument<int64_t>("fusion_type", 0) >= 2 &&
            !nhwc.count(op.input(op.input_size() - 1))) {
          const int s = op.input_size() - 1;
          op.set_input(s, convert(op.input(s), true));
        }
      }
      SetArgument(&op, "order", std::string("NHWC"));
      ++r_->nhwc_ops;
      wrote(op, true);
    } else if (layout == Layout::kAgnostic) {
      ++r_->nhwc_ops;
      wrote(op, true);
    } else {
      for (int i = 0; i < op.input_size(); ++i) {
        if (nhwc.count(op.input(i))) op.set_input(i, convert(op.input(i), false));
      }
      wrote(op, false);
    }
    out.push_back(op);
  }
  // What the caller fetches goes back to NCHW under its own name.
  for (const auto& name : pinned_) {
    if (!nhwc.count(name)) continue;
    const std::string tmp = UniqueName(name + "_nchw");
    out.push_back(MakeOperatorDef("NHWC2NCHW", "", {name}, {tmp}));
    out.push_back(MakeOperatorDef("Copy", "", {tmp}, {name}));
    ++r_->transposes;
  }
  ops_ = std::move(out);
}

void Optimizer::DropUnusedParams() {
  std::set<std::string> read;
  for (const auto& op : ops_) read.insert(op.input().begin(), op.input().end());
  for (const auto& name : names_) {
    if (read.count(name) || pinned_.count(name) || written_.count(name)) continue;
    const Blob* b = ws_->GetBlob(name);
    if (b == nullptr || !b->IsTensor()) continue;
    ws_->RemoveBlob(name);
    auto added = std::find(added_params_.begin(), added_params_.end(), name);
    if (added != added_params_.end()) {
      added_params_.erase(added);  // an intermediate (a folded filter transposed afterwards)
    } else {
      ++r_->params_dropped;
    }
    auto* ext = net_->mutable_external_input();
    for (auto it = ext->begin(); it != ext->end();) {
      it = *it == name ? ext->erase(it) : it + 1;
    }
  }
}

}  // namespace

std::string InferenceReport::Summary() const {
  if (!applied) return "inference plan: not applied (" + reason + ")";
  std::ostringstream s;
  s << "inference plan: " << bn_folded << " SpatialBN folded into Conv, " << conv_fusion
    << " ConvFusion (" << relu_fused << " with Relu, " << sum_fused << " with Add/Sum), "
    << nhwc_ops << " ops in NHWC with " << transposes << " layout conversions, " << params_added
    << " parameter blobs made, " << params_dropped << " dropped"
    << (winograd > 0 ? ", " + std::to_string(winograd) + " convolutions asking for Winograd" : "");
  return s.str();
}

InferenceReport OptimizeForInference(NetDef* net, Workspace* ws, const InferenceOptions& options) {
  InferenceReport report;
  Optimizer opt(net, ws, options, &report);
  report.reason = opt.Refusal();
  if (!report.reason.empty()) return report;
  if (options.fold_batch_norm) opt.FoldBatchNorm();
  opt.Fuse();
  if (options.channels_last && OperatorRegistry::Find(DeviceType::CPU, "ConvFusion", "DNNL")) {
    opt.ChannelsLast();
  }
  if (options.drop_unused_params) opt.DropUnusedParams();
  opt.Finish();
  for (OperatorDef& op : *net->mutable_op()) {  // conv_algorithm = 1: Winograd
    if (!options.winograd || !IsWinogradCandidate(op)) continue;
    SetArgument(&op, "conv_algorithm", 1);
    ++report.winograd;
  }
  report.applied = true;
  return report;
}

}  // namespace halfcaf
