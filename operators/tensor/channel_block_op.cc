// NCHW2NCHWc and NCHWc2NCHW: the channel-blocked layout oneDNN's FP32
// convolution and batch normalization kernels compute in (nChw16c on AVX-512,
// nChw8c on AVX2), as a halfcaf tensor. A blocked tensor is 5-D, (N, C / B, H,
// W, B): channel c of pixel (h, w) of image n is at [n][c / B][h][w][c % B].
// Element-wise ops work on it as on any tensor; Conv, ConvGradient, SpatialBN
// and SpatialBNGradient read and write it with the argument `channel_block` = B
// (DNNL engine). The training pipeline's blocked-layout rewrite
// (models/channels_last.h) puts these two ops where a blocked activation meets
// an op that wants NCHW. Elements are moved as raw bytes: any data type.
//
// NCHW2NCHWc: X (N, C, H, W) -> Y (N, C / B, H, W, B), argument `block` = B (C
// a multiple of B). NCHWc2NCHW: X (N, C / B, H, W, B) -> Y (N, C, H, W);
// argument `block` = B (checked against
//   X's last dim; the gradient NCHW2NCHWc needs it). Each is the other's
//   gradient.
#include "core/gradient.h"
#include "core/op_schema.h"
#include "core/operator.h"
#include "operators/nn/channel_block.h"
#include "operators/tensor/transpose_op.h"

namespace halfcaf {

namespace {

int64_t ReadBlock(const OperatorBase& op) {
  const int64_t block = op.GetSingleArgument<int64_t>("block", 0);
  HALFCAF_ENFORCE(block > 0, op.type(),
                  ": argument 'block' (channels per block) must be "
                  "positive, got ",
                  block);
  return block;
}

class NCHW2NCHWcOp final : public Operator<CPUContext> {
 public:
  NCHW2NCHWcOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), block_(ReadBlock(*this)) {}
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const std::vector<int64_t> out = BlockedDimsOf(X.dims(), block_, type(), "X");
    // (N, C / B, B, H, W) with the B axis moved last.
    const std::vector<int64_t> split = {out[0], out[1], block_, out[2], out[3]};
    Tensor* Y = Output(0, out);
    TransposeBytes(split, {0, 1, 3, 4, 2}, DataTypeSize(X.dtype()), X.raw_data(),
                   Y->raw_mutable_data(X.dtype()));
  }

 private:
  int64_t block_;
};

class NCHWc2NCHWOp final : public Operator<CPUContext> {
 public:
  NCHWc2NCHWOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), block_(ReadBlock(*this)) {}
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const std::vector<int64_t> out = UnblockedDims(X.dims(), block_, type(), "X");
    Tensor* Y = Output(0, out);
    // (N, C / B, H, W, B) -> (N, C / B, B, H, W), which is (N, C, H, W).
    TransposeBytes(X.dims(), {0, 1, 4, 2, 3}, DataTypeSize(X.dtype()), X.raw_data(),
                   Y->raw_mutable_data(X.dtype()));
  }

 private:
  int64_t block_;
};

class GetNCHW2NCHWcGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;  // `block` is copied
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("NCHWc2NCHW", {GO(0)}, {GI(0)});
  }
};

class GetNCHWc2NCHWGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;  // `block` is copied
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("NCHW2NCHWc", {GO(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(NCHW2NCHWc, NCHW2NCHWcOp);
REGISTER_CPU_OPERATOR(NCHWc2NCHW, NCHWc2NCHWOp);
REGISTER_GRADIENT(NCHW2NCHWc, GetNCHW2NCHWcGradient);
REGISTER_GRADIENT(NCHWc2NCHW, GetNCHWc2NCHWGradient);

OPERATOR_SCHEMA(NCHW2NCHWc)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      const int64_t block = ArgumentHelper(def).GetSingleArgument<int64_t>("block", 0);
      HALFCAF_ENFORCE(block > 0, "NCHW2NCHWc: argument 'block' must be positive");
      return std::vector<TensorShape>{
          {BlockedDimsOf(in[0].dims, block, "NCHW2NCHWc", "X"), in[0].dtype}};
    })
    .CostInferenceFunction(ElementMoveCost)
    .SetDoc(
        "Channel-blocked layout: (N, C, H, W) -> (N, C / block, H, W, "
        "block), channel c at "
        "[n][c / block][h][w][c % block] (oneDNN's nChw16c for block 16). "
        "Any data type. "
        "Gradient: NCHWc2NCHW.")
    .Arg("block", "int: channels per block (C must be a multiple)")
    .Input(0, "X", "(N, C, H, W)")
    .Output(0, "Y", "(N, C / block, H, W, block)");

OPERATOR_SCHEMA(NCHWc2NCHW)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      const int64_t block = ArgumentHelper(def).GetSingleArgument<int64_t>("block", 0);
      return std::vector<TensorShape>{
          {UnblockedDims(in[0].dims, block, "NCHWc2NCHW", "X"), in[0].dtype}};
    })
    .CostInferenceFunction(ElementMoveCost)
    .SetDoc(
        "Back from the channel-blocked layout: (N, C / B, H, W, B) -> (N, "
        "C, H, W). Any data "
        "type. Gradient: NCHW2NCHWc.")
    .Arg("block", "int: channels per block, X's last dim")
    .Input(0, "X", "(N, C / B, H, W, B)")
    .Output(0, "Y", "(N, C, H, W)");

}  // namespace halfcaf
