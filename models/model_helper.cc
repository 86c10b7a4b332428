#include "models/model_helper.h"

#include <cmath>
#include <map>
#include <set>

#include "core/argument.h"
#include "core/enforce.h"
#include "models/op_types.h"

namespace halfcaf {

const char* ParamRoleName(ParamRole role) {
  switch (role) {
    case ParamRole::WEIGHT:
      return "WEIGHT";
    case ParamRole::BIAS:
      return "BIAS";
    case ParamRole::BN_SCALE:
      return "BN_SCALE";
    case ParamRole::BN_BIAS:
      return "BN_BIAS";
    case ParamRole::BN_RUNNING_MEAN:
      return "BN_RUNNING_MEAN";
    case ParamRole::BN_RUNNING_VAR:
      return "BN_RUNNING_VAR";
    case ParamRole::OTHER:
      return "OTHER";
  }
  return "?";
}

bool IsLearnedRole(ParamRole role) {
  return role == ParamRole::WEIGHT || role == ParamRole::BIAS || role == ParamRole::BN_SCALE ||
         role == ParamRole::BN_BIAS;
}

int64_t ParamInfo::numel() const {
  if (shape.empty()) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t CountLearnedParams(const std::vector<ParamInfo>& params) {
  int64_t n = 0;
  for (const auto& p : params) {
    if (IsLearnedRole(p.role)) n += p.numel();
  }
  return n;
}

Filler Filler::Xavier() { return {"XavierFill", {}}; }
Filler Filler::MSRA() { return {"MSRAFill", {}}; }
Filler Filler::Constant(float value) { return {"ConstantFill", {MakeArgument("value", value)}}; }
Filler Filler::Gaussian(float mean, float std) {
  return {"GaussianFill", {MakeArgument("mean", mean), MakeArgument("std", std)}};
}
Filler Filler::Uniform(float min, float max) {
  return {"UniformFill", {MakeArgument("min", min), MakeArgument("max", max)}};
}

namespace {

void CheckOrder(const std::string& order) {
  HALFCAF_ENFORCE(order == "NCHW" || order == "NHWC",
                  "ModelHelper: order must be \"NCHW\" or \"NHWC\", got \"", order, "\"");
}

void CheckPositive(const char* what, const std::string& layer, int64_t v) {
  HALFCAF_ENFORCE(v > 0, "ModelHelper: ", what, " of '", layer, "' must be > 0, got ", v);
}

void AddUnique(google::protobuf::RepeatedPtrField<std::string>* list, const std::string& s) {
  for (const auto& x : *list) {
    if (x == s) return;
  }
  *list->Add() = s;
}

}  // namespace

ModelHelper::ModelHelper(const std::string& name, const std::string& order, bool is_test)
    : order_(order), is_test_(is_test) {
  CheckOrder(order);
  net_.set_name(name);
  init_net_.set_name(name + "_init");
}

void ModelHelper::set_order(const std::string& order) {
  CheckOrder(order);
  order_ = order;
}

const ParamInfo* ModelHelper::FindParam(const std::string& name) const {
  for (const auto& p : params_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::vector<std::string> ModelHelper::ParamNames() const {
  std::vector<std::string> out;
  for (const auto& p : params_) out.push_back(p.name);
  return out;
}

std::vector<std::string> ModelHelper::ParamNames(ParamRole role) const {
  std::vector<std::string> out;
  for (const auto& p : params_) {
    if (p.role == role) out.push_back(p.name);
  }
  return out;
}

void ModelHelper::AddInput(const std::string& blob) {
  AddUnique(net_.mutable_external_input(), blob);
}

void ModelHelper::AddOutput(const std::string& blob) {
  AddUnique(net_.mutable_external_output(), blob);
}

const ParamInfo& ModelHelper::CreateParam(const std::string& name, ParamRole role,
                                          const std::vector<int64_t>& shape, const Filler& filler) {
  HALFCAF_ENFORCE(!name.empty(), "ModelHelper: a parameter needs a name");
  HALFCAF_ENFORCE(FindParam(name) == nullptr, "ModelHelper: parameter '", name,
                  "' already exists (two layers with the same name?)");
  for (int64_t d : shape) {
    HALFCAF_ENFORCE(d > 0, "ModelHelper: parameter '", name, "' needs positive dims, got ",
                    DimsString(shape));
  }
  std::vector<Argument> args = filler.args;
  args.push_back(MakeArgument("shape", shape));
  *init_net_.add_op() = MakeOperatorDef(filler.type, "", {}, {name}, args);
  AddInput(name);
  params_.push_back(ParamInfo{name, role, shape});
  return params_.back();
}

OperatorDef* ModelHelper::AddOp(const std::string& type, const std::vector<std::string>& inputs,
                                const std::vector<std::string>& outputs,
                                const std::vector<Argument>& args) {
  OperatorDef* op = net_.add_op();
  *op = MakeOperatorDef(type, "", inputs, outputs, args);
  return op;
}

Argument ModelHelper::OrderArg() const { return MakeArgument("order", order_); }

std::string ModelHelper::Conv(const std::string& in, const std::string& out, int64_t dim_in,
                              int64_t dim_out, int kernel, const ConvOptions& opts) {
  CheckPositive("dim_in", out, dim_in);
  CheckPositive("dim_out", out, dim_out);
  CheckPositive("kernel", out, kernel);
  CheckPositive("stride", out, opts.stride);
  CheckPositive("dilation", out, opts.dilation);
  CheckPositive("group", out, opts.group);
  HALFCAF_ENFORCE(opts.pad >= 0, "ModelHelper: pad of '", out, "' must be >= 0, got ", opts.pad);
  HALFCAF_ENFORCE(dim_in % opts.group == 0 && dim_out % opts.group == 0, "ModelHelper: Conv '", out,
                  "': dim_in ", dim_in, " and dim_out ", dim_out, " must be divisible by group ",
                  opts.group);
  const int64_t k = kernel;
  const int64_t c = dim_in / opts.group;
  const bool nhwc = order_ == "NHWC";
  std::vector<int64_t> w_shape =
      nhwc ? std::vector<int64_t>{dim_out, k, k, c} : std::vector<int64_t>{dim_out, c, k, k};
  Filler w_init = opts.weight_init;
  if (nhwc && w_init.type == "MSRAFill") {
    w_init = Filler::Gaussian(0.f, std::sqrt(2.f / static_cast<float>(dim_out * k * k)));
  }
  const std::string w = CreateParam(out + "_w", ParamRole::WEIGHT, w_shape, w_init).name;
  std::vector<std::string> inputs{in, w};
  if (!opts.no_bias) {
    inputs.push_back(CreateParam(out + "_b", ParamRole::BIAS, {dim_out}, opts.bias_init).name);
  }
  std::vector<Argument> args{MakeArgument("kernel", kernel)};
  if (opts.stride != 1) args.push_back(MakeArgument("stride", opts.stride));
  if (opts.pad != 0) args.push_back(MakeArgument("pad", opts.pad));
  if (opts.dilation != 1) args.push_back(MakeArgument("dilation", opts.dilation));
  if (opts.group != 1) args.push_back(MakeArgument("group", opts.group));
  args.push_back(OrderArg());
  AddOp("Conv", inputs, {out}, args)->set_name(out);
  return out;
}

std::string ModelHelper::FC(const std::string& in, const std::string& out, int64_t dim_in,
                            int64_t dim_out, const FCOptions& opts) {
  CheckPositive("dim_in", out, dim_in);
  CheckPositive("dim_out", out, dim_out);
  const std::string w =
      CreateParam(out + "_w", ParamRole::WEIGHT, {dim_out, dim_in}, opts.weight_init).name;
  const std::string b = CreateParam(out + "_b", ParamRole::BIAS, {dim_out}, opts.bias_init).name;
  std::vector<Argument> args;
  if (opts.axis != 1) args.push_back(MakeArgument("axis", opts.axis));
  AddOp("FC", {in, w, b}, {out}, args)->set_name(out);
  return out;
}

std::string ModelHelper::SpatialBN(const std::string& in, const std::string& out, int64_t dim,
                                   const SpatialBNOptions& opts) {
  CheckPositive("dim", out, dim);
  HALFCAF_ENFORCE(opts.epsilon > 0, "ModelHelper: SpatialBN '", out, "': epsilon must be > 0, got ",
                  opts.epsilon);
  const bool is_test = opts.is_test.value_or(is_test_);
  const std::string s =
      CreateParam(out + "_s", ParamRole::BN_SCALE, {dim}, Filler::Constant(opts.scale_init)).name;
  const std::string b =
      CreateParam(out + "_b", ParamRole::BN_BIAS, {dim}, Filler::Constant(0.f)).name;
  const std::string rm =
      CreateParam(out + "_rm", ParamRole::BN_RUNNING_MEAN, {dim}, Filler::Constant(0.f)).name;
  const std::string riv =
      CreateParam(out + "_riv", ParamRole::BN_RUNNING_VAR, {dim}, Filler::Constant(1.f)).name;
  std::vector<std::string> outputs{out};
  if (!is_test) {
    outputs.insert(outputs.end(), {rm, riv, out + "_sm", out + "_siv"});
  }
  std::vector<Argument> args{MakeArgument("is_test", static_cast<int>(is_test)),
                             MakeArgument("epsilon", opts.epsilon),
                             MakeArgument("momentum", opts.momentum), OrderArg()};
  AddOp("SpatialBN", {in, s, b, rm, riv}, outputs, args)->set_name(out);
  return out;
}

std::string ModelHelper::Relu(const std::string& in, const std::string& out) {
  AddOp("Relu", {in}, {out});
  return out;
}

std::string ModelHelper::Pool(const std::string& type, const std::string& in,
                              const std::string& out, int kernel, int stride, int pad,
                              bool global) {
  std::vector<Argument> args;
  if (global) {
    args.push_back(MakeArgument("global_pooling", 1));
  } else {
    CheckPositive("kernel", out, kernel);
    CheckPositive("stride", out, stride);
    HALFCAF_ENFORCE(pad >= 0 && pad < kernel, "ModelHelper: ", type, " '", out,
                    "': pad must be in [0, kernel), got pad ", pad, " with kernel ", kernel);
    args.push_back(MakeArgument("kernel", kernel));
    if (stride != 1) args.push_back(MakeArgument("stride", stride));
    if (pad != 0) args.push_back(MakeArgument("pad", pad));
  }
  args.push_back(OrderArg());
  AddOp(type, {in}, {out}, args);
  return out;
}

std::string ModelHelper::MaxPool(const std::string& in, const std::string& out, int kernel,
                                 int stride, int pad) {
  return Pool("MaxPool", in, out, kernel, stride, pad, false);
}

std::string ModelHelper::AveragePool(const std::string& in, const std::string& out, int kernel,
                                     int stride, int pad) {
  return Pool("AveragePool", in, out, kernel, stride, pad, false);
}

std::string ModelHelper::GlobalAveragePool(const std::string& in, const std::string& out) {
  return Pool("AveragePool", in, out, 0, 1, 0, true);
}

std::string ModelHelper::GlobalMaxPool(const std::string& in, const std::string& out) {
  return Pool("MaxPool", in, out, 0, 1, 0, true);
}

std::string ModelHelper::Dropout(const std::string& in, const std::string& out, float ratio,
                                 std::optional<bool> is_test) {
  HALFCAF_ENFORCE(ratio >= 0.f && ratio < 1.f, "ModelHelper: Dropout '", out,
                  "': ratio must be in [0, 1), got ", ratio);
  const bool test = is_test.value_or(is_test_);
  std::vector<std::string> outputs{out};
  if (!test) outputs.push_back("_" + out + "_mask");
  AddOp("Dropout", {in}, outputs,
        {MakeArgument("ratio", ratio), MakeArgument("is_test", static_cast<int>(test))});
  return out;
}

std::string ModelHelper::Add(const std::string& a, const std::string& b, const std::string& out) {
  AddOp("Add", {a, b}, {out});
  return out;
}

std::string ModelHelper::Flatten(const std::string& in, const std::string& out, int axis) {
  std::vector<Argument> args;
  if (axis != 1) args.push_back(MakeArgument("axis", axis));
  AddOp("Flatten", {in}, {out}, args);
  return out;
}

std::string ModelHelper::Softmax(const std::string& in, const std::string& out, int axis) {
  std::vector<Argument> args;
  if (axis != 1) args.push_back(MakeArgument("axis", axis));
  AddOp("Softmax", {in}, {out}, args);
  return out;
}

std::pair<std::string, std::string> ModelHelper::SoftmaxWithLoss(const std::string& logits,
                                                                 const std::string& label,
                                                                 const std::string& softmax_out,
                                                                 const std::string& loss_out) {
  AddOp("SoftmaxWithLoss", {logits, label}, {softmax_out, loss_out});
  losses_.push_back(loss_out);
  return {softmax_out, loss_out};
}

std::string ModelHelper::LabelCrossEntropy(const std::string& prob, const std::string& label,
                                           const std::string& out) {
  AddOp("LabelCrossEntropy", {prob, label}, {out});
  return out;
}

std::string ModelHelper::AveragedLoss(const std::string& in, const std::string& out) {
  AddOp("AveragedLoss", {in}, {out});
  losses_.push_back(out);
  return out;
}

std::string ModelHelper::Accuracy(const std::string& prediction, const std::string& label,
                                  const std::string& out, int top_k) {
  CheckPositive("top_k", out, top_k);
  std::vector<Argument> args;
  if (top_k != 1) args.push_back(MakeArgument("top_k", top_k));
  AddOp("Accuracy", {prediction, label}, {out}, args);
  return out;
}

// ---- ParamsFromNets --------------------------------------------------------------------------

namespace {

// Role of input `slot` of a forward op, OTHER when the op type does not say.
ParamRole RoleOfInput(const std::string& type, int slot) {
  if (IsConvOrFCType(type) || type == "ConvTranspose") {
    if (slot == 1) return ParamRole::WEIGHT;
    if (slot == 2) return ParamRole::BIAS;
  } else if (type == "SpatialBN") {
    switch (slot) {
      case 1:
        return ParamRole::BN_SCALE;
      case 2:
        return ParamRole::BN_BIAS;
      case 3:
        return ParamRole::BN_RUNNING_MEAN;
      case 4:
        return ParamRole::BN_RUNNING_VAR;
      default:
        break;
    }
  }
  return ParamRole::OTHER;
}

}  // namespace

std::vector<ParamInfo> ParamsFromNets(const NetDef& init_net, const NetDef& forward_net) {
  // Blob -> shape of the last init op writing it.
  std::map<std::string, std::vector<int64_t>> init_written;
  for (const auto& op : init_net.op()) {
    const ArgumentHelper args(op);
    std::vector<int64_t> shape;
    if (op.input_size() == 0 && args.HasArgument("shape")) {
      shape = args.GetRepeatedArgument<int64_t>("shape");
    }
    for (const auto& out : op.output()) init_written[out] = shape;
  }

  std::vector<ParamInfo> params;
  std::map<std::string, size_t> index;  // name -> position in params
  std::set<std::string> written;        // blobs the forward net has written so far
  for (const auto& op : forward_net.op()) {
    for (int i = 0; i < op.input_size(); ++i) {
      const std::string& in = op.input(i);
      auto it = index.find(in);
      if (it == index.end()) {
        if (written.count(in) || !init_written.count(in)) continue;
        index[in] = params.size();
        params.push_back(ParamInfo{in, ParamRole::OTHER, init_written[in]});
        it = index.find(in);
      }
      ParamInfo& p = params[it->second];
      if (p.role == ParamRole::OTHER && !op.is_gradient_op()) p.role = RoleOfInput(op.type(), i);
    }
    for (const auto& out : op.output()) written.insert(out);
  }
  return params;
}

void SetConvAlgoSearch(NetDef* net, bool exhaustive, int64_t ws_nbytes_limit) {
  HALFCAF_ENFORCE(ws_nbytes_limit >= 0, "the cuDNN workspace limit must be >= 0, got ",
                  ws_nbytes_limit);
  for (auto& op : *net->mutable_op()) {
    if (!IsConvType(op.type())) continue;
    SetArgument(&op, "exhaustive_search", exhaustive ? 1 : 0);
    SetArgument(&op, "ws_nbytes_limit", ws_nbytes_limit);
  }
}

}  // namespace halfcaf
