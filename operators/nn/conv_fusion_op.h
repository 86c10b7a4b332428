// ConvFusion: a convolution with the operations that follow it fused in, for inference (Caffe2's
// ideep operator of the same name; models/inference_optimize.h writes it).
//   fusion_type 0  Y = conv(X, filter) + bias               (halfcaf: a plain inference conv)
//               1  Y = relu(conv(X, filter) + bias)
//               2  Y = conv(X, filter) + bias + S
//               3  Y = relu(conv(X, filter) + bias + S)
// Inputs (X, filter[, bias][, S]): S, present for types 2 and 3, is the last input and has Y's
// dims; Y may be S itself (in place). Same conv arguments, layouts and checks as Conv.
// The filter and bias are treated as constants: the oneDNN engine keeps its reordered copy of
// the filter until the filter tensor's storage changes (re-run the optimizer after changing the
// parameters in place). No gradient: this is an inference operator.
// NaN: the default implementation keeps it (Relu's rule); the oneDNN engine's fused relu is
// max(x, 0) in some kernels and then maps NaN to 0, as ONNX Runtime's fused Conv+Relu does.
#pragma once

#include <memory>
#include <vector>

#include "operators/nn/conv_pool_op_base.h"

namespace halfcaf {

enum class ConvFusionType { kNone = 0, kRelu = 1, kSum = 2, kSumRelu = 3 };

// Reads and checks fusion_type and the input count; `label` names the op in errors.
ConvFusionType ReadConvFusionType(const OperatorDef& def, const std::string& label);
inline bool FusesSum(ConvFusionType t) {
  return t == ConvFusionType::kSum || t == ConvFusionType::kSumRelu;
}
inline bool FusesRelu(ConvFusionType t) {
  return t == ConvFusionType::kRelu || t == ConvFusionType::kSumRelu;
}
// Number of conv inputs (X, filter[, bias]) of a ConvFusion def: the inputs before S.
int ConvFusionConvInputs(const OperatorDef& def, ConvFusionType t);

// The default CPU implementation: the best available Conv for (X, filter[, bias]) into Y, then
// the sum and relu over Y (float and float16, like Conv).
class ConvFusionOp final : public ConvPoolOpBase<CPUContext> {
 public:
  ConvFusionOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  ConvFusionType type_;
  std::unique_ptr<OperatorBase> conv_;
  std::vector<float> s_copy_, s_, y_;
};

}  // namespace halfcaf
