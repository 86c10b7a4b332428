#include "operators/nn/resize_op.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/operator.h"
#include "operators/cpu_parallel.h"

namespace halfcaf {

namespace {

std::string Lower(const std::string& s) {
  std::string v(s);
  for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v;
}

ResizeCoordinates ParseCoordinates(const std::string& s, ResizeKind kind,
                                   const std::string& label) {
  const std::string v = Lower(s);
  if (v == "align_corners") return ResizeCoordinates::kAlignCorners;
  if (v == "half_pixel") return ResizeCoordinates::kHalfPixel;
  if (v == "pytorch_half_pixel") return ResizeCoordinates::kPytorchHalfPixel;
  if (v == "asymmetric") return ResizeCoordinates::kAsymmetric;
  if (v == "tf_half_pixel_for_nn" && kind == ResizeKind::kNearest) {
    return ResizeCoordinates::kTfHalfPixelForNN;
  }
  HALFCAF_THROW(label, ": unknown coordinate_transformation_mode '", s,
                "' (expected align_corners, half_pixel, pytorch_half_pixel, asymmetric",
                kind == ResizeKind::kNearest ? " or tf_half_pixel_for_nn)" : ")");
}

NearestMode ParseNearestMode(const std::string& s, const std::string& label) {
  const std::string v = Lower(s);
  if (v == "floor") return NearestMode::kFloor;
  if (v == "ceil") return NearestMode::kCeil;
  if (v == "round_prefer_floor") return NearestMode::kRoundPreferFloor;
  if (v == "round_prefer_ceil") return NearestMode::kRoundPreferCeil;
  HALFCAF_THROW(label, ": unknown nearest_mode '", s,
                "' (expected floor, ceil, round_prefer_floor or round_prefer_ceil)");
}

// src rounded to an index by `mode`: floor, ceil, or to the nearest integer with halves going
// down (round_prefer_floor) or up (round_prefer_ceil).
double RoundSource(double src, NearestMode mode) {
  const double down = std::floor(src), frac = src - down;
  switch (mode) {
    case NearestMode::kFloor: return down;
    case NearestMode::kCeil: return std::ceil(src);
    case NearestMode::kRoundPreferFloor: return frac <= 0.5 ? down : down + 1;
    case NearestMode::kRoundPreferCeil: return frac < 0.5 ? down : down + 1;
  }
  return down;
}

void CheckScale(float scale, const char* name, const std::string& label) {
  HALFCAF_ENFORCE(scale > 0.f && scale < 1e30f, label, ": ", name,
                  " must be a positive finite number, got ", scale);
}

}  // namespace

ResizeArgs ParseResizeArgs(const ArgumentHelper& args, ResizeKind kind,
                           const std::string& op_label) {
  ResizeArgs a;
  a.op_label = op_label;
  a.kind = kind;
  a.height_scale = args.GetSingleArgument<float>("height_scale", 1.f);
  a.width_scale = args.GetSingleArgument<float>("width_scale", 1.f);
  CheckScale(a.height_scale, "height_scale", op_label);
  CheckScale(a.width_scale, "width_scale", op_label);
  a.order = StringToStorageOrder(args.GetSingleArgument<std::string>("order", "NCHW"), op_label);
  const bool nearest = kind == ResizeKind::kNearest;
  a.coordinates = ParseCoordinates(args.GetSingleArgument<std::string>(
                                       "coordinate_transformation_mode",
                                       nearest ? "asymmetric" : "align_corners"),
                                   kind, op_label);
  if (nearest) {
    a.nearest_mode =
        ParseNearestMode(args.GetSingleArgument<std::string>("nearest_mode", "floor"), op_label);
  } else {
    HALFCAF_ENFORCE(!args.HasArgument("nearest_mode"), op_label,
                    ": nearest_mode applies to ResizeNearest only");
  }
  return a;
}

void SetScalesFromInput(ResizeArgs* a, const Tensor& scales) {
  HALFCAF_ENFORCE(scales.dtype() == DataType::FLOAT && scales.ndim() == 1 && scales.numel() == 2,
                  a->op_label,
                  ": the scales input must be a 1-D float tensor [height_scale, width_scale], got ",
                  scales.DebugString());
  a->height_scale = scales.data<float>()[0];
  a->width_scale = scales.data<float>()[1];
  CheckScale(a->height_scale, "scales[0] (height_scale)", a->op_label);
  CheckScale(a->width_scale, "scales[1] (width_scale)", a->op_label);
}

std::vector<int64_t> ResizeGeometry::YDims() const {
  return nhwc ? std::vector<int64_t>{N, OH, OW, C} : std::vector<int64_t>{N, C, OH, OW};
}

ResizeGeometry ComputeResizeGeometry(const ResizeArgs& a, const std::vector<int64_t>& x) {
  const bool nhwc = a.order == StorageOrder::NHWC;
  HALFCAF_ENFORCE(x.size() == 4, a.op_label, ": X must be 4-D ",
                  nhwc ? "(N, H, W, C)" : "(N, C, H, W)", ", got ", DimsString(x));
  ResizeGeometry g;
  g.nhwc = nhwc;
  g.N = x[0];
  g.C = nhwc ? x[3] : x[1];
  g.H = nhwc ? x[1] : x[2];
  g.W = nhwc ? x[2] : x[3];
  // As Caffe2: the product in float, truncated.
  const float oh = static_cast<float>(g.H) * a.height_scale;
  const float ow = static_cast<float>(g.W) * a.width_scale;
  HALFCAF_ENFORCE(oh < 9e15f && ow < 9e15f, a.op_label, ": output size ", oh, " x ", ow,
                  " is too large");
  g.OH = static_cast<int64_t>(oh);
  g.OW = static_cast<int64_t>(ow);
  return g;
}

void CheckResizeGradientDY(const ResizeArgs& a, const ResizeGeometry& g,
                           const std::vector<int64_t>& dy) {
  HALFCAF_ENFORCE(dy == g.YDims(), a.op_label, ": dY has dims ", DimsString(dy),
                  " but resizing X by (height_scale ", a.height_scale, ", width_scale ",
                  a.width_scale, ") gives ", DimsString(g.YDims()));
}

int64_t NearestSourceIndex(const ResizeArgs& a, int64_t o, int64_t in, int64_t out, float scale) {
  if (a.coordinates == ResizeCoordinates::kAsymmetric && a.nearest_mode == NearestMode::kFloor) {
    // Caffe2's (int)(o / scale) in float, limited to the last row.
    return std::min(static_cast<int64_t>(static_cast<float>(o) / scale), in - 1);
  }
  const double od = static_cast<double>(o), s = scale;
  double src = 0.0;
  switch (a.coordinates) {
    case ResizeCoordinates::kAlignCorners:
      src = out > 1 ? od * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
      break;
    case ResizeCoordinates::kHalfPixel: src = (od + 0.5) / s - 0.5; break;
    case ResizeCoordinates::kPytorchHalfPixel: src = out > 1 ? (od + 0.5) / s - 0.5 : 0.0; break;
    case ResizeCoordinates::kAsymmetric: src = od / s; break;
    case ResizeCoordinates::kTfHalfPixelForNN: src = (od + 0.5) / s; break;
  }
  const double i = RoundSource(src, a.nearest_mode);
  return i <= 0.0 ? 0 : i >= static_cast<double>(in - 1) ? in - 1 : static_cast<int64_t>(i);
}

ResizeTaps MakeResizeTaps(const ResizeArgs& a, int64_t in, int64_t out, float scale) {
  ResizeTaps t;
  t.i0.resize(out);
  t.i1.resize(out);
  t.l0.resize(out);
  t.l1.resize(out);
  if (in == 0) {  // nothing to read (then out is 0 too)
    return t;
  }
  const float rmax = static_cast<float>(in - 1);
  // Caffe2's UpsampleBilinear ratio, in float.
  const float ratio = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.f;
  for (int64_t o = 0; o < out; ++o) {
    const float of = static_cast<float>(o);
    if (a.kind == ResizeKind::kNearest) {
      t.i0[o] = t.i1[o] = NearestSourceIndex(a, o, in, out, scale);
      t.l0[o] = 1.f;
      t.l1[o] = 0.f;
      continue;
    }
    float src = 0.f;
    switch (a.coordinates) {
      case ResizeCoordinates::kAlignCorners: src = ratio * of; break;
      case ResizeCoordinates::kHalfPixel: src = (of + 0.5f) / scale - 0.5f; break;
      case ResizeCoordinates::kPytorchHalfPixel:
        src = out > 1 ? (of + 0.5f) / scale - 0.5f : 0.f;
        break;
      case ResizeCoordinates::kAsymmetric: src = of / scale; break;
      case ResizeCoordinates::kTfHalfPixelForNN:  // refused for bilinear by ParseResizeArgs
        HALFCAF_THROW(a.op_label, ": tf_half_pixel_for_nn is for ResizeNearest only");
    }
    src = std::min(std::max(src, 0.f), rmax);
    const int64_t i0 = static_cast<int64_t>(src);
    t.i0[o] = i0;
    t.i1[o] = i0 + (i0 < in - 1 ? 1 : 0);
    t.l1[o] = src - static_cast<float>(i0);
    t.l0[o] = 1.f - t.l1[o];
  }
  return t;
}

ResizeGather MakeResizeGather(const ResizeTaps& taps, int64_t in, bool nearest) {
  ResizeGather g;
  const int64_t out = static_cast<int64_t>(taps.i0.size());
  std::vector<std::vector<std::pair<int64_t, float>>> lists(static_cast<size_t>(in));
  for (int64_t o = 0; o < out; ++o) {
    if (nearest) {
      lists[taps.i0[o]].push_back({o, 1.f});
      continue;
    }
    if (taps.l0[o] != 0.f) lists[taps.i0[o]].push_back({o, taps.l0[o]});
    if (taps.l1[o] != 0.f) lists[taps.i1[o]].push_back({o, taps.l1[o]});
  }
  g.offsets.push_back(0);
  for (const auto& list : lists) {
    for (const auto& e : list) {
      g.out.push_back(e.first);
      g.weight.push_back(e.second);
    }
    g.offsets.push_back(static_cast<int64_t>(g.out.size()));
  }
  return g;
}

namespace {

// Plane p (the pair n = p / C, c = p % C) of an (H, W) batch in g's layout: where it starts and the
// step between its pixels, so that pixel (h, w) is at start + (h * W + w) * step.
struct Plane {
  int64_t start, step;
};
Plane PlaneOf(const ResizeGeometry& g, int64_t p, int64_t H, int64_t W) {
  return g.nhwc ? Plane{(p / g.C) * H * W * g.C + p % g.C, g.C} : Plane{p * H * W, 1};
}

template <ResizeKind kKind>
class ResizeOpBase : public Operator<CPUContext> {
 public:
  ResizeOpBase(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), a_(ParseResizeArgs(args_, kKind, DebugName())) {}

