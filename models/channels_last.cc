#include "models/channels_last.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/enforce.h"
#include "models/op_types.h"
#include "operators/nn/bf16_kernels.h"
#include "operators/nn/channel_block.h"

namespace halfcaf {

namespace {

const std::set<std::string>& UnaryElementwise() {
  static const std::set<std::string> types = {
      "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "Dropout", "Clip", "Scale", "Copy",
      "StopGradient", "FloatToHalf", "HalfToFloat", "FloatToBFloat16", "BFloat16ToFloat"};
  return types;
}

// Element-wise ops on channel-blocked tensors: not the casts (the blocked layout is for FP32
// nets). Dropout gets channel_block (its mask falls on the elements the NCHW op's does).
const std::set<std::string>& BlockedUnaryElementwise() {
  static const std::set<std::string> types = {"Relu",         "LeakyRelu", "Sigmoid", "Tanh",
                                              "Elu",          "Clip",      "Scale",   "Copy",
                                              "StopGradient", "Dropout"};
  return types;
}

const std::set<std::string>& NaryElementwise() {
  static const std::set<std::string> types = {"Sum", "Add", "Sub", "Mul", "Div", "Max", "Min"};
  return types;
}

bool IsPool(const std::string& t) {
  return t == "MaxPool" || t == "AveragePool" || t == "MaxPool2D" || t == "AveragePool2D";
}

std::string Order(const OperatorDef& op) {
  return ArgumentHelper(op).GetSingleArgument<std::string>("order", "NCHW");
}

// A convolution (or transposed convolution) this transform converts: NCHW, and 2-D by its type,
// its kernel arguments or the input's known rank. Both take their filter NHWC as NCHW2NHWC makes
// it: Conv (M, C, kH, kW) -> (M, kH, kW, C), ConvTranspose (C_in, C_out, kH, kW) -> (C_in, kH, kW,
// C_out).
bool IsConvertibleConv(const OperatorDef& op,
                       const std::map<std::string, std::vector<int64_t>>* dims) {
  const bool conv = IsConvType(op.type()) || op.type() == "ConvTranspose";
  if (!conv || op.type() == "Conv1D" || op.type() == "Conv3D") return false;
  if (op.input_size() < 2 || op.output_size() != 1 || Order(op) != "NCHW") return false;
  if (op.has_device_option() && op.device_option().device_type() != 0) return false;
  const ArgumentHelper a(op);
  if (a.HasArgument("filter_order")) return false;  // a filter laid out otherwise already
  if (op.type() == "Conv2D") return true;
  if (a.HasArgument("kernels")) return a.GetRepeatedArgument<int>("kernels").size() == 2;
  if (a.HasArgument("kernel") || a.HasArgument("kernel_h") || a.HasArgument("kernel_w")) {
    return true;
  }
  if (dims == nullptr) return false;
  auto it = dims->find(op.input(0));
  return it != dims->end() && it->second.size() == 4;
}

std::vector<int64_t> ToNhwcDims(const std::vector<int64_t>& d) {
  return {d[0], d[2], d[3], d[1]};
}

// A convolution the channel-blocked rewrite converts: Conv / Conv2D / ConvTranspose, NCHW, on the
// CPU, one group, a 2-D filter whose known shape (Conv (M, C, kH, kW), ConvTranspose (C, M, kH,
// kW)) has both channel counts multiples of `block`.
// `plain_x`: instead, a first convolution (not transposed), over fewer input channels than a block
// (an RGB image), that reads X as it is and writes Y blocked.
bool IsBlockableConv(const OperatorDef& op, int64_t block,
                     const std::map<std::string, std::vector<int64_t>>& param_dims,
                     bool plain_x = false) {
  const bool transposed = op.type() == "ConvTranspose";
  if (op.type() != "Conv" && op.type() != "Conv2D" && !(transposed && !plain_x)) return false;
  if (op.input_size() < 2 || op.output_size() != 1 || Order(op) != "NCHW" || !RunsOnCpu(op)) {
    return false;
  }
  if (ArgumentHelper(op).GetSingleArgument<int>("group", 1) != 1) return false;
  auto w = param_dims.find(op.input(1));
  if (w == param_dims.end() || w->second.size() != 4) return false;
  const int64_t M = w->second[0], C = w->second[1];
  return M % block == 0 && (plain_x ? C < block : C % block == 0);
}

// A training-mode SpatialBN the channel-blocked rewrite converts (its input already blocked):
// not in place (the blocked kernels write a new tensor).
bool IsBlockableBN(const OperatorDef& op) {
  const ArgumentHelper a(op);
  return op.type() == "SpatialBN" && op.input_size() >= 1 && op.output_size() >= 1 &&
         op.input(0) != op.output(0) && Order(op) == "NCHW" && RunsOnCpu(op) &&
         a.GetSingleArgument<int>("is_test", 0) == 0;
}

// A 2-D pool the channel-blocked rewrite converts (its input already blocked): NCHW, on the CPU;
// with blocks of 16 or 8. The blocked training is to be the NCHW training bit for bit: oneDNN's
// AVX-512 pooling kernels add a gradient's overlapping windows in the same order on NCHW and on
// blocked tensors, and on AVX2 (blocks of 8) the DNNL pools run NCHW tensors through their
// blocked copies (operators/nn/pool_op_dnnl.cc), so the same kernels. Not blocks of 4.
bool IsBlockablePool(const OperatorDef& op) {
  if (!IsPool(op.type()) || op.input_size() != 1 || op.output_size() != 1) return false;
  const ArgumentHelper a(op);
  return Order(op) == "NCHW" && RunsOnCpu(op) &&
         (!a.HasArgument("kernels") || a.GetRepeatedArgument<int>("kernels").size() == 2);
}

// A NumPy-broadcasting element-wise op (not Caffe2's legacy axis / broadcast form, whose axis
// counts NCHW dims).
bool HasLegacyBroadcast(const OperatorDef& op) {
  const ArgumentHelper a(op);
  return a.HasArgument("broadcast") || a.HasArgument("axis");
}

// Where each blob's current value is: under its own name in NCHW (`nchw`), in its NHWC blob
// (`nhwc`), or both. Blobs the net has not written are external inputs: NCHW.
class Rewriter {
 public:
  // block 0: NHWC; block B: channel-blocked, with the filters' shapes in `param_dims`.
  Rewriter(const NetDef& forward, std::map<std::string, std::vector<int64_t>>* dims,
           int64_t block = 0,
           const std::map<std::string, std::vector<int64_t>>* param_dims = nullptr,
           bool nchw_filters = false)
      : dims_(dims), block_(block), nchw_filters_(nchw_filters), param_dims_(param_dims) {
    for (const auto& op : forward.op()) {
      for (const auto& b : op.input()) names_.insert(b);
      for (const auto& b : op.output()) names_.insert(b);
    }
    for (const auto& b : forward.external_input()) names_.insert(b);
  }

