// The inference plan of a forward-only CPU net (what Caffe2's inference optimizer and ideep
// fusions did), applied before the net is created:
//   1. SpatialBN in test mode folds into the Conv before it: the filter and bias are rescaled
//      (filter * scale / sqrt(var + eps), (bias - mean) * scale / sqrt(var + eps) + BN bias)
//      into new parameter blobs, and the BN op goes.
//   2. Conv followed by Relu, by Add / Sum with a tensor of its output's shape, or by both, becomes
//      one ConvFusion (operators/nn/conv_fusion_op.h; oneDNN post-ops); every other Conv becomes a
//      ConvFusion of type 0, whose filter oneDNN reorders once.
//   3. With oneDNN, 2-D convolutions, pooling, test-mode BN and the elementwise ops between them run
//      in NHWC (oneDNN's inference kernels read NHWC directly, without the blocked-layout copies);
//      NCHW2NHWC / NHWC2NCHW ops convert at the edges of those regions, and the filters are
//      transposed once here.
// Outputs equal the unoptimized net's within float rounding (1e-5 relative, tested on ResNet-50
// and LeNet), except that oneDNN's fused relu may turn a NaN into 0 (as ONNX Runtime's fused
// convolutions do), where the Relu op keeps it. The new parameters are a snapshot: re-run the optimizer after changing the old ones.
// Nets that are not forward-only are left alone (the report says why): gradient ops, an op that
// writes a blob an earlier op reads (an update), or a non-CPU device.
//
//   InferenceOptions o;
//   o.keep = {"softmax"};             // blobs the caller fetches
//   InferenceReport r = OptimizeForInference(&predict_net, &ws, o);   // parameters in ws
//   std::cout << r.Summary();
#pragma once

#include <set>
#include <string>

#include "core/workspace.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

struct InferenceOptions {
  std::set<std::string> keep;  // fetched blobs: never fused away, NCHW at the end of the net
  bool fold_batch_norm = true;
  bool fuse = true;           // Conv [+ Add/Sum] [+ Relu] -> ConvFusion
  bool channels_last = true;  // NHWC regions (only when the build has oneDNN)
  // conv_algorithm = 1 (Winograd, operators/nn/conv_op_dnnl.cc) on the 3 x 3, stride 1
  // convolutions: oneDNN's Winograd kernels where it has them (float32, AVX-512, images of 14 x 14
  // and more), reordering NHWC activations into its blocked layout for them.
  bool winograd = false;
  // Remove from the workspace the parameters that no op of the optimized net reads (the
  // originals of folded or transposed filters), unless kept or external outputs.
  bool drop_unused_params = true;
};

struct InferenceReport {
  bool applied = false;
  std::string reason;  // why the net was left alone
  int bn_folded = 0, relu_fused = 0, sum_fused = 0, conv_fusion = 0;
  int nhwc_ops = 0, transposes = 0, params_added = 0, params_dropped = 0, winograd = 0;
  bool changed() const { return bn_folded + conv_fusion + nhwc_ops > 0; }
  std::string Summary() const;
};

// `ws` holds the parameters (an init net has run) and, when known, the inputs: shapes decide
// which Add/Sum fuse and which ops can run in NHWC.
InferenceReport OptimizeForInference(NetDef* net, Workspace* ws, const InferenceOptions& options);

}  // namespace halfcaf