 protected:
  // The arguments of this run: the scales from input `scales_input` when it is given.
  ResizeArgs RunArgs(int scales_input) const {
    ResizeArgs a = a_;
    if (InputSize() > scales_input) SetScalesFromInput(&a, Input(scales_input));
    return a;
  }

  ResizeArgs a_;
};

template <ResizeKind kKind>
class ResizeOp final : public ResizeOpBase<kKind> {
 public:
  using ResizeOpBase<kKind>::ResizeOpBase;

  void RunOnDevice() override {
    const Tensor& X = this->Input(0);
    EnforceFloatType(X, "resize input X");
    const ResizeArgs a = this->RunArgs(1);
    const ResizeGeometry g = ComputeResizeGeometry(a, X.dims());
    const ResizeTaps ty = MakeResizeTaps(a, g.H, g.OH, a.height_scale);
    const ResizeTaps tx = MakeResizeTaps(a, g.W, g.OW, a.width_scale);
    const float* x = ReadAsFloat(X, &x_);
    FloatWriter yw(this->Output(0, g.YDims()), X.dtype(), &y_);
    float* y = yw.data();
    ParallelFor(g.N * g.C, 8.0 * g.OH * g.OW, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const Plane in = PlaneOf(g, p, g.H, g.W), out = PlaneOf(g, p, g.OH, g.OW);
        auto at = [&](int64_t h, int64_t w) { return x[in.start + (h * g.W + w) * in.step]; };
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          for (int64_t ow = 0; ow < g.OW; ++ow) {
            float v;
            if (kKind == ResizeKind::kNearest) {
              v = at(ty.i0[oh], tx.i0[ow]);
            } else {
              v = ty.l0[oh] * (tx.l0[ow] * at(ty.i0[oh], tx.i0[ow]) +
                               tx.l1[ow] * at(ty.i0[oh], tx.i1[ow])) +
                  ty.l1[oh] *
                      (tx.l0[ow] * at(ty.i1[oh], tx.i0[ow]) + tx.l1[ow] * at(ty.i1[oh], tx.i1[ow]));
            }
            y[out.start + (oh * g.OW + ow) * out.step] = v;
          }
        }
      }
    });
    yw.Commit();
  }

 private:
  std::vector<float> x_, y_;
};

