// SpatialBN: batch normalisation over every axis but the channel axis.
//   X (N, C, spatial...) in NCHW or (N, spatial..., C) in NHWC, 3-D to 5-D; float, float16 or
//   bfloat16.
//   scale, bias, mean, var: float (C).
// Training (is_test = 0, 5 outputs): batch mean and biased variance per channel,
//   Y = (X - mean_b) / sqrt(var_b + epsilon) * scale + bias,
//   running mean/var (outputs 1, 2, in place on inputs 3, 4; zero-initialised when empty)
//   <- running * momentum + batch * (1 - momentum),
//   saved_mean (output 3) = mean_b, saved_var (output 4) = 1 / sqrt(var_b + epsilon).
// Test (is_test = 1, 1 output): Y = (X - mean) / sqrt(var + epsilon) * scale + bias.
// With channel_block = B (order NCHW), X, Y (dY, dX) are channel-blocked, (N, C / B, H, W, B): the
// training rewrite's layout (models/channels_last.h); the results are bit for bit those of the
// same tensors in NCHW (spatial_bn_loops.h).
// With fuse_relu = 1 (halfcaf's own, on the CPU, float X or bfloat16 X in NHWC: the training
// rewrite's fusion, models/bn_relu_fusion.h), Y = ReluNaN(BN(X)), a Relu fused in.
// SpatialBNGradient: (X, scale, dY, mean, var_or_inv_std) -> (dX, dscale, dbias); in training
// inputs 3, 4 are the saved batch mean and inverse std, in test mode the estimated mean and var.
// With fuse_relu, a sixth input, bias: dY is the fused Y's gradient, gated by the ReLU with Y
// recomputed from X (BNAffineCoefficients, as the forward computed it), so Y and dX are bit for
// bit those of Relu and ReluGradient around the unfused op.
// Args: is_test (int, 0), epsilon (float, 1e-5, > 0), momentum (float, 0.9), order ("NCHW"),
// num_batches (int, 1; only 1 is supported), unbiased_running_var (int, 0; halfcaf's own: the
// running variance takes the unbiased batch variance, times M / (M - 1), as PyTorch's does).
// This implementation runs every layout on the CPU (NHWC float and bfloat16 on the loops of
// spatial_bn_nhwc.h, 1.5-3x faster than oneDNN's batch normalization); oneDNN's runs where an op
// names engine DNNL (spatial_bn_op_dnnl.cc).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "core/operator.h"