  void Run(const NetDef& forward, const std::set<std::string>& keep, ChannelsLastResult* r) {
    r_ = r;
    r->net = forward;
    r->net.clear_op();
    for (const auto& op : forward.op()) Rewrite(op);
    std::set<std::string> at_end = keep;
    at_end.insert(forward.external_output().begin(), forward.external_output().end());
    for (const auto& b : at_end) {
      if (Has(b)) ToNchw(b);
    }
  }

 private:
  struct Place {
    bool nchw = true, nhwc = false;
  };

  bool Has(const std::string& b) const { return place_.count(b) > 0; }
  bool InNhwc(const std::string& b) const { return Has(b) && place_.at(b).nhwc; }

  // The name of b's NHWC (or blocked) blob.
  const std::string& NhwcName(const std::string& b) {
    auto it = nhwc_name_.find(b);
    if (it != nhwc_name_.end()) return it->second;
    std::string name = block_ == 0 ? ChannelsLastName(b) : ChannelBlockedName(b);
    while (names_.count(name)) name += "_";
    names_.insert(name);
    if (dims_ != nullptr) {
      auto d = dims_->find(b);
      if (d != dims_->end() && d->second.size() == 4) {
        (*dims_)[name] = block_ == 0 ? ToNhwcDims(d->second)
                                     : std::vector<int64_t>{d->second[0], d->second[1] / block_,
                                                            d->second[2], d->second[3], block_};
      }
    }
    return nhwc_name_[b] = name;
  }

