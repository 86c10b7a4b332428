// The channels-last transform: rewrites a forward net's 2-D NCHW convolutions, and the batch
// normalization, pooling and element-wise ops between them, to NHWC, so that activations stay in
// the layout oneDNN's BF16 kernels (AMX, AVX512_BF16) compute in instead of being reordered into
// it and back at every convolution (measured on ResNet-50 training, batch 8: those reorders were
// a fifth of the BF16 step).
//
// The net keeps computing the same function of the same blobs:
//   - a Conv reads its filter through `NCHW2NHWC(W) -> W_nhwc` ((M, C, kH, kW) -> (M, kH, kW, C),
//     Caffe2's NHWC filter), or with `nchw_filters` as it is (filter_order NCHW), so parameters,
//     their 16-bit copies, gradients handed to the optimizer and checkpoints stay in NCHW; the
//     transposes' gradient ops bring dW back to it;
//   - an activation X that a converted op writes lives in `X_nhwc` (NHWC); an op that is not
//     converted and reads it gets `NHWC2NCHW(X_nhwc) -> X` in front of it, so X is NCHW wherever
//     the net's own ops see it; the net's external outputs and `keep` blobs are NCHW at its end;
//   - converted: Conv / Conv2D / ConvTranspose with a 2-D kernel (from their args, or `dims`
//     where given) and order NCHW; SpatialBN, MaxPool and AveragePool whose input is already NHWC;
//     element-wise ops (ReLU and other unary ones, Dropout, the float casts; Sum, Add, Mul, Sub,
//     Div, Max, Min when every input is NHWC: broadcasting between two permuted tensors is permuted
//     alike). Everything else is left as it is.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/types.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

struct ChannelsLastResult {
  NetDef net;
  int converted_convs = 0;  // Conv ops now NHWC
  int converted_ops = 0;    // every op now NHWC (convs included)
  int transposes = 0;       // NCHW2NHWC / NHWC2NCHW ops inserted
};

// `keep`: blobs that must be NCHW (under their own name) when the net ends, besides its external
// outputs. `dims`: known shapes of blobs (may be null); the NHWC blobs' permuted shapes are added.
// `nchw_filters` (CPU nets): the converted Conv / Conv2D read their NCHW filters as they are
// (filter_order NCHW: oneDNN reorders a filter into its own layout anyway) instead of transposed
// copies, so neither the filter nor its gradient is transposed in the step.
ChannelsLastResult ToChannelsLast(const NetDef& forward, const std::set<std::string>& keep,
                                  std::map<std::string, std::vector<int64_t>>* dims = nullptr,
                                  bool nchw_filters = false);

// The name of X's NHWC version in a net the transform wrote.
std::string ChannelsLastName(const std::string& blob);

// The channel-blocked variant of the same rewrite, for FP32 nets on oneDNN's FP32 kernels, which
// compute in channel blocks of `block` (16 with AVX-512, 8 with AVX2: CpuConvChannelBlock()):
// activations live in `X_blocked`, (N, C / block, H, W, block) (operators/nn/channel_block.h), so
// convolutions and batch normalization read and write them without reordering (ResNet-50 FP32
// training, batch 8: those reorders were a fifth of the step). The results are the NCHW net's bit
// for bit (batch normalization sums as on NCHW: operators/nn/spatial_bn_loops.h). Converted, with
// channel_block:
// Conv / Conv2D on the CPU with one group and a filter in `param_dims` whose M and C are multiples
// of `block` (the filter itself stays as it is), or whose M is and C is below it (a first
// convolution, over an RGB image: it reads X in NCHW and writes Y blocked); ConvTranspose likewise
// when both its channel counts are multiples of `block` (a generator's last layer, to 1 or 3
// channels, stays NCHW); SpatialBN in training mode, not in place, and the 2-D MaxPool /
// AveragePool (operators/nn/pool_op.h; blocks of 16 or 8, where the DNNL pools add a gradient's
// windows as on NCHW), whose input is blocked.
// Element-wise ops whose inputs are all blocked: Relu, LeakyRelu, Sigmoid, Tanh, Elu, Clip, Scale,
// Copy, StopGradient, Dropout (with channel_block: it keeps and drops the elements the NCHW op
// does), and Sum, Add, Sub, Mul, Div, Max, Min without Caffe2's legacy broadcast / axis
// arguments. NCHW2NCHWc / NCHWc2NCHW
// convert at the edges.
ChannelsLastResult ToChannelBlocked(const NetDef& forward, const std::set<std::string>& keep,
                                    int64_t block,
                                    const std::map<std::string, std::vector<int64_t>>& param_dims,
                                    std::map<std::string, std::vector<int64_t>>* dims = nullptr);

// The name of X's channel-blocked version in a net the transform wrote.
std::string ChannelBlockedName(const std::string& blob);

// A trainer's channels-last setting resolved: "on" / "off" as said; "auto" is on for BF16 on a
// CPU whose oneDNN runs BF16 kernels (operators/nn/bf16_kernels.h), whether its convolutions
// compute in BF16 or, where its BF16 kernels are slower, in FP32 over converted copies (ResNet-50
// under an AVX512_CORE_BF16 cap: 0.91-0.94x the NCHW step), for an NCHW net (an NHWC one has
// nothing to convert). Throws on another setting.
bool ResolveChannelsLast(const std::string& setting, DataType precision, DeviceType device,
                         const std::string& order);

// A trainer's channel-blocked layout setting resolved to a block (0: off): "on" for FP32 training
// of an NCHW net on the CPU with oneDNN, not channels last (throws naming what is missing); "auto"
// the same where all of that holds, else off; "off" 0. Throws on another setting.
int64_t ResolveChannelBlock(const std::string& setting, DataType precision, DeviceType device,
                            const std::string& order, bool channels_last);

}  // namespace halfcaf