namespace halfcaf {

enum class BNOrder { NCHW, NHWC };

// X's layout: the order, and with block > 0 (order NCHW) NCHW's channel-blocked form
// (N, C / block, spatial..., block) (operators/nn/channel_block.h).
struct BNLayout {
  BNOrder order = BNOrder::NCHW;
  int64_t block = 0;
};
// The `order` and `channel_block` arguments, checked (a block needs order NCHW).
BNLayout ReadBNLayout(const OperatorBase& op);
// X's dims as NCHW / NHWC: unblocked when the layout is blocked (checked).
std::vector<int64_t> BNDimsOf(const Tensor& X, const BNLayout& layout, const std::string& op);

// X viewed as (N, C, S) with S the product of the spatial dims.
struct BNShape {
  int64_t N, C, S;
};
// Parses "NCHW"/"nchw"/"NHWC"/"nhwc"; throws otherwise.
BNOrder ParseBNOrder(const std::string& order);
// Checks X has 3 to 5 dims and splits them per the order.
BNShape ComputeBNShape(const std::vector<int64_t>& x_dims, BNOrder order);
const char* BNOrderName(BNOrder order);
// Checks a BN parameter or statistic (`what`): float with dims [C].
void EnforceBNChannelParam(const Tensor& t, const char* what, const BNShape& s,
                           const std::vector<int64_t>& x_dims, BNOrder order);

// Checks SpatialBNGradient's inputs (X, scale, dY, mean or saved_mean, var or saved inverse std)
// the same way on every device and returns X's BN shape (of its NCHW dims when X and dY are
// channel-blocked: operators/nn/channel_block.h).
BNShape CheckBNGradientInputs(const Tensor& X, const Tensor& scale, const Tensor& dY,
                              const Tensor& mean, const Tensor& var, bool is_test, BNOrder order,
                              int64_t channel_block = 0);
// The `epsilon` argument (default 1e-5), checked > 0.
float ReadBNEpsilon(const OperatorBase& op);
// Checks num_batches == 1 and `inputs` inputs (the multi-batch form is not supported).
void EnforceBNSingleBatch(const OperatorBase& op, int inputs = 5);
// The `fuse_relu` argument (0 or 1).
bool ReadBNFuseRelu(const OperatorBase& op);
// With fuse_relu, checks X (and dY) are float, or bfloat16 in NHWC: the loops that gate the
// gradient by the ReLU's output as the forward stored it (spatial_bn_nhwc.h for bfloat16).
void EnforceBNFuseReluTypes(const OperatorBase& op, bool fuse_relu, const BNLayout& layout,
                            const Tensor& X, const Tensor* dY);
// Throws for fuse_relu = 1: the ops of other devices and engines do not fuse a ReLU.
void RefuseBNFuseRelu(const OperatorBase& op);

// SpatialBN's affine map Y = X * alpha[c] + beta[c], in float, from scale, bias and the
// statistics: training, the saved batch mean and inverse std as stored (outputs 3, 4; in float
// arithmetic, as PyTorch's CPU batch normalization); test, the estimated mean and variance (with
// epsilon). The gradient's fused ReLU recomputes Y with it.
void BNAffineCoefficients(bool is_test, int64_t C, const float* scale, const float* bias,
                          const float* mean, const float* var_or_inv_std, float epsilon,
                          float* alpha, float* beta);
// SpatialBN's forward arguments and output count, checked the same way on every device.
void EnforceSpatialBNForwardArgs(const OperatorBase& op, bool is_test, float momentum);

// Running statistic input `in` of a training SpatialBN (CPU and CUDA): true when it holds data
// to update; false when it is empty or absent (the op zero-initialises it). Throws when the blob
// holds a non-tensor object.
bool HasRunningStat(const OperatorBase& op, int in, const char* what);
// Checks a running statistic that has data (the op fetched it on its device): float, C values.
void CheckRunningStat(const OperatorBase& op, int in, const Tensor& t, int64_t C,
                      const char* what);

// The factor the running variance's batch term takes over the biased batch variance of M values
// per channel: 1, or M / (M - 1) with the `unbiased_running_var` argument (1 when M == 1).
double BNRunningVarFactor(const OperatorBase& op, int64_t M);

// Training SpatialBN's statistic outputs from the batch mean and biased variance of each channel
// (CPU and DNNL engines): running_mean / running_var <- running * momentum + batch * (1 -
// momentum) (the variance's batch term times var_factor: BNRunningVarFactor), saved_mean = mean,
// saved_inv_std = 1 / sqrt(var + epsilon), in double.
template <typename T>
void UpdateBNStatistics(int64_t C, const T* mean, const T* var, float momentum, float epsilon,
                        double var_factor, float* running_mean, float* running_var,
                        float* saved_mean, float* saved_inv_std) {
  const double keep = momentum, take = 1.0 - momentum;
  for (int64_t c = 0; c < C; ++c) {
    running_mean[c] = static_cast<float>(running_mean[c] * keep + mean[c] * take);
    running_var[c] = static_cast<float>(running_var[c] * keep + var[c] * var_factor * take);
    saved_mean[c] = static_cast<float>(mean[c]);
    saved_inv_std[c] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(var[c]) + epsilon));
  }
}

// Output `out` of a training SpatialBN, the running statistic aliasing input `in`: its data, or
// C zeros when the input is empty or absent.
float* BNRunningStat(Operator<CPUContext>* op, int in, int out, int64_t C, const char* what);

class SpatialBNOp final : public Operator<CPUContext> {
 public:
  SpatialBNOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  bool is_test_, fuse_relu_;
  float epsilon_, momentum_;
  BNLayout layout_;
  std::vector<float> alpha_, beta_;
  std::vector<double> mean_, var_;
};

class SpatialBNGradientOp final : public Operator<CPUContext> {
 public:
  SpatialBNGradientOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  bool is_test_, fuse_relu_;
  float epsilon_;
  BNLayout layout_;
  std::vector<float> inv_std_, coef_a_, coef_b_, coef_k_, alpha_, beta_;
  std::vector<double> sum_dy_, sum_dy_xhat_;
};

}  // namespace halfcaf