template <ResizeKind kKind>
class ResizeGradientOp final : public ResizeOpBase<kKind> {
 public:
  using ResizeOpBase<kKind>::ResizeOpBase;

  void RunOnDevice() override {
    const Tensor& dY = this->Input(0);
    const Tensor& X = this->Input(1);
    EnforceFloatType(dY, "resize gradient dY");
    EnforceFloatType(X, "resize gradient X");
    const ResizeArgs a = this->RunArgs(2);
    const ResizeGeometry g = ComputeResizeGeometry(a, X.dims());
    CheckResizeGradientDY(a, g, dY.dims());
    const bool nearest = kKind == ResizeKind::kNearest;
    const ResizeGather gy =
        MakeResizeGather(MakeResizeTaps(a, g.H, g.OH, a.height_scale), g.H, nearest);
    const ResizeGather gx =
        MakeResizeGather(MakeResizeTaps(a, g.W, g.OW, a.width_scale), g.W, nearest);
    const float* dy = ReadAsFloat(dY, &dy_);
    FloatWriter dxw(this->Output(0, X.dims()), X.dtype(), &dx_);
    float* dx = dxw.data();
    ParallelFor(g.N * g.C, 8.0 * g.H * g.W, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const Plane in = PlaneOf(g, p, g.H, g.W), out = PlaneOf(g, p, g.OH, g.OW);
        for (int64_t h = 0; h < g.H; ++h) {
          for (int64_t w = 0; w < g.W; ++w) {
            float acc = 0.f;
            for (int64_t ky = gy.offsets[h]; ky < gy.offsets[h + 1]; ++ky) {
              float row = 0.f;
              for (int64_t kx = gx.offsets[w]; kx < gx.offsets[w + 1]; ++kx) {
                row += gx.weight[kx] * dy[out.start + (gy.out[ky] * g.OW + gx.out[kx]) * out.step];
              }
              acc += gy.weight[ky] * row;
            }
            dx[in.start + (h * g.W + w) * in.step] = acc;
          }
        }
      }
    });
    dxw.Commit();
  }

 private:
  std::vector<float> dy_, dx_;
};

