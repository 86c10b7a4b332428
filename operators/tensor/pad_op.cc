#include "operators/tensor/pad_op.h"

#include <algorithm>

#include "core/checked_math.h"
#include "core/float_io.h"
#include "core/gradient.h"

namespace halfcaf {

namespace {

PadMode ParsePadMode(const std::string& s, const std::string& op) {
  if (s == "constant") return PadMode::kConstant;
  if (s == "reflect") return PadMode::kReflect;
  if (s == "edge") return PadMode::kEdge;
  HALFCAF_THROW(op, ": unknown mode '", s, "' (expected \"constant\", \"reflect\" or \"edge\")");
}

// The mode's limits on one padded dim of `size` elements.
void CheckPadsFit(const PadImageArgs& a, const char* dim_name, int64_t size, int64_t head,
                  int64_t tail) {
  if (a.mode == PadMode::kReflect) {
    HALFCAF_ENFORCE(head < size && tail < size, a.op,
                    ": reflect pads must be smaller than the "
                    "dim they mirror, got pads ",
                    head, " and ", tail, " for ", dim_name, " ", size);
  } else if (a.mode == PadMode::kEdge) {
    HALFCAF_ENFORCE(size > 0 || (head == 0 && tail == 0), a.op, ": edge pads need a non-empty ",
                    dim_name, " to repeat, got ", dim_name, " 0 with pads ", head, " and ", tail);
  }
}

// Padded position p of a dim of `size` elements with `head` leading pads: the position it copies,
// or -1 for the constant border.
int64_t PadSource(PadMode mode, int64_t p, int64_t head, int64_t size) {
  const int64_t i = p - head;
  switch (mode) {
    case PadMode::kConstant:
      return i >= 0 && i < size ? i : -1;
    case PadMode::kEdge:
      return std::min(std::max<int64_t>(i, 0), size - 1);
    case PadMode::kReflect: {
      const int64_t m = i < 0 ? -i : i;
      return std::min(m, 2 * (size - 1) - m);
    }
  }
  return -1;
}

PadImageGeometry MakeGeometry(const PadImageArgs& a, const std::vector<int64_t>& dims,
                              bool dims_are_padded, const char* what) {
  HALFCAF_ENFORCE(dims.size() == 4, a.op, ": ", what, " must be 4-D (", StorageOrderName(a.order),
                  "), got dims ", DimsString(dims));
  const bool nchw = a.order == StorageOrder::NCHW;
  const int hd = nchw ? 2 : 1;
  PadImageGeometry g;
  g.channels = nchw ? 1 : dims[3];
  g.outer = nchw ? dims[0] * dims[1] : dims[0];
  const int64_t grow_h = a.pad_t + a.pad_b, grow_w = a.pad_l + a.pad_r;
  if (dims_are_padded) {
    HALFCAF_ENFORCE(dims[hd] >= grow_h && dims[hd + 1] >= grow_w, a.op, ": ", what, " ",
                    DimsString(dims), " is smaller than the pads (t ", a.pad_t, ", l ", a.pad_l,
                    ", b ", a.pad_b, ", r ", a.pad_r, ")");
    g.height = dims[hd] - grow_h;
    g.width = dims[hd + 1] - grow_w;
  } else {
    g.height = dims[hd];
    g.width = dims[hd + 1];
  }
  g.out_height = CheckedAdd(g.height, grow_h, a.op, ": padded height");
  g.out_width = CheckedAdd(g.width, grow_w, a.op, ": padded width");
  CheckPadsFit(a, "height", g.height, a.pad_t, a.pad_b);
  CheckPadsFit(a, "width", g.width, a.pad_l, a.pad_r);
  g.x_dims = g.y_dims = dims;
  g.x_dims[hd] = g.height;
  g.x_dims[hd + 1] = g.width;
  g.y_dims[hd] = g.out_height;
  g.y_dims[hd + 1] = g.out_width;
  CheckedNumel(g.y_dims, a.op, ": Y");
  return g;
}

}  // namespace

PadImageArgs ParsePadImageArgs(const OperatorDef& def) {
  // The conv / pool parser wants a kernel; PadImage has none, so a unit one stands in.
  OperatorDef with_kernel = def;
  const ArgumentHelper given(def);
  if (!given.HasArgument("kernel") && !given.HasArgument("kernels") &&
      !given.HasArgument("kernel_h") && !given.HasArgument("kernel_w")) {
    SetArgument(&with_kernel, "kernel", 1);
  }
  const ConvPoolArgs cp = ParseConvPoolArgs(with_kernel, ConvPoolKind::kConv);
  PadImageArgs a;
  a.op = cp.op_label;
  a.order = cp.order;
  HALFCAF_ENFORCE(cp.num_spatial_dims() == 2, a.op,
                  ": PadImage pads 2-D images, but the "
                  "arguments describe ",
                  cp.num_spatial_dims(), " spatial dims");
  for (int d = 0; d < 2; ++d) {
    HALFCAF_ENFORCE(cp.stride[d] == 1 && cp.dilation[d] == 1, a.op,
                    ": stride and dilation must be 1, got strides ", DimsString(cp.stride),
                    " and dilations ", DimsString(cp.dilation));
  }
  HALFCAF_ENFORCE(cp.legacy_pad == LegacyPadding::NOTSET, a.op,
                  ": only explicit pads are supported, got legacy_pad ",
                  LegacyPaddingName(cp.legacy_pad));
  a.pad_t = cp.pads[0];
  a.pad_l = cp.pads[1];
  a.pad_b = cp.pads[2];
  a.pad_r = cp.pads[3];
  a.mode = ParsePadMode(given.GetSingleArgument<std::string>("mode", "constant"), a.op);
  a.value = given.GetSingleArgument<float>("value", 0.f);
  return a;
}

PadImageGeometry PadGeometryFromInput(const PadImageArgs& a, const std::vector<int64_t>& x_dims) {
  return MakeGeometry(a, x_dims, false, "X");
}

PadImageGeometry PadGeometryFromOutput(const PadImageArgs& a, const std::vector<int64_t>& y_dims) {
  return MakeGeometry(a, y_dims, true, "dY");
}

template <bool kGradient>
PadImageOp<kGradient>::PadImageOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), args_pad_(ParsePadImageArgs(def)) {}

