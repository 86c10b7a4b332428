#include "operators/nn/spatial_bn_op.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/float_io.h"
#include "core/gradient.h"
#include "operators/cpu_parallel.h"
#include "operators/nn/channel_block.h"
#include "operators/nn/spatial_bn_loops.h"

namespace halfcaf {

BNOrder ParseBNOrder(const std::string& order) {
  if (order == "NCHW" || order == "nchw") return BNOrder::NCHW;
  if (order == "NHWC" || order == "nhwc") return BNOrder::NHWC;
  HALFCAF_THROW("argument 'order' must be \"NCHW\" or \"NHWC\", got \"", order, "\"");
}

BNShape ComputeBNShape(const std::vector<int64_t>& x_dims, BNOrder order) {
  const int nd = static_cast<int>(x_dims.size());
  HALFCAF_ENFORCE(nd >= 3 && nd <= 5, "SpatialBN expects X with 3 to 5 dims, got ",
                  DimsString(x_dims));
  BNShape s{x_dims[0], 1, 1};
  const int c_axis = order == BNOrder::NCHW ? 1 : nd - 1;
  s.C = x_dims[c_axis];
  for (int i = 1; i < nd; ++i) {
    if (i != c_axis) s.S *= x_dims[i];
  }
  return s;
}

BNLayout ReadBNLayout(const OperatorBase& op) {
  const BNLayout l{ParseBNOrder(op.GetSingleArgument<std::string>("order", "NCHW")),
                   ReadChannelBlock(op)};
  HALFCAF_ENFORCE(l.block == 0 || l.order == BNOrder::NCHW, op.type(),
                  ": channel_block needs order NCHW (it blocks NCHW's channels)");
  return l;
}

std::vector<int64_t> BNDimsOf(const Tensor& X, const BNLayout& layout, const std::string& op) {
  return layout.block == 0 ? X.dims() : UnblockedDims(X.dims(), layout.block, op, "X");
}

const char* BNOrderName(BNOrder order) { return order == BNOrder::NCHW ? "NCHW" : "NHWC"; }

void EnforceBNChannelParam(const Tensor& t, const char* what, const BNShape& s,
                           const std::vector<int64_t>& x_dims, BNOrder order) {
  HALFCAF_ENFORCE(t.dtype() == DataType::FLOAT, what,
                  " must be float (BN parameters and statistics stay FP32 for 16-bit X), got ",
                  t.DebugString());
  HALFCAF_ENFORCE(t.dims() == std::vector<int64_t>{s.C}, what, " must have dims [", s.C,
                  "] (the channels of X ", DimsString(x_dims), " in order ", BNOrderName(order),
                  "), got ", DimsString(t.dims()));
}

float ReadBNEpsilon(const OperatorBase& op) {
  const float eps = op.GetSingleArgument<float>("epsilon", 1e-5f);
  HALFCAF_ENFORCE(eps > 0.f, op.type(), ": argument 'epsilon' must be > 0, got ", eps);
  return eps;
}

void EnforceBNSingleBatch(const OperatorBase& op, int inputs) {
  const int nb = op.GetSingleArgument<int>("num_batches", 1);
  HALFCAF_ENFORCE(nb == 1, op.type(), ": num_batches = ", nb,
                  " is not supported (statistics are computed from X alone; num_batches must "
                  "be 1)");
  HALFCAF_ENFORCE(op.InputSize() == inputs, op.type(), " takes ", inputs, " inputs",
                  inputs == 6 ? " with fuse_relu (the sixth is bias)" : "",
                  " (the 7-input form is only for num_batches > 1), got ", op.InputSize());
}

bool ReadBNFuseRelu(const OperatorBase& op) {
  const int v = op.GetSingleArgument<int>("fuse_relu", 0);
  HALFCAF_ENFORCE(v == 0 || v == 1, op.type(), ": argument fuse_relu must be 0 or 1, got ", v);
  return v == 1;
}

void EnforceBNFuseReluTypes(const OperatorBase& op, bool fuse_relu, const BNLayout& layout,
                            const Tensor& X, const Tensor* dY) {
  if (!fuse_relu) return;
  const bool nhwc = layout.order == BNOrder::NHWC && layout.block == 0;
  const DataType t = X.dtype();
  const bool ok = (t == DataType::FLOAT || (t == DataType::BFLOAT16 && nhwc)) &&
                  (dY == nullptr || dY->dtype() == t);
  HALFCAF_ENFORCE(ok, op.type(),
                  ": fuse_relu takes float X (and dY), or bfloat16 X (and dY) in NHWC, got X ",
                  X.DebugString(), dY != nullptr ? " and dY " + dY->DebugString() : "", " in ",
                  layout.block > 0 ? "channel-blocked NCHW" : BNOrderName(layout.order));
}

void RefuseBNFuseRelu(const OperatorBase& op) {
  HALFCAF_ENFORCE(!ReadBNFuseRelu(op), op.type(),
                  ": fuse_relu (a ReLU fused into batch normalization) runs on the CPU only; "
                  "use SpatialBN then Relu");
}

// Training: alpha = inv_std * scale, beta = bias - mean * alpha in float, from the saved
// statistics, as PyTorch's CPU batch normalization computes them.
void BNAffineCoefficients(bool is_test, int64_t C, const float* scale, const float* bias,
                          const float* mean, const float* var_or_inv_std, float epsilon,
                          float* alpha, float* beta) {
  for (int64_t c = 0; c < C; ++c) {
    if (is_test) {
      alpha[c] = scale[c] / std::sqrt(var_or_inv_std[c] + epsilon);
      beta[c] = bias[c] - mean[c] * alpha[c];
    } else {
      alpha[c] = var_or_inv_std[c] * scale[c];
      beta[c] = bias[c] - mean[c] * alpha[c];
    }
  }
}

// ---- forward -----------------------------------------------------------------------------------

void EnforceSpatialBNForwardArgs(const OperatorBase& op, bool is_test, float momentum) {
  EnforceBNSingleBatch(op);
  HALFCAF_ENFORCE(momentum >= 0.f && momentum <= 1.f,
                  "SpatialBN: argument 'momentum' must be in [0, 1], got ", momentum);
  if (is_test) {
    HALFCAF_ENFORCE(op.OutputSize() == 1,
                    "SpatialBN in test mode (is_test=1) takes 1 output (Y), got ", op.OutputSize());
  } else {
    HALFCAF_ENFORCE(op.OutputSize() == 5,
                    "SpatialBN in training mode (is_test=0) takes 5 outputs "
                    "(Y, running_mean, running_var, saved_mean, saved_var), got ",
                    op.OutputSize());
  }
}

double BNRunningVarFactor(const OperatorBase& op, int64_t M) {
  if (op.GetSingleArgument<int>("unbiased_running_var", 0) == 0 || M <= 1) return 1.0;
  return static_cast<double>(M) / static_cast<double>(M - 1);
}

SpatialBNOp::SpatialBNOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      is_test_(GetSingleArgument<int>("is_test", 0) != 0),
      fuse_relu_(ReadBNFuseRelu(*this)),
      epsilon_(ReadBNEpsilon(*this)),
      momentum_(GetSingleArgument<float>("momentum", 0.9f)),
      layout_(ReadBNLayout(*this)) {
  EnforceSpatialBNForwardArgs(*this, is_test_, momentum_);
}

bool HasRunningStat(const OperatorBase& op, int in, const char* what) {
  const Blob& b = op.InputBlob(in);
  HALFCAF_ENFORCE(b.empty() || b.IsTensor(), what, " ('", op.input_name(in),
                  "') holds a non-tensor object");
  return b.IsTensor() && b.GetTensor().dtype() != DataType::UNDEFINED &&
         b.GetTensor().numel() > 0;
}

void CheckRunningStat(const OperatorBase& op, int in, const Tensor& t, int64_t C,
                      const char* what) {
  HALFCAF_ENFORCE(t.dtype() == DataType::FLOAT, what, " must be float, got ", t.DebugString());
  HALFCAF_ENFORCE(t.numel() == C, what, " ('", op.input_name(in), "') must have ", C,
                  " elements (one per channel), got ", DimsString(t.dims()));
}

float* BNRunningStat(Operator<CPUContext>* op, int in, int out, int64_t C, const char* what) {
  if (HasRunningStat(*op, in, what)) {
    CheckRunningStat(*op, in, op->Input(in), C, what);  // Input checks the device
    return op->Output(out)->mutable_data<float>();
  }
  float* p = op->Output(out, {C})->mutable_data<float>();
  std::fill_n(p, C, 0.f);
  return p;
}

void SpatialBNOp::RunOnDevice() {
  const Tensor& X = Input(0);
  EnforceFloatType(X, "X");
  EnforceBNFuseReluTypes(*this, fuse_relu_, layout_, X, nullptr);
  const std::vector<int64_t> dims = BNDimsOf(X, layout_, type());
  const DataType dtype = X.dtype();
  const BNShape s = ComputeBNShape(dims, layout_.order);
  const int64_t C = s.C;
  const Tensor& scale_t = Input(1);
  const Tensor& bias_t = Input(2);
  EnforceBNChannelParam(scale_t, "scale", s, dims, layout_.order);
  EnforceBNChannelParam(bias_t, "bias", s, dims, layout_.order);
  const float* scale = scale_t.data<float>();
  const float* bias = bias_t.data<float>();
  const FloatIn x(X);  // before Output: Y may be X
  alpha_.resize(C);
  beta_.resize(C);

  if (is_test_) {
    const Tensor& mean_t = Input(3);
    const Tensor& var_t = Input(4);
    EnforceBNChannelParam(mean_t, "mean", s, dims, layout_.order);
    EnforceBNChannelParam(var_t, "var", s, dims, layout_.order);
    BNAffineCoefficients(true, C, scale, bias, mean_t.data<float>(), var_t.data<float>(), epsilon_,
                         alpha_.data(), beta_.data());
  } else {
    const int64_t M = s.N * s.S;
    HALFCAF_ENFORCE(M > 0,
                    "SpatialBN in training mode needs at least one value per channel, X has dims ",
                    DimsString(dims));
    mean_.resize(C);
    var_.resize(C);
    float* running_mean = BNRunningStat(this, 3, 1, C, "running mean");
    float* running_var = BNRunningStat(this, 4, 2, C, "running var");
    float* saved_mean = Output(3, {C})->mutable_data<float>();
    float* saved_inv_std = Output(4, {C})->mutable_data<float>();
    const double var_factor = BNRunningVarFactor(*this, M);
    // Y may alias X: every element is read before it is written.
    const FloatOut y(Output(0, X.dims()), dtype);
    ChannelTrainingForward(
        s, layout_, x, mean_.data(), var_.data(),
        [&](int64_t c0, int64_t c1) {
          UpdateBNStatistics(c1 - c0, mean_.data() + c0, var_.data() + c0, momentum_, epsilon_,
                             var_factor, running_mean + c0, running_var + c0, saved_mean + c0,
                             saved_inv_std + c0);
          BNAffineCoefficients(false, c1 - c0, scale + c0, bias + c0, saved_mean + c0,
                               saved_inv_std + c0, epsilon_, alpha_.data() + c0,
                               beta_.data() + c0);
        },
        alpha_.data(), beta_.data(), y, fuse_relu_);
    return;
  }

  // Y may alias X: every element is read before it is written.
  const FloatOut y(Output(0, X.dims()), dtype);
  ChannelAffine(s, layout_, x, alpha_.data(), beta_.data(), y, fuse_relu_);
}

// ---- gradient ----------------------------------------------------------------------------------

SpatialBNGradientOp::SpatialBNGradientOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      is_test_(GetSingleArgument<int>("is_test", 0) != 0),
      fuse_relu_(ReadBNFuseRelu(*this)),
      epsilon_(ReadBNEpsilon(*this)),
      layout_(ReadBNLayout(*this)) {
  EnforceBNSingleBatch(*this, fuse_relu_ ? 6 : 5);
}

BNShape CheckBNGradientInputs(const Tensor& X, const Tensor& scale, const Tensor& dY,
                              const Tensor& mean, const Tensor& var, bool is_test, BNOrder order,
                              int64_t channel_block) {
  EnforceFloatType(X, "X", true);  // bfloat16 on CUDA too (spatial_bn_op_cudnn.cc)
  EnforceFloatType(dY, "dY", true);
  HALFCAF_ENFORCE(dY.dims() == X.dims(), "dY must have the shape of X ", DimsString(X.dims()),
                  ", got ", DimsString(dY.dims()));
  const std::vector<int64_t> dims =
      channel_block == 0 ? X.dims()
                         : UnblockedDims(X.dims(), channel_block, "SpatialBNGradient", "X");
  const BNShape s = ComputeBNShape(dims, order);
  EnforceBNChannelParam(scale, "scale", s, dims, order);
  EnforceBNChannelParam(mean, is_test ? "mean" : "saved_mean", s, dims, order);
  EnforceBNChannelParam(var, is_test ? "var" : "saved_var (inverse std)", s, dims, order);
  HALFCAF_ENFORCE(is_test || s.N * s.S > 0,
                  "SpatialBNGradient in training mode needs at least one value per channel, "
                  "X has dims ", DimsString(dims));
  return s;
}

void SpatialBNGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& scale_t = Input(1);
  const Tensor& dY = Input(2);
  const Tensor& mean_t = Input(3);
  const Tensor& var_t = Input(4);
  const BNShape s = CheckBNGradientInputs(X, scale_t, dY, mean_t, var_t, is_test_, layout_.order,
                                          layout_.block);
  const int64_t C = s.C, M = s.N * s.S;
  const float* scale = scale_t.data<float>();
  const float* mean = mean_t.data<float>();
  const float* var = var_t.data<float>();
  const FloatIn x(X), dy(dY);  // before Output: dX may be dY
  BNReluGate gate{nullptr, nullptr};
  if (fuse_relu_) {
    EnforceBNFuseReluTypes(*this, true, layout_, X, &dY);
    const Tensor& bias_t = Input(5);
    EnforceBNChannelParam(bias_t, "bias", s, BNDimsOf(X, layout_, type()), layout_.order);
    alpha_.resize(C);
    beta_.resize(C);
    BNAffineCoefficients(is_test_, C, scale, bias_t.data<float>(), mean, var, epsilon_,
                         alpha_.data(), beta_.data());
    gate = BNReluGate{alpha_.data(), beta_.data()};
  }
  const BNReluGate* g = fuse_relu_ ? &gate : nullptr;

