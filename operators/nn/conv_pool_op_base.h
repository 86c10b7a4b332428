// Arguments and output geometry shared by convolution and pooling (Caffe2's conv/pool argument
// set):
//   kernels | kernel | kernel_h+kernel_w          spatial kernel size (required unless
//                                                  global_pooling)
//   strides | stride | stride_h+stride_w          default 1
//   dilations | dilation | dilation_h+dilation_w  default 1
//   pads (heads then tails) | pad | pad_t+pad_l+pad_b+pad_r   default 0
//   legacy_pad (0 NOTSET, 1 VALID, 2 SAME, 3 CAFFE_LEGACY_POOLING), global_pooling, group,
//   order ("NCHW" / "NHWC", any case); convolutions also filter_order (halfcaf's; default:
//   order): the layout of the filter, (M, C/group, kH, kW) for NCHW, (M, kH, kW, C/group) for
//   NHWC, so an NHWC convolution can take an NCHW filter as it is (2-D only).
// A plural list and its singular forms must not be given together; the _h/_w (and
// _t/_l/_b/_r) forms must be given as a complete set.
//
// Parsing validates everything that does not depend on the input (ParseConvPoolArgs);
// ComputeConvPoolGeometry then derives pads and output sizes for a given input shape. Both are
// plain functions so schemas (shape and cost inference) use exactly the operators' rules.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/op_schema.h"
#include "core/operator.h"

namespace halfcaf {

enum class StorageOrder { NCHW, NHWC };
// "NCHW" / "NHWC" in any case; anything else throws, naming `op_label` and the value.
StorageOrder StringToStorageOrder(const std::string& s, const std::string& op_label);
const char* StorageOrderName(StorageOrder order);

enum class LegacyPadding { NOTSET = 0, VALID = 1, SAME = 2, CAFFE_LEGACY_POOLING = 3 };
const char* LegacyPaddingName(LegacyPadding p);

enum class ConvPoolKind { kConv, kPool };

struct ConvPoolArgs {
  std::string op_label;  // "Conv 'conv1'", used in every error message
  ConvPoolKind kind = ConvPoolKind::kConv;
  StorageOrder order = StorageOrder::NCHW;
  StorageOrder filter_order = StorageOrder::NCHW;  // convolutions: the filter's layout
  LegacyPadding legacy_pad = LegacyPadding::NOTSET;
  bool global_pooling = false;
  int group = 1;
  // One entry per spatial dim (empty kernel when global_pooling: taken from the input).
  std::vector<int64_t> kernel, stride, dilation;
  std::vector<int64_t> pads;  // 2 * nd: all heads, then all tails (2-D: t, l, b, r)
  // From the arguments; with global_pooling the geometry takes it from the input instead.
  int num_spatial_dims() const { return static_cast<int>(stride.size()); }
};

// Reads and validates the arguments of a conv (kind kConv) or pool (kPool) operator.
ConvPoolArgs ParseConvPoolArgs(const ArgumentHelper& args, ConvPoolKind kind,
                               const std::string& op_label);
// Same, for an OperatorDef (schemas).
ConvPoolArgs ParseConvPoolArgs(const OperatorDef& def, ConvPoolKind kind);

// One spatial dim: the pads actually used and the output size, following legacy_pad
// (dk = dilation * (kernel - 1) + 1):
//   NOTSET: pads as given;            out = floor((in + head + tail - dk) / stride) + 1
//   VALID:  pads 0;                   out = floor((in - dk) / stride) + 1
//   SAME:   pads fill up to the need (extra one on the tail); out = ceil(in / stride)
//   CAFFE_LEGACY_POOLING: head as given, tail derived; out = ceil((in + 2 head - k) / stride) + 1,
//           minus 1 when head > 0 and the last window would start at or past in + head.
// Throws (prefixing `where`) when the input is smaller than the dilated kernel.
int64_t ComputeSizeAndPad(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                          LegacyPadding legacy_pad, int64_t* pad_head, int64_t* pad_tail,
                          const std::string& where = "");

// Geometry of one conv/pool application on a concrete input (2-D and other ranks).
struct ConvPoolGeometry {
  int64_t N = 0, C = 0;
  std::vector<int64_t> in;  // input spatial sizes
  std::vector<int64_t> kernel, stride, dilation;
  std::vector<int64_t> pads;  // effective pads: heads then tails
  std::vector<int64_t> out;   // output spatial sizes
  int num_spatial_dims() const { return static_cast<int>(in.size()); }
  int64_t in_size() const;   // product of in
  int64_t out_size() const;  // product of out
  int64_t kernel_size() const;
  int64_t pad_head(int d) const { return pads[d]; }
  int64_t pad_tail(int d) const { return pads[in.size() + d]; }
  // Output dims with `channels` channels in `order`.
  std::vector<int64_t> OutputDims(int64_t channels, StorageOrder order) const;
};

// Throws unless x_dims has the rank the arguments imply (2 + nd). With global_pooling the rank
// comes from x_dims instead (any number >= 1 of spatial dims; NHWC: 2 only).
ConvPoolGeometry ComputeConvPoolGeometry(const ConvPoolArgs& args,
                                         const std::vector<int64_t>& x_dims);

// The same geometry with `count` unit spatial dims in front (size 1, kernel 1, stride 1,
// dilation 1, no pads): e.g. a 1-D problem as a 2-D one for libraries that start at 2-D (cuDNN).
ConvPoolGeometry WithLeadingUnitDims(const ConvPoolGeometry& g, int count);

// Base for conv/pool operators: parses and validates the arguments once, in the constructor.
template <class Context>
class ConvPoolOpBase : public Operator<Context> {
 public:
  ConvPoolOpBase(const OperatorDef& def, Workspace* ws, ConvPoolKind kind)
      : Operator<Context>(def, ws), cp_(ParseConvPoolArgs(this->args_, kind, this->DebugName())) {}

 protected:
  ConvPoolGeometry Geometry(const std::vector<int64_t>& x_dims) const {
    return ComputeConvPoolGeometry(cp_, x_dims);
  }
  ConvPoolArgs cp_;
};

// Schema helpers.
// Conv: inputs (X, filter[, bias]) -> Y with M = filter.dim(0) channels.
std::vector<TensorShape> ConvShapeInference(const OperatorDef& def,
                                            const std::vector<TensorShape>& in);
// Pool: input X -> Y with X's channels.
std::vector<TensorShape> PoolShapeInference(const OperatorDef& def,
                                            const std::vector<TensorShape>& in);
// Conv: 2 * N * M * prod(out) * (C / group) * prod(kernel) FLOPs.
OpCost ConvCost(const OperatorDef& def, const std::vector<TensorShape>& in);
// Pool: one operation per window element per output.
OpCost PoolCost(const OperatorDef& def, const std::vector<TensorShape>& in);

}  // namespace halfcaf