template <bool kGradient>
void PadImageOp<kGradient>::RunOnDevice() {
  const Tensor& in = Input(0);
  EnforceFloatType(in, kGradient ? "dY" : "X");
  const PadImageArgs& a = args_pad_;
  const PadImageGeometry g =
      kGradient ? PadGeometryFromOutput(a, in.dims()) : PadGeometryFromInput(a, in.dims());
  src_h_.resize(static_cast<size_t>(g.out_height));
  src_w_.resize(static_cast<size_t>(g.out_width));
  for (int64_t p = 0; p < g.out_height; ++p) src_h_[p] = PadSource(a.mode, p, a.pad_t, g.height);
  for (int64_t p = 0; p < g.out_width; ++p) src_w_[p] = PadSource(a.mode, p, a.pad_l, g.width);
  const float* src = ReadAsFloat(in, &in_);
  const DataType dtype = in.dtype();
  Tensor* out = Output(0, kGradient ? g.x_dims : g.y_dims);
  FloatWriter w(out, dtype, &out_);
  float* dst = w.data();
  const int64_t C = g.channels;
  if (kGradient) std::fill_n(dst, out->numel(), 0.f);
  for (int64_t o = 0; o < g.outer; ++o) {
    for (int64_t ph = 0; ph < g.out_height; ++ph) {
      for (int64_t pw = 0; pw < g.out_width; ++pw) {
        const int64_t h = src_h_[ph], x = src_w_[pw];
        const int64_t padded = ((o * g.out_height + ph) * g.out_width + pw) * C;
        const int64_t inner = ((o * g.height + h) * g.width + x) * C;
        const bool border = h < 0 || x < 0;
        for (int64_t c = 0; c < C; ++c) {
          if (kGradient) {
            if (!border) dst[inner + c] += src[padded + c];
          } else {
            dst[padded + c] = border ? a.value : src[inner + c];
          }
        }
      }
    }
  }
  w.Commit();
}