  inv_std_.resize(C);
  for (int64_t c = 0; c < C; ++c) {
    inv_std_[c] = is_test_ ? 1.f / std::sqrt(var[c] + epsilon_) : var[c];
  }
  sum_dy_.resize(C);
  sum_dy_xhat_.resize(C);
  float* dscale = Output(1, {C})->mutable_data<float>();
  float* dbias = Output(2, {C})->mutable_data<float>();
  // dX = a * dY + b * (X - mean) + k per channel. Training (mean and variance depend on X):
  //   dX = scale * inv_std * (dY - mean(dY) - xhat * mean(dY * xhat)),  xhat = (X - mean) * inv_std
  // so a = scale * inv_std, b = -a * inv_std * mean(dY * xhat), k = -a * mean(dY). Test mode
  // (constant statistics): dX = scale * inv_std * dY.
  coef_a_.resize(C);
  coef_b_.resize(C);
  coef_k_.resize(C);
  const double inv_m = M > 0 ? 1.0 / static_cast<double>(M) : 0.0;
  const FloatOut dx(Output(0, X.dims()), X.dtype());
  ChannelGradient(
      s, layout_, x, dy, mean, sum_dy_.data(), sum_dy_xhat_.data(),
      [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
          sum_dy_xhat_[c] *= inv_std_[c];
          dscale[c] = static_cast<float>(sum_dy_xhat_[c]);
          dbias[c] = static_cast<float>(sum_dy_[c]);
          const double a = static_cast<double>(scale[c]) * inv_std_[c];
          const double b = is_test_ ? 0.0 : -a * inv_std_[c] * sum_dy_xhat_[c] * inv_m;
          const double k = is_test_ ? 0.0 : -a * sum_dy_[c] * inv_m;
          coef_a_[c] = static_cast<float>(a);
          coef_b_[c] = static_cast<float>(b);
          coef_k_[c] = static_cast<float>(k);
        }
      },
      coef_a_.data(), coef_b_.data(), coef_k_.data(), g, dx);
}