// Caffe2's: (dY, X[, scales]) -> dX.
class GetResizeGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<std::string> in{GO(0), I(0)};
    if (NumInputs() == 2) in.push_back(I(1));
    return SingleGradientDef(def_.type() + "Gradient", in, {GI(0)});
  }
};

std::vector<TensorShape> ResizeShapeInference(const OperatorDef& def,
                                              const std::vector<TensorShape>& in, ResizeKind kind) {
  if (in.size() > 1) return {TensorShape{{}, in[0].dtype, true}};  // scales known at run time
  const ResizeArgs a = ParseResizeArgs(ArgumentHelper(def), kind, def.type());
  return {TensorShape{ComputeResizeGeometry(a, in.at(0).dims).YDims(), in[0].dtype}};
}

OpCost ResizeCost(const std::vector<TensorShape>& in, int64_t out_elems, double flops_per_out) {
  OpCost c;
  const double item = DataTypeSize(in.at(0).dtype);
  c.flops = flops_per_out * static_cast<double>(out_elems);
  c.bytes_read = static_cast<double>(in[0].numel()) * item;
  c.bytes_written = static_cast<double>(out_elems) * item;
  return c;
}

const char* kNearestDoc =
    "Resizes the two spatial dims of a 4-D batch by nearest neighbour (Caffe2's ResizeNearest). "
    "X is (N, C, H, W) in NCHW or (N, H, W, C) in NHWC; Y has OH = floor(H * height_scale) rows "
    "and OW = floor(W * width_scale) columns (the product computed in float). Coordinates (per "
    "dim, input size in, output size out, scale s): by default (Caffe2's) output index o reads "
    "input index min(floor(o / s), in - 1), the quotient computed in float: ONNX's "
    "coordinate_transformation_mode 'asymmetric' with nearest_mode 'floor'. Other values of "
    "these two arguments (halfcaf extensions for ONNX import; Caffe2 has neither) sample the "
    "input at src, computed in double: 'align_corners': o * (in - 1) / (out - 1), 0 when "
    "out == 1; 'half_pixel': (o + 0.5) / s - 0.5; 'pytorch_half_pixel': the same, 0 when "
    "out == 1; 'asymmetric': o / s; 'tf_half_pixel_for_nn': (o + 0.5) / s. nearest_mode rounds "
    "src: 'floor', 'ceil', 'round_prefer_floor' (to the nearest integer, halves down), "
    "'round_prefer_ceil' (halves up); the index is then clamped to [0, in - 1]. The gradient "
    "sends each dY element to the input element its output read. The optional second input (a "
    "1-D float tensor [height_scale, width_scale], on the host) replaces the arguments "
    "(Caffe2's hook for ONNX's dynamic scales). Float and float16 (output dtype of X).";

