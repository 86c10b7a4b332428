// ONNX Resize and Upsample of NCHW images onto ResizeNearest / ResizeBilinear. Only the modes
// whose sampling those ops reproduce are accepted:
// - nearest with every coordinate_transformation_mode but tf_crop_and_resize and every
//   nearest_mode; the pixel each output reads is checked at import against ONNX's definition
//   (its reference computes in double, with the scales given or sizes / dims), and a node whose
//   float scale would pick another pixel is refused;
// - linear with align_corners (whole output lengths), half_pixel, pytorch_half_pixel or
//   asymmetric coordinates.
// Either way the output size must be ONNX's. Cubic and tf_crop_and_resize are not supported.
#include <cmath>
#include <initializer_list>

#include "core/argument.h"
#include "core/strings.h"
#include "onnx/convert_util.h"
#include "operators/nn/resize_op.h"

namespace halfcaf {
namespace onnx_import {
namespace {

// A Resize / Upsample node's scales, as the halfcaf ops take them (float) and as ONNX defines
// them (double: the scales given, or sizes / dims), and ONNX's output dims.
struct OnnxScales {
  std::vector<float> scales;
  std::vector<double> exact;
  std::vector<int64_t> out;
};

// From the scales given: ONNX's output length is floor(dim * scale), the product in double.
OnnxScales FromScales(const std::vector<float>& scales, const std::vector<int64_t>& dims) {
  OnnxScales s;
  s.scales = scales;
  for (size_t i = 0; i < scales.size() && i < dims.size(); ++i) {
    s.exact.push_back(scales[i]);
    s.out.push_back(static_cast<int64_t>(std::floor(static_cast<double>(dims[i]) * scales[i])));
  }
  return s;
}

bool OneOf(const std::string& v, std::initializer_list<const char*> values) {
  for (const char* x : values) {
    if (v == x) return true;
  }
  return false;
}

// The input index that ONNX's reference (onnx/backend/test/case/node/resize.py; opset 11's
// tf_half_pixel_for_nn from the operator's specification) reads for output index o along a dim
// of `in` elements resized by `scale`.
int64_t OnnxNearestIndex(const std::string& coords, const std::string& nearest_mode, int64_t o,
                         int64_t in, double scale) {
  const double x = static_cast<double>(o), length = scale * static_cast<double>(in);
  double src = 0.0;
  if (coords == "align_corners") {
    src = length == 1.0 ? 0.0 : x * static_cast<double>(in - 1) / (length - 1.0);
  } else if (coords == "asymmetric") {
    src = x / scale;
  } else if (coords == "pytorch_half_pixel") {
    src = length == 1.0 ? -0.5 : (x + 0.5) / scale - 0.5;
  } else if (coords == "half_pixel") {
    src = (x + 0.5) / scale - 0.5;
  } else {  // tf_half_pixel_for_nn
    src = (x + 0.5) / scale;
  }
  const double down = std::floor(src), frac = src - down;
  const bool up = frac != 0.0 && (nearest_mode == "ceil" ||
                                  (nearest_mode == "round_prefer_floor" && frac > 0.5) ||
                                  (nearest_mode == "round_prefer_ceil" && frac >= 0.5));
  const double i = up ? down + 1.0 : down;
  return i <= 0.0 ? 0 : i >= static_cast<double>(in - 1) ? in - 1 : static_cast<int64_t>(i);
}

// Refuses unless ResizeNearest `op` reads, along each spatial dim, the pixels ONNX's nearest
// mode reads.
void CheckNearestPixels(ConvertContext& c, const OperatorDef& op, const ResizeGeometry& g,
                        const OnnxScales& s, const std::string& coords,
                        const std::string& nearest_mode) {
  const ResizeArgs a = ParseResizeArgs(ArgumentHelper(op), ResizeKind::kNearest, op.type());
  const int64_t in[2] = {g.H, g.W}, out[2] = {g.OH, g.OW};
  const float scale[2] = {a.height_scale, a.width_scale};
  for (int k = 0; k < 2; ++k) {
    for (int64_t o = 0; o < out[k]; ++o) {
      const int64_t ours = NearestSourceIndex(a, o, in[k], out[k], scale[k]);
      const int64_t onnx = OnnxNearestIndex(coords, nearest_mode, o, in[k], s.exact[2 + k]);
      if (ours != onnx) {
        c.Unsupported(MakeString(
            "nearest with coordinate_transformation_mode ", coords, " and nearest_mode ",
            nearest_mode, ": output ", o, " of dim ", 2 + k, " reads input ", onnx,
            " in ONNX's definition (scale ", s.exact[2 + k], " in double) but ", ours,
            " with the float scale ", scale[k], " ResizeNearest takes"));
      }
    }
  }
}

void Resize(ConvertContext& c, const OnnxScales& s, const std::string& mode,
            const std::string& coords, const std::string& nearest_mode) {
  c.RequireFloat(0);
  const std::vector<int64_t>& dims = c.Dims(0, "the output size depends on it");
  if (dims.size() != 4) c.Unsupported("only 4-D (NCHW) inputs are supported");
  const std::vector<float>& scales = s.scales;
  if (scales.size() != 4) c.Unsupported("scales must have 4 values");
  if (scales[0] != 1.f || scales[1] != 1.f) {
    c.Unsupported("resizing the batch or channel dims is not supported");
  }
  const float sh = scales[2], sw = scales[3];
  if (!(sh > 0 && sw > 0 && std::isfinite(sh) && std::isfinite(sw))) {
    c.Unsupported(MakeString("the spatial scales must be positive and finite, got ", sh, " and ",
                             sw));
  }
  std::vector<Argument> args{MakeArgument("height_scale", sh), MakeArgument("width_scale", sw),
                             MakeArgument("order", "NCHW")};
  const bool nearest = mode == "nearest";
  if (nearest) {
    RequireOperator(c, "ResizeNearest");
    if (!OneOf(coords, {"asymmetric", "align_corners", "half_pixel", "pytorch_half_pixel",
                        "tf_half_pixel_for_nn"})) {
      c.Unsupported("nearest with coordinate_transformation_mode " + coords +
                    " is not supported");
    }
    if (!OneOf(nearest_mode, {"floor", "ceil", "round_prefer_floor", "round_prefer_ceil"})) {
      c.Unsupported("nearest_mode '" + nearest_mode + "' is not supported");
    }
    // Caffe2's ResizeNearest is asymmetric + floor: name the modes only when they differ.
    if (coords != "asymmetric" || nearest_mode != "floor") {
      args.push_back(MakeArgument("coordinate_transformation_mode", coords));
      args.push_back(MakeArgument("nearest_mode", nearest_mode));
    }
  } else if (mode == "linear" || mode == "bilinear") {
    RequireOperator(c, "ResizeBilinear");
    if (coords != "align_corners" && coords != "half_pixel" && coords != "pytorch_half_pixel" &&
        coords != "asymmetric") {
      c.Unsupported("linear with coordinate_transformation_mode " + coords + " is not supported");
    }
    if (coords == "align_corners") {
      // ONNX divides by the unrounded output length dim * scale; ResizeBilinear by the rounded
      // one: the same only when dim * scale is whole.
      for (int k : {2, 3}) {
        const double len = static_cast<double>(dims[k]) * s.exact[k];
        if (std::fabs(len - static_cast<double>(s.out[k])) > 1e-9 * len) {
          c.Unsupported(MakeString("align_corners with a fractional output length (", dims[k],
                                   " x ", s.exact[k], ") is not supported"));
        }
      }
    }
    args.push_back(MakeArgument("coordinate_transformation_mode", coords));
  } else {
    c.Unsupported("mode '" + mode + "' is not supported");
  }
  const OperatorDef op =
      c.Op(nearest ? "ResizeNearest" : "ResizeBilinear", {c.Input(0)}, {c.Output(0)}, args);
  const ResizeGeometry g = ComputeResizeGeometry(
      ParseResizeArgs(ArgumentHelper(op),
                      nearest ? ResizeKind::kNearest : ResizeKind::kBilinear, op.type()),
      dims);
  if (g.OH != s.out[2] || g.OW != s.out[3]) {
    c.Unsupported(MakeString("the output is ", DimsString(s.out), " in ONNX but ",
                             DimsString(g.YDims()), " from the float scales (", sh, ", ", sw,
                             ") the halfcaf op takes"));
  }
  if (nearest) CheckNearestPixels(c, op, g, s, coords, nearest_mode);
  c.Emit(op);
}

}  // namespace

HALFCAF_ONNX_CONVERTER(Upsample) {
  c.OnlyAttributes({"mode", "scales", "height_scale", "width_scale"});
  std::vector<float> scales = c.Floats("scales");
  if (c.HasInput(1)) scales = c.ConstFloats(1, "the scales input");
  Resize(c, FromScales(scales, c.Dims(0, "the output size depends on it")),
         c.String("mode", "nearest"), "asymmetric", "floor");
}

HALFCAF_ONNX_CONVERTER(Resize) {
  c.OnlyAttributes({"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                    "exclude_outside", "extrapolation_value"});
  if (c.Int("exclude_outside", 0) != 0) c.Unsupported("exclude_outside=1 is not supported");
  const std::string mode = c.String("mode", "nearest");
  const std::vector<int64_t>& dims = c.Dims(0, "the output size depends on it");
  if (c.opset() < 11) {
    Resize(c, FromScales(c.ConstFloats(1, "the scales input"), dims), mode, "asymmetric",
           "floor");
    return;
  }
  const std::string coords = c.String("coordinate_transformation_mode", "half_pixel");
  OnnxScales s;
  if (c.HasInput(2)) s = FromScales(c.ConstFloats(2, "the scales input"), dims);
  if (s.scales.empty() && c.HasInput(3)) {
    const std::vector<int64_t> sizes = c.ConstInts(3, "the sizes input");
    if (sizes.size() != dims.size()) c.Unsupported("sizes must have one value per dim");
    s.out = sizes;
    for (size_t i = 0; i < sizes.size(); ++i) {
      s.scales.push_back(static_cast<float>(sizes[i]) / static_cast<float>(dims[i]));
      s.exact.push_back(static_cast<double>(sizes[i]) / static_cast<double>(dims[i]));
    }
  }
  if (s.scales.empty()) c.Unsupported("neither scales nor sizes are given");
  Resize(c, s, mode, coords, c.String("nearest_mode", "round_prefer_floor"));
}

}  // namespace onnx_import
}  // namespace halfcaf