// ---- gradient maker, schemas, registration -----------------------------------------------------

namespace {

class GetSpatialBNGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    const bool fused = args().GetSingleArgument<int>("fuse_relu", 0) != 0;
    if (args().GetSingleArgument<int>("is_test", 0) != 0) {
      // Test mode: the statistics are the estimated mean and variance (constants).
      std::vector<std::string> inputs{I(0), I(1), GO(0), I(3), I(4)};
      if (fused) inputs.push_back(I(2));
      return SingleGradientDef("SpatialBNGradient", inputs, {GI(0), GI(1), GI(2)});
    }
    std::vector<std::string> inputs{I(0), I(1), GO(0), O(3), O(4)};
    if (fused) inputs.push_back(I(2));  // the fused ReLU recomputes Y from X
    if (args().GetSingleArgument<int>("num_batches", 1) > 1) {
      // Caffe2's multi-batch form (rejected by the CPU op, kept for NetDef compatibility).
      inputs.push_back(GI(1));
      inputs.push_back(GI(2));
    }
    return SingleGradientDef("SpatialBNGradient", inputs, {GI(0), GI(1), GI(2)});
  }
};

// X's BN shape for shape and cost inference (of its NCHW dims when channel-blocked).
BNShape InferredBNShape(const OperatorDef& def, const std::vector<int64_t>& x_dims) {
  return ComputeBNShape(InferenceNchwDims(def, x_dims),
                        ParseBNOrder(ArgumentHelper(def).GetSingleArgument<std::string>(
                            "order", "NCHW")));
}