  // NCHW2NHWC / NHWC2NCHW, or the blocked layout's NCHW2NCHWc / NCHWc2NCHW.
  OperatorDef LayoutChange(bool to_layout, const std::string& from, const std::string& to) const {
    if (block_ == 0) {
      return MakeOperatorDef(to_layout ? "NCHW2NHWC" : "NHWC2NCHW", "", {from}, {to});
    }
    return MakeOperatorDef(to_layout ? "NCHW2NCHWc" : "NCHWc2NCHW", "", {from}, {to},
                           {MakeArgument("block", block_)});
  }

  void Emit(const OperatorDef& op) { *r_->net.add_op() = op; }

  // Makes b's NHWC blob current (b's value is in NCHW only).
  void ToNhwc(const std::string& b) {
    if (InNhwc(b)) return;
    Emit(LayoutChange(true, b, NhwcName(b)));
    ++r_->transposes;
    place_[b].nhwc = true;
  }
  // Makes b (its own name, NCHW) current.
  void ToNchw(const std::string& b) {
    Place& p = place_[b];
    if (p.nchw) return;
    Emit(LayoutChange(false, NhwcName(b), b));
    ++r_->transposes;
    p.nchw = true;
  }

  void WroteNhwc(const std::string& b) { place_[b] = Place{false, true}; }
  void WroteNchw(const std::string& b) { place_[b] = Place{true, false}; }

  void Rewrite(const OperatorDef& op) {
    if (block_ != 0) return RewriteBlocked(op);
    const std::string& t = op.type();
    bool all_nhwc = op.input_size() > 0;
    for (const auto& in : op.input()) all_nhwc &= InNhwc(in);
    if (IsConvertibleConv(op, dims_)) {
      if (nchw_filters_ && IsConvType(op.type())) {
        ConvertLayoutOp(op, 1);  // X; the filter (filter_order NCHW) and the bias stay
        SetArgument(r_->net.mutable_op(r_->net.op_size() - 1), "filter_order", std::string("NCHW"));
      } else {
        ConvertLayoutOp(op, 2);  // X and W to NHWC; the bias stays
      }
      ++r_->converted_convs;
    } else if ((t == "SpatialBN" || IsPool(t)) && op.input_size() >= 1 && InNhwc(op.input(0)) &&
               Order(op) == "NCHW") {
      ConvertLayoutOp(op, 1);  // X; SpatialBN's scale, bias and statistics are per channel
    } else if (all_nhwc && (UnaryElementwise().count(t) || NaryElementwise().count(t))) {
      ConvertElementwise(op);
    } else {
      KeepNchw(op);
    }
  }

  // The channel-blocked rewrite: convolutions that take it, then training SpatialBN, pools and
  // element-wise ops whose inputs are all blocked.
  void RewriteBlocked(const OperatorDef& op) {
    const std::string& t = op.type();
    bool all_blocked = op.input_size() > 0;
    for (const auto& in : op.input()) all_blocked &= InNhwc(in);
    if (IsBlockableConv(op, block_, *param_dims_)) {
      ConvertLayoutOp(op, 1);  // X; the filter and the bias stay as they are
      ++r_->converted_convs;
    } else if (IsBlockableConv(op, block_, *param_dims_, true) && !InNhwc(op.input(0))) {
      ConvertLayoutOp(op, 0);  // X stays NCHW; Y blocked
      ++r_->converted_convs;
    } else if ((IsBlockableBN(op) || ((block_ == 16 || block_ == 8) && IsBlockablePool(op))) &&
               InNhwc(op.input(0))) {
      ConvertLayoutOp(op, 1);
    } else if (all_blocked && RunsOnCpu(op) &&
               (BlockedUnaryElementwise().count(t) ||
                (NaryElementwise().count(t) && !HasLegacyBroadcast(op)))) {
      ConvertElementwise(op);
      if (t == "Dropout")
        SetArgument(r_->net.mutable_op(r_->net.op_size() - 1), "channel_block", block_);
    } else {
      KeepNchw(op);
    }
  }

  // Every input and output in the layout, under its layout name.
  void ConvertElementwise(const OperatorDef& op) {
    OperatorDef o = op;
    for (int i = 0; i < o.input_size(); ++i) o.set_input(i, NhwcName(op.input(i)));
    for (int i = 0; i < o.output_size(); ++i) o.set_output(i, NhwcName(op.output(i)));
    Emit(o);
    for (const auto& out : op.output()) WroteNhwc(out);
    ++r_->converted_ops;
  }