const char* kBilinearDoc =
    "Resizes the two spatial dims of a 4-D batch by bilinear interpolation: Caffe2's "
    "UpsampleBilinear with ResizeNearest's arguments. X is (N, C, H, W) in NCHW or (N, H, W, C) "
    "in NHWC; Y has OH = floor(H * height_scale) rows and OW = floor(W * width_scale) columns "
    "(the product computed in float). Coordinates (per dim, input size in, output size out, "
    "scale s; ONNX's coordinate_transformation_mode): output index o samples the input at src = "
    "'align_corners' (default, Caffe2's): o * (in - 1) / (out - 1), the ratio rounded to float "
    "first, 0 when out == 1; 'half_pixel': (o + 0.5) / s - 0.5; 'pytorch_half_pixel': the same, "
    "but 0 when out == 1; 'asymmetric': o / s. The scale s is the given one (not out / in). src "
    "is clamped to [0, in - 1] (edge values repeat, as ONNX's linear mode), then Y interpolates "
    "between i0 = floor(src) and i1 = min(i0 + 1, in - 1) with weights 1 - (src - i0) and "
    "src - i0, rows and columns separably. The optional second input (a 1-D float tensor "
    "[height_scale, width_scale], on the host) replaces the arguments. Float and float16 "
    "(output dtype of X). coordinate_transformation_mode is a halfcaf extension for ONNX "
    "import; Caffe2 has align_corners only.";

OpSchema& DescribeResize(OpSchema& s, ResizeKind kind) {
  s.NumInputs(1, 2)
      .NumOutputs(1)
      .TensorInferenceFunction([kind](const OperatorDef& def, const std::vector<TensorShape>& in) {
        return ResizeShapeInference(def, in, kind);
      })
      .CostInferenceFunction([kind](const OperatorDef& def, const std::vector<TensorShape>& in) {
        const auto out = ResizeShapeInference(def, in, kind)[0];
        const int64_t n = out.unknown ? in.at(0).numel() : out.numel();
        return ResizeCost(in, n, kind == ResizeKind::kNearest ? 0.0 : 11.0);
      })
      .SetDoc(kind == ResizeKind::kNearest ? kNearestDoc : kBilinearDoc)
      .Arg("height_scale", "float, default 1 (> 0): OH = floor(H * height_scale)")
      .Arg("width_scale", "float, default 1 (> 0): OW = floor(W * width_scale)")
      .Arg("order", "string, default \"NCHW\": \"NCHW\" or \"NHWC\" (any case)")
      .Input(0, "X", "images, (N, C, H, W) or NHWC (N, H, W, C)")
      .Input(1, "scales", "optional: 1-D float [height_scale, width_scale] on the host")
      .Output(0, "Y", "resized images");
  if (kind == ResizeKind::kBilinear) {
    s.Arg("coordinate_transformation_mode",
          "string, default \"align_corners\": align_corners, half_pixel, pytorch_half_pixel or "
          "asymmetric (see above)");
  } else {
    s.Arg("coordinate_transformation_mode",
          "string, default \"asymmetric\": align_corners, half_pixel, pytorch_half_pixel, "
          "asymmetric or tf_half_pixel_for_nn (see above; a halfcaf extension)")
        .Arg("nearest_mode",
             "string, default \"floor\": floor, ceil, round_prefer_floor or round_prefer_ceil "
             "(see above; a halfcaf extension)");
  }
  return s;
}