std::vector<TensorShape> SpatialBNShapes(const OperatorDef& def,
                                         const std::vector<TensorShape>& in) {
  const BNShape s = InferredBNShape(def, in.at(0).dims);
  std::vector<TensorShape> out{in[0]};
  for (int o = 1; o < def.output_size(); ++o) out.push_back(TensorShape{{s.C}, DataType::FLOAT});
  return out;
}

std::vector<TensorShape> SpatialBNGradientShapes(const OperatorDef& def,
                                                 const std::vector<TensorShape>& in) {
  const BNShape s = InferredBNShape(def, in.at(0).dims);
  return {in[0], TensorShape{{s.C}, DataType::FLOAT}, TensorShape{{s.C}, DataType::FLOAT}};
}

OpCost SpatialBNCost(const OperatorDef& def, const std::vector<TensorShape>& in,
                     double flops_per_element) {
  const BNShape s = InferredBNShape(def, in.at(0).dims);
  const double n = static_cast<double>(in[0].numel());
  const double item = DataTypeSize(in[0].dtype);
  OpCost c;
  c.flops = flops_per_element * n;
  c.bytes_read = n * item + 4.0 * s.C * sizeof(float);
  c.bytes_written = n * item + 4.0 * s.C * sizeof(float);
  c.params_bytes = 2.0 * s.C * sizeof(float);
  return c;
}

}  // namespace

