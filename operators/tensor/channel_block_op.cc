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

// The `block` argument, checked positive.
int64_t ReadBlock(const ArgumentHelper& args, const std::string& op) {
  const int64_t block = args.GetSingleArgument<int64_t>("block", 0);
  HALFCAF_ENFORCE(block > 0, op, ": argument 'block' (channels per block) must be positive, got ",
                  block);
  return block;
}

// Y's dims: NCHW2NCHWc (to_blocked) or NCHWc2NCHW.
template <bool to_blocked>
std::vector<int64_t> ConvertedDims(const std::vector<int64_t>& x, int64_t block,
                                   const std::string& op) {
  return to_blocked ? BlockedDimsOf(x, block, op, "X") : UnblockedDims(x, block, op, "X");
}

// NCHW is (N, C / B, B, H, W): the block axis moves last, or back to second.
template <bool to_blocked>
class ChannelBlockOp final : public Operator<CPUContext> {
 public:
  ChannelBlockOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), block_(ReadBlock(ArgumentHelper(def), type())) {}
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const std::vector<int64_t> out = ConvertedDims<to_blocked>(X.dims(), block_, type());
    Tensor* Y = Output(0, out);
    if (to_blocked) {
      TransposeBytes({out[0], out[1], block_, out[2], out[3]}, {0, 1, 3, 4, 2},
                     DataTypeSize(X.dtype()), X.raw_data(), Y->raw_mutable_data(X.dtype()));
    } else {
      TransposeBytes(X.dims(), {0, 1, 4, 2, 3}, DataTypeSize(X.dtype()), X.raw_data(),
                     Y->raw_mutable_data(X.dtype()));
    }
  }

 private:
  int64_t block_;
};

// Each is the other's gradient (`block` is copied).
template <bool to_blocked>
class GetChannelBlockGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef(to_blocked ? "NCHWc2NCHW" : "NCHW2NCHWc", {GO(0)}, {GI(0)});
  }
};

template <bool to_blocked>
std::vector<TensorShape> ChannelBlockShape(const OperatorDef& def,
                                           const std::vector<TensorShape>& in) {
  const int64_t block = ReadBlock(ArgumentHelper(def), def.type());
  return {TensorShape{ConvertedDims<to_blocked>(in.at(0).dims, block, def.type()), in[0].dtype}};
}

}  // namespace

REGISTER_CPU_OPERATOR(NCHW2NCHWc, ChannelBlockOp<true>);
REGISTER_CPU_OPERATOR(NCHWc2NCHW, ChannelBlockOp<false>);
REGISTER_GRADIENT(NCHW2NCHWc, GetChannelBlockGradient<true>);
REGISTER_GRADIENT(NCHWc2NCHW, GetChannelBlockGradient<false>);

OPERATOR_SCHEMA(NCHW2NCHWc)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction(ChannelBlockShape<true>)
    .CostInferenceFunction(ElementMoveCost)
    .SetDoc("Channel-blocked layout: (N, C, H, W) -> (N, C / block, H, W, block), channel c at "
            "[n][c / block][h][w][c % block] (oneDNN's nChw16c for block 16). Any data type. "
            "Gradient: NCHWc2NCHW.")
    .Arg("block", "int: channels per block (C must be a multiple)")
    .Input(0, "X", "(N, C, H, W)")
    .Output(0, "Y", "(N, C / block, H, W, block)");

OPERATOR_SCHEMA(NCHWc2NCHW)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction(ChannelBlockShape<false>)
    .CostInferenceFunction(ElementMoveCost)
    .SetDoc("Back from the channel-blocked layout: (N, C / B, H, W, B) -> (N, C, H, W). Any data "
            "type. Gradient: NCHW2NCHWc.")
    .Arg("block", "int: channels per block, X's last dim")
    .Input(0, "X", "(N, C / B, H, W, B)")
    .Output(0, "Y", "(N, C, H, W)");

}  // namespace halfcaf
