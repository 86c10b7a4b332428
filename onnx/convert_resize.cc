// ONNX Resize and Upsample of NCHW images onto ResizeNearest / ResizeBilinear. Only the modes
// whose sampling those ops reproduce exactly are accepted: nearest with asymmetric coordinates
// and floor rounding (or half-pixel coordinates with integer scales, which pick the same pixels),
// and linear with align_corners, half_pixel, pytorch_half_pixel or asymmetric coordinates.
#include <cmath>

#include "core/argument.h"
#include "core/strings.h"
#include "onnx/convert_util.h"

namespace halfcaf {
namespace onnx_import {
namespace {

bool IsInteger(float v) { return v >= 1.f && std::floor(v) == v; }

void Resize(ConvertContext& c, std::vector<float> scales, const std::string& mode,
            const std::string& coords, const std::string& nearest_mode) {
  c.RequireFloat(0);
  const std::vector<int64_t>& dims = c.Dims(0, "the output size depends on it");
  if (dims.size() != 4) c.Unsupported("only 4-D (NCHW) inputs are supported");
  if (scales.size() != 4) c.Unsupported("scales must have 4 values");
  if (scales[0] != 1.f || scales[1] != 1.f) {
    c.Unsupported("resizing the batch or channel dims is not supported");
  }
  const float sh = scales[2], sw = scales[3];
  if (!(sh > 0) || !(sw > 0)) c.Unsupported("scales must be positive");
  std::vector<Argument> args{MakeArgument("height_scale", sh), MakeArgument("width_scale", sw),
                             MakeArgument("order", "NCHW")};
  if (mode == "nearest") {
    RequireOperator(c, "ResizeNearest");
    const bool floor_asym = coords == "asymmetric" && nearest_mode == "floor";
    const bool half_int = (coords == "half_pixel" || coords == "pytorch_half_pixel") &&
                          (nearest_mode == "round_prefer_floor" ||
                           nearest_mode == "round_prefer_ceil") &&
                          IsInteger(sh) && IsInteger(sw);
    if (!floor_asym && !half_int) {
      c.Unsupported("nearest with coordinate_transformation_mode " + coords + " and nearest_mode " +
                    nearest_mode + " (at these scales) is not supported");
    }
    c.Emit(c.Op("ResizeNearest", {c.Input(0)}, {c.Output(0)}, args));
  } else if (mode == "linear" || mode == "bilinear") {
    RequireOperator(c, "ResizeBilinear");
    if (coords != "align_corners" && coords != "half_pixel" && coords != "pytorch_half_pixel" &&
        coords != "asymmetric") {
      c.Unsupported("linear with coordinate_transformation_mode " + coords + " is not supported");
    }
    if (coords == "align_corners") {
      // ONNX divides by the unrounded output length in * scale; ResizeBilinear by the rounded
      // one: the same only when in * scale is whole.
      for (int k : {2, 3}) {
        const double len = static_cast<double>(dims[k]) * scales[k];
        if (std::floor(len) != len) {
          c.Unsupported(MakeString("align_corners with a fractional output length (", dims[k],
                                   " x ", scales[k], ") is not supported"));
        }
      }
    }
    args.push_back(MakeArgument("coordinate_transformation_mode", coords));
    c.Emit(c.Op("ResizeBilinear", {c.Input(0)}, {c.Output(0)}, args));
  } else {
    c.Unsupported("mode '" + mode + "' is not supported");
  }
}

}  // namespace

HALFCAF_ONNX_CONVERTER(Upsample) {
  c.OnlyAttributes({"mode", "scales", "height_scale", "width_scale"});
  std::vector<float> scales = c.Floats("scales");
  if (c.HasInput(1)) scales = c.ConstFloats(1, "the scales input");
  Resize(c, scales, c.String("mode", "nearest"), "asymmetric", "floor");
}

HALFCAF_ONNX_CONVERTER(Resize) {
  c.OnlyAttributes({"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                    "exclude_outside", "extrapolation_value"});
  if (c.Int("exclude_outside", 0) != 0) c.Unsupported("exclude_outside=1 is not supported");
  const std::string mode = c.String("mode", "nearest");
  std::vector<float> scales;
  if (c.opset() < 11) {
    scales = c.ConstFloats(1, "the scales input");
    Resize(c, scales, mode, "asymmetric", "floor");
    return;
  }
  const std::string coords = c.String("coordinate_transformation_mode", "half_pixel");
  if (c.HasInput(2)) scales = c.ConstFloats(2, "the scales input");
  if (scales.empty() && c.HasInput(3)) {
    const std::vector<int64_t> sizes = c.ConstInts(3, "the sizes input");
    const std::vector<int64_t>& dims = c.Dims(0, "scales follow from sizes / dims");
    if (sizes.size() != dims.size()) c.Unsupported("sizes must have one value per dim");
    for (size_t i = 0; i < sizes.size(); ++i) {
      scales.push_back(static_cast<float>(sizes[i]) / static_cast<float>(dims[i]));
      if (static_cast<int64_t>(std::floor(dims[i] * scales.back())) != sizes[i]) {
        c.Unsupported(MakeString("size ", sizes[i], " is not reached by a float scale of dim ",
                                 dims[i]));
      }
    }
  }
  if (scales.empty()) c.Unsupported("neither scales nor sizes are given");
  Resize(c, scales, mode, coords, c.String("nearest_mode", "round_prefer_floor"));
}

}  // namespace onnx_import
}  // namespace halfcaf