REGISTER_CPU_OPERATOR(SpatialBN, SpatialBNOp);
REGISTER_CPU_OPERATOR(SpatialBNGradient, SpatialBNGradientOp);
REGISTER_GRADIENT(SpatialBN, GetSpatialBNGradient);

OPERATOR_SCHEMA(SpatialBN)
    .NumInputs({5, 7})
    .NumOutputs({1, 5})
    .AllowInplace({{0, 0}})
    .EnforceInplace({{3, 1}, {4, 2}})
    .TensorInferenceFunction(SpatialBNShapes)
    .CostInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      ArgumentHelper args(def);
      return SpatialBNCost(def, in, args.GetSingleArgument<int>("is_test", 0) ? 2 : 6);
    })
    .SetDoc(
        "Spatial batch normalisation: each channel of X is normalised over the batch and "
        "spatial axes, then scaled and shifted: Y = (X - mean) / sqrt(var + epsilon) * scale "
        "+ bias. Training (is_test=0, 5 outputs) uses the batch mean and biased batch "
        "variance, updates the running statistics in place (running = running * momentum + "
        "batch * (1 - momentum); empty running blobs start at zero) and saves the batch mean "
        "and the inverse std 1 / sqrt(var + epsilon) for the gradient. The running variance "
        "is updated with the biased batch variance (the one Y is normalised with) on CPU and "
        "CUDA alike; Caffe2's cuDNN operator uses the unbiased one (times M / (M - 1), M = "
        "values per channel) there, and so does PyTorch: unbiased_running_var=1 (halfcaf's "
        "own argument) selects that. Test (is_test=1, 1 "
        "output) uses the given mean and var. X is 3-D to 5-D, float, float16 or bfloat16; scale, "
        "bias, mean and var are float. num_batches > 1 (statistics from sums/sumsq inputs) "
        "is not supported.")
    .Arg("is_test", "int, default 0: 1 = inference with the given mean/var (1 output)")
    .Arg("epsilon", "float, default 1e-5: added to the variance, must be > 0")
    .Arg("momentum", "float, default 0.9: weight of the old running statistics, in [0, 1]")
    .Arg("order", "string, default \"NCHW\": \"NCHW\" (C = dim 1) or \"NHWC\" (C = last dim)")
    .Arg("num_batches", "int, default 1: only 1 is supported")
    .Arg("unbiased_running_var",
         "int, default 0 (halfcaf extension): 1 = the running variance takes the unbiased batch "
         "variance (times M / (M - 1)), as PyTorch's and cuDNN's do")
    .Arg("fuse_relu",
         "int, default 0 (halfcaf extension, CPU; float X, or bfloat16 X in NHWC): 1 = Y = "
         "max(BN(X), 0) (NaN stays NaN), a Relu fused in; its gradient takes bias as a sixth "
         "input")
    .Input(0, "X", "input (N, C, ...) or (N, ..., C), 3-D to 5-D")
    .Input(1, "scale", "float (C)")
    .Input(2, "bias", "float (C)")
    .Input(3, "mean", "float (C): running mean (training, may be empty) or estimated mean (test)")
    .Input(4, "var", "float (C): running var (training, may be empty) or estimated var (test)")
    .Output(0, "Y", "output, same shape and type as X")
    .Output(1, "running_mean", "training: updated running mean, in place on input 3")
    .Output(2, "running_var", "training: updated running variance, in place on input 4")
    .Output(3, "saved_mean", "training: batch mean (C)")
    .Output(4, "saved_var", "training: batch inverse std 1 / sqrt(var + epsilon) (C)");

