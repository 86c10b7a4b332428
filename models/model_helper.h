// ModelHelper: builds a training model as two Caffe2-compatible NetDefs, the way Caffe2's brew
// helpers did: an init net that creates every parameter (filler ops) and a forward net that uses
// them, plus a registry of the parameters (name, role, shape).
//
// Naming follows brew: a layer called `name` writes the blob `name` and owns the parameters
//   Conv / FC:  <name>_w (weight), <name>_b (bias)
//   SpatialBN:  <name>_s (scale), <name>_b (bias), <name>_rm (running mean), <name>_riv (running
//               variance; brew's name, the blob holds the variance), and in training the saved
//               batch statistics <name>_sm, <name>_siv (outputs 3, 4 of SpatialBN).
//   Dropout:    mask blob _<name>_mask (training only).
// The storage order (NCHW or NHWC) and the test mode are helper-wide settings read by every
// builder when it is called. Parameters are listed as external inputs of the forward net; the
// forward net has no data-input op and no gradient ops (the trainer adds those).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proto/halfcaf.pb.h"

namespace halfcaf {

// How a parameter is used. Roles tell an optimizer what to update and what to decay: WEIGHT gets
// weight decay; BIAS, BN_SCALE and BN_BIAS are learned without it; BN running statistics are
// updated by SpatialBN itself, never by an optimizer. OTHER is a blob whose use is unknown (only
// ParamsFromNets produces it).
enum class ParamRole {
  WEIGHT,
  BIAS,
  BN_SCALE,
  BN_BIAS,
  BN_RUNNING_MEAN,
  BN_RUNNING_VAR,
  OTHER,
};

// "WEIGHT", "BIAS", ... .
const char* ParamRoleName(ParamRole role);
// WEIGHT, BIAS, BN_SCALE, BN_BIAS: the roles counted as model parameters (learned by gradient).
bool IsLearnedRole(ParamRole role);

struct ParamInfo {
  std::string name;
  ParamRole role = ParamRole::OTHER;
  std::vector<int64_t> shape;  // empty when unknown (ParamsFromNets on a filler without `shape`)

  int64_t numel() const;  // product of shape (0 when the shape is unknown)
};

// Number of elements in the params with a learned role (IsLearnedRole): the usual "parameter
// count" (ResNet-50 with 1000 classes: 25,557,032).
int64_t CountLearnedParams(const std::vector<ParamInfo>& params);

// A parameter initialiser: a filler op type and its arguments (the shape is added by the helper).
struct Filler {
  std::string type;
  std::vector<Argument> args;

  static Filler Xavier();                         // XavierFill
  static Filler MSRA();                           // MSRAFill
  static Filler Constant(float value);            // ConstantFill value=v
  static Filler Gaussian(float mean, float std);  // GaussianFill
  static Filler Uniform(float min, float max);    // UniformFill
};

struct ConvOptions {
  int stride = 1;
  int pad = 0;
  int dilation = 1;
  int group = 1;         // NCHW only on the CPU engine
  bool no_bias = false;  // no <name>_b: Conv gets two inputs
  Filler weight_init = Filler::Xavier();
  Filler bias_init = Filler::Constant(0.f);
};

struct FCOptions {
  int axis = 1;  // X viewed as (prod(dims[:axis]), prod(dims[axis:]))
  Filler weight_init = Filler::Xavier();
  Filler bias_init = Filler::Constant(0.f);
};

struct SpatialBNOptions {
  float epsilon = 1e-5f;
  float momentum = 0.9f;
  float scale_init = 1.f;       // initial scale (0 for "zero-init residual" variants)
  std::optional<bool> is_test;  // default: the helper's is_test
};

class ModelHelper {
 public:
  // `order` is "NCHW" or "NHWC". The forward net is called `name`, the init net `name + "_init"`.
  explicit ModelHelper(const std::string& name = "model", const std::string& order = "NCHW",
                       bool is_test = false);

  const std::string& name() const { return net_.name(); }
  const std::string& order() const { return order_; }
  // Applies to the builders called afterwards. Throws on anything but NCHW / NHWC.
  void set_order(const std::string& order);
  bool is_test() const { return is_test_; }
  void set_is_test(bool is_test) { is_test_ = is_test; }

  const NetDef& init_net() const { return init_net_; }
  const NetDef& net() const { return net_; }
  NetDef* mutable_init_net() { return &init_net_; }
  NetDef* mutable_net() { return &net_; }

  // Parameter registry, in creation order.
  const std::vector<ParamInfo>& params() const { return params_; }
  const ParamInfo* FindParam(const std::string& name) const;  // nullptr if not a parameter
  std::vector<std::string> ParamNames() const;
  std::vector<std::string> ParamNames(ParamRole role) const;
  // Elements in the learned parameters (CountLearnedParams(params())).
  int64_t NumLearnedParams() const { return CountLearnedParams(params_); }

  // Loss blobs written by SoftmaxWithLoss / AveragedLoss, in order: what Backward seeds.
  const std::vector<std::string>& losses() const { return losses_; }

  // Declares external inputs / outputs of the forward net (e.g. "data", "label"; "loss").
  void AddInput(const std::string& blob);
  void AddOutput(const std::string& blob);