  void KeepNchw(const OperatorDef& op) {
    for (const auto& in : op.input()) {
      if (Has(in)) ToNchw(in);
    }
    Emit(op);
    for (const auto& out : op.output()) WroteNchw(out);
  }

  // A layout-aware op in NHWC: its first `nhwc_inputs` inputs read NHWC blobs, its first output
  // is NHWC, the others (SpatialBN's statistics) are per channel and keep their names.
  void ConvertLayoutOp(const OperatorDef& op, int nhwc_inputs) {
    OperatorDef o = op;
    for (int i = 0; i < op.input_size(); ++i) {
      const std::string& in = op.input(i);
      if (i < nhwc_inputs) {
        ToNhwc(in);
        o.set_input(i, NhwcName(in));
      } else if (Has(in)) {
        ToNchw(in);
      }
    }
    o.set_output(0, NhwcName(op.output(0)));
    if (block_ == 0) {
      SetArgument(&o, "order", std::string("NHWC"));
    } else {
      SetArgument(&o, "channel_block", block_);
    }
    Emit(o);
    WroteNhwc(op.output(0));
    for (int i = 1; i < op.output_size(); ++i) WroteNchw(op.output(i));
    ++r_->converted_ops;
  }

  std::map<std::string, std::vector<int64_t>>* dims_;
  int64_t block_ = 0;
  bool nchw_filters_ = false;
  const std::map<std::string, std::vector<int64_t>>* param_dims_ = nullptr;
  std::set<std::string> names_;
  std::map<std::string, std::string> nhwc_name_;
  std::map<std::string, Place> place_;  // blobs the rewritten net has seen
  ChannelsLastResult* r_ = nullptr;
};

}  // namespace

std::string ChannelsLastName(const std::string& blob) { return blob + "_nhwc"; }

std::string ChannelBlockedName(const std::string& blob) { return blob + "_blocked"; }

bool ResolveChannelsLast(const std::string& setting, DataType precision, DeviceType device,
                         const std::string& order) {
  HALFCAF_ENFORCE(setting == "auto" || setting == "on" || setting == "off",
                  "channels_last must be auto, on or off, got '", setting, "'");
  if (setting != "auto") return setting == "on";
  return precision == DataType::BFLOAT16 && device == DeviceType::CPU && order == "NCHW" &&
         CpuBFloat16KernelsEnabled();
}

int64_t ResolveChannelBlock(const std::string& setting, DataType precision, DeviceType device,
                            const std::string& order, bool channels_last) {
  HALFCAF_ENFORCE(setting == "auto" || setting == "on" || setting == "off",
                  "blocked_layout must be auto, on or off, got '", setting, "'");
  if (setting == "off") return 0;
  const int64_t block = CpuConvChannelBlock();
  const char* missing = device != DeviceType::CPU        ? "training on the CPU"
                        : precision != DataType::FLOAT   ? "float32 training"
                        : order != "NCHW"                ? "an NCHW net"
                        : channels_last                  ? "channels last off"
                        : block == 0                     ? "oneDNN with blocked FP32 kernels"
                                                         : nullptr;
  HALFCAF_ENFORCE(setting == "auto" || missing == nullptr,
                  "blocked_layout on needs ", missing ? missing : "");
  return missing == nullptr ? block : 0;
}

ChannelsLastResult ToChannelsLast(const NetDef& forward, const std::set<std::string>& keep,
                                  std::map<std::string, std::vector<int64_t>>* dims,
                                  bool nchw_filters) {
  ChannelsLastResult r;
  Rewriter(forward, dims, 0, nullptr, nchw_filters).Run(forward, keep, &r);
  return r;
}

ChannelsLastResult ToChannelBlocked(const NetDef& forward, const std::set<std::string>& keep,
                                    int64_t block,
                                    const std::map<std::string, std::vector<int64_t>>& param_dims,
                                    std::map<std::string, std::vector<int64_t>>* dims) {
  HALFCAF_ENFORCE(block == 4 || block == 8 || block == 16,
                  "the channel-blocked layout takes blocks of 4, 8 or 16 channels, got ", block);
  ChannelsLastResult r;
  Rewriter(forward, dims, block, &param_dims).Run(forward, keep, &r);
  return r;
}

}  // namespace halfcaf