OPERATOR_SCHEMA(SpatialBNGradient)
    .NumInputs({5, 6, 7})
    .NumOutputs(3)
    .AllowInplace({{5, 1}, {6, 2}})
    .TensorInferenceFunction(SpatialBNGradientShapes)
    .CostInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      return SpatialBNCost(def, in, 8);
    })
    .SetDoc(
        "Gradient of SpatialBN; takes the forward op's arguments. Training: inputs 3 and 4 "
        "are the forward's saved_mean and saved_var (inverse std), and dX includes the "
        "dependence of the batch statistics on X. Test (is_test=1): inputs 3 and 4 are the "
        "estimated mean and variance, treated as constants (Caffe2's CPU kernel reads input "
        "4 as an inverse std in this form too; halfcaf reads it as the variance, which makes "
        "the result the true gradient of the test-mode forward). dscale and dbias are float.")
    .Arg("is_test", "int, default 0: the forward op's mode")
    .Arg("epsilon", "float, default 1e-5: the forward op's epsilon (used in test mode)")
    .Arg("order", "string, default \"NCHW\"")
    .Arg("fuse_relu",
         "int, default 0: the forward's; 1 = dY is the gradient of max(BN(X), 0), gated by the "
         "ReLU with BN(X) recomputed from X (input 5: bias)")
    .Input(0, "X", "forward input")
    .Input(1, "scale", "float (C)")
    .Input(2, "dY", "gradient of Y")
    .Input(3, "mean", "saved batch mean (training) or estimated mean (test), float (C)")
    .Input(4, "var", "saved inverse std (training) or estimated variance (test), float (C)")
    .Input(5, "bias", "with fuse_relu: the forward's bias, float (C)")
    .Output(0, "dX", "gradient of X, same shape and type as X")
    .Output(1, "dscale", "gradient of scale, float (C)")
    .Output(2, "dbias", "gradient of bias, float (C)");

}  // namespace halfcaf