  // Registers a parameter created by `filler` with the given shape: appends the filler op to the
  // init net and the blob to the forward net's external inputs. Throws if the name is taken.
  const ParamInfo& CreateParam(const std::string& name, ParamRole role,
                               const std::vector<int64_t>& shape, const Filler& filler);

  // Appends an arbitrary op to the forward net and returns it (for ops without a builder).
  OperatorDef* AddOp(const std::string& type, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs,
                     const std::vector<Argument>& args = {});

  // ---- builders: each appends one op (named `out` where it has parameters) and returns the
  // name of its main output blob. `dim_in`/`dim_out` are channel counts (features for FC).

  // Conv, square kernel. Weight (dim_out, dim_in/group, k, k) in NCHW, (dim_out, k, k, dim_in)
  // in NHWC; bias (dim_out). MSRAFill weights in NHWC are written as GaussianFill with MSRA's
  // standard deviation sqrt(2 / (dim_out * k * k)), because MSRAFill takes fan_out from dims[1],
  // which is the kernel height in NHWC.
  std::string Conv(const std::string& in, const std::string& out, int64_t dim_in, int64_t dim_out,
                   int kernel, const ConvOptions& opts = {});
  // FC: weight (dim_out, dim_in), bias (dim_out).
  std::string FC(const std::string& in, const std::string& out, int64_t dim_in, int64_t dim_out,
                 const FCOptions& opts = {});
  // SpatialBN over `dim` channels. Training: outputs out, <out>_rm, <out>_riv, <out>_sm,
  // <out>_siv; test: out only.
  std::string SpatialBN(const std::string& in, const std::string& out, int64_t dim,
                        const SpatialBNOptions& opts = {});
  std::string Relu(const std::string& in, const std::string& out);  // in == out: in place
  std::string MaxPool(const std::string& in, const std::string& out, int kernel, int stride = 1,
                      int pad = 0);
  std::string AveragePool(const std::string& in, const std::string& out, int kernel, int stride = 1,
                          int pad = 0);
  // AveragePool / MaxPool with global_pooling=1: (N, C, 1, 1) or (N, 1, 1, C).
  std::string GlobalAveragePool(const std::string& in, const std::string& out);
  std::string GlobalMaxPool(const std::string& in, const std::string& out);
  // Training: outputs out and _<out>_mask; test: out only. `is_test` defaults to the helper's.
  std::string Dropout(const std::string& in, const std::string& out, float ratio = 0.5f,
                      std::optional<bool> is_test = std::nullopt);
  // Element-wise a + b (same shapes); out may be a or b (in place).
  std::string Add(const std::string& a, const std::string& b, const std::string& out);
  std::string Flatten(const std::string& in, const std::string& out, int axis = 1);
  std::string Softmax(const std::string& in, const std::string& out, int axis = 1);
  // SoftmaxWithLoss(logits, label) -> (softmax_out, loss_out); returns {softmax_out, loss_out}
  // and records loss_out as a loss.
  std::pair<std::string, std::string> SoftmaxWithLoss(const std::string& logits,
                                                      const std::string& label,
                                                      const std::string& softmax_out,
                                                      const std::string& loss_out);
  std::string LabelCrossEntropy(const std::string& prob, const std::string& label,
                                const std::string& out);
  // Mean of `in`; records `out` as a loss.
  std::string AveragedLoss(const std::string& in, const std::string& out);
  std::string Accuracy(const std::string& prediction, const std::string& label,
                       const std::string& out, int top_k = 1);

 private:
  std::string Pool(const std::string& type, const std::string& in, const std::string& out,
                   int kernel, int stride, int pad, bool global);
  Argument OrderArg() const;

  std::string order_;
  bool is_test_;
  NetDef init_net_;
  NetDef net_;
  std::vector<ParamInfo> params_;
  std::vector<std::string> losses_;
};

// Infers the parameters of an arbitrary model given as an init net and a forward net: the blobs
// the init net writes that the forward net reads (before writing them), in the order of their
// first read. Roles come from the first use that tells: input 1 of Conv (any rank alias), FC,
// FCTransposed or ConvTranspose is a WEIGHT, input 2 a BIAS; inputs 1..4 of SpatialBN are
// BN_SCALE, BN_BIAS, BN_RUNNING_MEAN, BN_RUNNING_VAR; any other use is OTHER. The shape is the `shape` argument of
// the (last) init op writing the blob, empty when it has none.
std::vector<ParamInfo> ParamsFromNets(const NetDef& init_net, const NetDef& forward_net);

// How every convolution of `net` (Conv and its rank aliases) chooses its cuDNN algorithms: sets
// their exhaustive_search (1: timed cudnnFind within the workspace limit, like PyTorch's
// torch.backends.cudnn.benchmark=True; 0: cuDNN's heuristics) and ws_nbytes_limit (bytes)
// arguments, replacing the net's own. Gradient ops built from the net inherit them (their maker
// copies the forward op's arguments). The CPU convolutions ignore both.
void SetConvAlgoSearch(NetDef* net, bool exhaustive, int64_t ws_nbytes_limit);

}  // namespace halfcaf