OpSchema& DescribeResizeGradient(OpSchema& s, ResizeKind kind) {
  s.NumInputs(2, 3)
      .NumOutputs(1)
      .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
        return std::vector<TensorShape>{in.at(1)};
      })
      .CostInferenceFunction([kind](const OperatorDef&, const std::vector<TensorShape>& in) {
        return ResizeCost(in, in.at(1).numel(), kind == ResizeKind::kNearest ? 1.0 : 8.0);
      })
      .SetDoc(std::string("Gradient of ") +
              (kind == ResizeKind::kNearest ? "ResizeNearest" : "ResizeBilinear") +
              " (Caffe2's signature): inputs (dY, X[, scales]) -> dX with X's shape and dtype. "
              "Each dX element is the sum of the dY elements that read it in the forward op, "
              "times their interpolation weights. Takes the forward op's arguments.")
      .Arg("height_scale", "float, default 1: as the forward op")
      .Arg("width_scale", "float, default 1: as the forward op")
      .Arg("order", "string, default \"NCHW\"")
      .Arg("coordinate_transformation_mode", "string: as the forward op")
      .Input(0, "dY", "gradient of Y")
      .Input(1, "X", "forward input (for its shape)")
      .Input(2, "scales", "optional: as the forward op's second input")
      .Output(0, "dX", "gradient of X");
  if (kind == ResizeKind::kNearest) s.Arg("nearest_mode", "string: as the forward op");
  return s;
}

}  // namespace

using ResizeNearestOp = ResizeOp<ResizeKind::kNearest>;
using ResizeBilinearOp = ResizeOp<ResizeKind::kBilinear>;
using ResizeNearestGradientOp = ResizeGradientOp<ResizeKind::kNearest>;
using ResizeBilinearGradientOp = ResizeGradientOp<ResizeKind::kBilinear>;

REGISTER_CPU_OPERATOR(ResizeNearest, ResizeNearestOp);
REGISTER_CPU_OPERATOR(ResizeBilinear, ResizeBilinearOp);
REGISTER_CPU_OPERATOR(ResizeNearestGradient, ResizeNearestGradientOp);
REGISTER_CPU_OPERATOR(ResizeBilinearGradient, ResizeBilinearGradientOp);
REGISTER_GRADIENT(ResizeNearest, GetResizeGradient);
REGISTER_GRADIENT(ResizeBilinear, GetResizeGradient);

#define HALFCAF_RESIZE_SCHEMA(type, describe, kind)   \
  [[maybe_unused]] static OpSchema& g_schema_##type = \
      describe(OpSchemaRegistry::NewSchema(#type, __FILE__, __LINE__), ResizeKind::kind)
HALFCAF_RESIZE_SCHEMA(ResizeNearest, DescribeResize, kNearest);
HALFCAF_RESIZE_SCHEMA(ResizeBilinear, DescribeResize, kBilinear);
HALFCAF_RESIZE_SCHEMA(ResizeNearestGradient, DescribeResizeGradient, kNearest);
HALFCAF_RESIZE_SCHEMA(ResizeBilinearGradient, DescribeResizeGradient, kBilinear);
#undef HALFCAF_RESIZE_SCHEMA

}  // namespace halfcaf