template class PadImageOp<false>;
template class PadImageOp<true>;

namespace {

class GetPadImageGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("PadImageGradient", {GO(0)}, {GI(0)});
  }
};

template <bool kGradient>
std::vector<TensorShape> PadShape(const OperatorDef& def, const std::vector<TensorShape>& in) {
  const PadImageArgs a = ParsePadImageArgs(def);
  const PadImageGeometry g =
      kGradient ? PadGeometryFromOutput(a, in[0].dims) : PadGeometryFromInput(a, in[0].dims);
  return {TensorShape{kGradient ? g.x_dims : g.y_dims, in[0].dtype}};
}

template <bool kGradient>
OpCost PadCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  OpCost c;
  const double item = static_cast<double>(DataTypeSize(in.at(0).dtype));
  const double out = static_cast<double>(PadShape<kGradient>(def, in)[0].numel());
  c.flops = kGradient ? static_cast<double>(in[0].numel()) : 0.0;
  c.bytes_read = static_cast<double>(in[0].numel()) * item;
  c.bytes_written = out * item;
  return c;
}

}  // namespace

REGISTER_CPU_OPERATOR(PadImage, PadImageOp<false>);
REGISTER_CPU_OPERATOR(PadImageGradient, PadImageOp<true>);
REGISTER_GRADIENT(PadImage, GetPadImageGradient);

OPERATOR_SCHEMA(PadImage)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction(PadShape<false>)
    .CostInferenceFunction(PadCost<false>)
    .SetDoc(
        "Pads the height and width of a 4-D image batch (NCHW or NHWC, `order`). The pads "
        "are given as for conv / pool: pads [t, l, b, r], pad, or pad_t, pad_l, pad_b, "
        "pad_r. mode \"constant\" fills the border with `value`; \"reflect\" mirrors the "
        "image around its edge without repeating the edge (each pad at most dim - 1); "
        "\"edge\" repeats the edge. stride and dilation must be 1 and legacy_pad unset; a "
        "kernel argument is ignored. Float and float16. Gradient: PadImageGradient.")
    .Arg("pads", "ints [t, l, b, r] (or pad, or pad_t/pad_l/pad_b/pad_r), each >= 0")
    .Arg("mode", "string, default \"constant\": constant, reflect or edge")
    .Arg("value", "float, default 0: the border value in constant mode")
    .Arg("order", "string, default \"NCHW\": NCHW or NHWC")
    .Input(0, "X", "(N, C, H, W) or (N, H, W, C)")
    .Output(0, "Y", "(N, C, H + t + b, W + l + r) or (N, H + t + b, W + l + r, C)");

OPERATOR_SCHEMA(PadImageGradient)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction(PadShape<true>)
    .CostInferenceFunction(PadCost<true>)
    .SetDoc(
        "Gradient of PadImage: every element of dX is the sum of dY over the padded "
        "elements that copied it (in constant mode only the interior of dY). Same "
        "arguments as the forward op.")
    .Arg("pads", "ints [t, l, b, r] (or pad, or pad_t/pad_l/pad_b/pad_r): the forward pads")
    .Arg("mode", "string, default \"constant\": the forward mode")
    .Arg("order", "string, default \"NCHW\": NCHW or NHWC")
    .Input(0, "dY", "gradient of the padded output")
    .Output(0, "dX", "gradient of the image");

}  // namespace halfcaf
