// ONNX shape and data-movement nodes: Reshape, Flatten, Transpose, Concat, Split, Slice, Squeeze,
// Unsqueeze, Shape, Size, Gather, Constant, ConstantOfShape, reductions, ArgMax / ArgMin, Pad.
// The shape arithmetic exporters write (Shape -> Gather -> Concat -> Reshape) folds to constants
// here, so the predict net keeps only the data path.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/argument.h"
#include "core/strings.h"
#include "onnx/convert_util.h"

namespace halfcaf {
namespace onnx_import {
namespace {

Tensor Int64Tensor(const std::vector<int64_t>& v) {
  Tensor t(std::vector<int64_t>{static_cast<int64_t>(v.size())}, DataType::INT64);
  std::copy(v.begin(), v.end(), t.mutable_data<int64_t>());
  return t;
}

// Reshape input 0 to `dims` (0 copies the input's dim, -1 is inferred).
void EmitReshape(ConvertContext& c, const std::vector<int64_t>& dims) {
  c.Emit(c.Op("Reshape", {c.Input(0)}, {c.Output(0), c.Temp("old_shape")},
              {MakeArgument("shape", dims)}));
}

}  // namespace

HALFCAF_ONNX_CONVERTER(Reshape) {
  c.OnlyAttributes({"allowzero", "shape"});
  if (c.opset() >= 5 && !c.Const(1)) {
    // A run-time shape: halfcaf's Reshape reads it as its second input (0 copies, -1 infers).
    if (c.Int("allowzero", 0) != 0) c.Unsupported("allowzero=1 with a run-time shape");
    const DataType t = c.DType(1);
    if (t != DataType::INT64 && t != DataType::INT32 && t != DataType::UNDEFINED) {
      c.Unsupported(std::string("the shape input has type ") + DataTypeName(t));
    }
    c.Emit(c.Op("Reshape", {c.Input(0), c.Input(1)}, {c.Output(0), c.Temp("old_shape")}));
    return;
  }
  std::vector<int64_t> dims = c.opset() < 5 ? c.Ints("shape") : c.ConstInts(1, "the shape input");
  if (c.Int("allowzero", 0) != 0 && std::count(dims.begin(), dims.end(), 0) > 0) {
    c.Unsupported("allowzero=1 with a 0 in the shape is not supported");
  }
  EmitReshape(c, dims);
}

HALFCAF_ONNX_CONVERTER(Flatten) {
  c.OnlyAttributes({"axis"});
  int64_t axis = c.Int("axis", 1);
  if (axis < 0) {
    const TensorShape* s = c.Shape(0);
    if (!s) c.Unsupported("a negative axis needs the input's rank");
    axis += static_cast<int64_t>(s->dims.size());
  }
  c.Emit(c.Op("Flatten", {c.Input(0)}, {c.Output(0)}, {MakeArgument("axis", axis)}));
}

HALFCAF_ONNX_CONVERTER(Transpose) {
  c.OnlyAttributes({"perm"});
  std::vector<Argument> args;
  if (c.Has("perm")) args.push_back(MakeArgument("axes", c.Ints("perm")));
  c.Emit(c.Op("Transpose", {c.Input(0)}, {c.Output(0)}, args));
}

HALFCAF_ONNX_CONVERTER(Concat) {
  c.OnlyAttributes({"axis"});
  if (!c.Has("axis") && c.opset() >= 4) c.Unsupported("the axis attribute is required");
  std::vector<std::string> inputs;
  for (int i = 0; i < c.NumInputs(); ++i) inputs.push_back(c.Input(i));
  c.Emit(c.Op("Concat", inputs, {c.Output(0), c.Temp("split_info")},
              {MakeArgument("axis", c.Int("axis", 1))}));
}

HALFCAF_ONNX_CONVERTER(Split) {
  c.OnlyAttributes({"axis", "split", "num_outputs"});
  std::vector<int64_t> split = c.opset() < 13 ? c.Ints("split") : std::vector<int64_t>{};
  if (c.opset() >= 13 && c.HasInput(1)) split = c.ConstInts(1, "the split input");
  std::vector<Argument> args{MakeArgument("axis", c.Int("axis", 0))};
  if (!split.empty()) {
    if (static_cast<int>(split.size()) != c.NumOutputs()) {
      c.Unsupported(MakeString(split.size(), " split sizes for ", c.NumOutputs(), " outputs"));
    }
    args.push_back(MakeArgument("split", split));
  }
  std::vector<std::string> outputs;
  for (int i = 0; i < c.NumOutputs(); ++i) outputs.push_back(c.Output(i));
  c.Emit(c.Op("Split", {c.Input(0)}, outputs, args));
}

// Slice: each listed axis keeps start, start + step, ... short of end. An axis cut with step 1
// becomes one Caffe2 Slice (which cuts one axis per op); any other step (a negative one runs
// backwards) a Gather of the indices it keeps along that axis. An input taken whole is copied.
HALFCAF_ONNX_CONVERTER(Slice) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    c.OnlyAttributes({"starts", "ends", "axes"});
    starts = c.Ints("starts");
    ends = c.Ints("ends");
    axes = c.Ints("axes");
  } else {
    c.OnlyAttributes({});
    starts = c.ConstInts(1, "the starts input");
    ends = c.ConstInts(2, "the ends input");
    if (c.HasInput(3)) axes = c.ConstInts(3, "the axes input");
    if (c.HasInput(4)) steps = c.ConstInts(4, "the steps input");
  }
  const std::vector<int64_t>& dims = c.Dims(0, "Slice's bounds are clamped to it");
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    c.Unsupported("starts, ends, axes and steps differ in length");
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  std::vector<std::pair<int64_t, std::pair<int64_t, int64_t>>> cuts;  // axis, [start, end)
  std::vector<std::pair<int64_t, std::vector<int64_t>>> gathers;      // axis, indices
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = NormalizeAxis(c, axes[k], rank, "axis");
    if (seen[a]) c.Unsupported(MakeString("axis ", a, " is listed twice"));
    seen[a] = true;
    const int64_t d = dims[a];
    if (steps[k] == 0) c.Unsupported(MakeString("steps[", k, "] is 0"));
    // A step longer than the dim keeps at most one index; limiting it avoids overflow below.
    const int64_t step = std::min(std::max(steps[k], -(d + 1)), d + 1);
    // ONNX's clamping, after a negative index has been counted from the end: start and end in
    // [0, d] going forwards; start in [0, d - 1] and end in [-1, d - 1] going backwards (an end
    // of -1 then means "through index 0").
    auto clamp = [d](int64_t v, int64_t l, int64_t h) {
      return std::min(std::max(v < 0 ? v + d : v, l), h);
    };
    const int64_t s = step > 0 ? clamp(starts[k], 0, d) : clamp(starts[k], 0, d - 1);
    const int64_t e = step > 0 ? clamp(ends[k], 0, d) : clamp(ends[k], -1, d - 1);
    if (step == 1) {
      if (s != 0 || e < d) cuts.push_back({a, {s, std::max(e, s)}});
      continue;
    }
    std::vector<int64_t> keep;
    for (int64_t i = s; step > 0 ? i < e : i > e; i += step) keep.push_back(i);
    if (d <= 1 && static_cast<int64_t>(keep.size()) == d) continue;  // the whole dim
    gathers.push_back({a, keep});
  }
  const size_t total = cuts.size() + gathers.size();
  if (total == 0) {
    c.Emit(c.Op("Copy", {c.Input(0)}, {c.Output(0)}));
    return;
  }
  std::string x = c.Input(0);
  size_t done = 0;
  auto next = [&]() { return ++done == total ? c.Output(0) : c.Temp("sliced"); };
  for (const auto& cut : cuts) {
    std::vector<int64_t> s(static_cast<size_t>(rank), 0), e(dims);
    s[cut.first] = cut.second.first;
    e[cut.first] = cut.second.second;
    const std::string y = next();
    c.Emit(c.Op("Slice", {x}, {y}, {MakeArgument("starts", s), MakeArgument("ends", e)}));
    x = y;
  }
  if (!gathers.empty()) RequireOperator(c, "Gather");
  for (const auto& g : gathers) {
    const std::string indices = c.Temp("indices");
    c.SetConst(indices, Int64Tensor(g.second));
    const std::string y = next();
    c.Emit(c.Op("Gather", {x, indices}, {y},
                {MakeArgument("axis", g.first), MakeArgument("dense_gradient", 1)}));
    x = y;
  }
}

// Squeeze / Unsqueeze as a Reshape to the static output shape.
static void SqueezeLike(ConvertContext& c, bool squeeze) {
  c.OnlyAttributes({"axes"});
  std::vector<int64_t> axes = c.opset() < 13 ? c.Ints("axes")
                              : c.HasInput(1) ? c.ConstInts(1, "the axes input")
                                              : std::vector<int64_t>{};
  const std::vector<int64_t>& dims = c.Dims(0, "the output shape follows from it");
  std::vector<int64_t> out;
  if (squeeze) {
    const int64_t rank = static_cast<int64_t>(dims.size());
    std::vector<bool> drop(dims.size(), axes.empty());
    for (int64_t a : axes) drop[NormalizeAxis(c, a, rank)] = true;
    for (size_t k = 0; k < dims.size(); ++k) {
      if (drop[k] && dims[k] != 1 && !axes.empty()) {
        c.Unsupported(MakeString("axis ", k, " has size ", dims[k], ", not 1"));
      }
      if (!(drop[k] && dims[k] == 1)) out.push_back(dims[k]);
    }
  } else {
    const int64_t rank = static_cast<int64_t>(dims.size() + axes.size());
    std::vector<bool> add(static_cast<size_t>(rank), false);
    for (int64_t a : axes) add[NormalizeAxis(c, a, rank)] = true;
    size_t next = 0;
    for (int64_t k = 0; k < rank; ++k) out.push_back(add[k] ? 1 : dims.at(next++));
  }
  EmitReshape(c, out);
}

HALFCAF_ONNX_CONVERTER(Squeeze) { SqueezeLike(c, true); }
HALFCAF_ONNX_CONVERTER(Unsqueeze) { SqueezeLike(c, false); }

HALFCAF_ONNX_CONVERTER(Shape) {
  c.OnlyAttributes({"start", "end"});
  std::vector<int64_t> dims = c.Dims(0, "Shape folds to a constant");
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t start = c.Int("start", 0), end = c.Int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::min(std::max<int64_t>(start, 0), rank);
  end = std::min(std::max(end, start), rank);
  c.SetConst(c.Output(0), Int64Tensor(std::vector<int64_t>(dims.begin() + start, dims.begin() + end)));
}

HALFCAF_ONNX_CONVERTER(Size) {
  c.OnlyAttributes({});
  const std::vector<int64_t>& dims = c.Dims(0, "Size folds to a constant");
  Tensor t(std::vector<int64_t>{}, DataType::INT64);
  t.mutable_data<int64_t>()[0] =
      std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<int64_t>());
  c.SetConst(c.Output(0), t);
}

HALFCAF_ONNX_CONVERTER(Constant) {
  c.OnlyAttributes({"value", "value_float", "value_floats", "value_int", "value_ints"});
  Tensor t;
  if (c.TensorAttr("value", &t)) {
  } else if (c.Has("value_float")) {
    t = Tensor(std::vector<int64_t>{}, DataType::FLOAT);
    t.mutable_data<float>()[0] = c.Float("value_float", 0);
  } else if (c.Has("value_int")) {
    t = Tensor(std::vector<int64_t>{}, DataType::INT64);
    t.mutable_data<int64_t>()[0] = c.Int("value_int", 0);
  } else if (c.Has("value_ints")) {
    t = Int64Tensor(c.Ints("value_ints"));
  } else if (c.Has("value_floats")) {
    const std::vector<float> v = c.Floats("value_floats");
    t = Tensor(std::vector<int64_t>{static_cast<int64_t>(v.size())}, DataType::FLOAT);
    std::copy(v.begin(), v.end(), t.mutable_data<float>());
  } else {
    c.Unsupported("no value attribute");
  }
  c.SetConst(c.Output(0), t);
}

HALFCAF_ONNX_CONVERTER(ConstantOfShape) {
  c.OnlyAttributes({"value"});
  const std::vector<int64_t> dims = c.ConstInts(0, "the shape input");
  Tensor value;
  if (!c.TensorAttr("value", &value)) {
    value = Tensor(std::vector<int64_t>{1}, DataType::FLOAT);
    value.mutable_data<float>()[0] = 0.f;
  }
  if (value.numel() != 1) c.Unsupported("value must hold one element");
  Tensor t(dims, value.dtype());
  const size_t item = DataTypeSize(value.dtype());
  char* out = static_cast<char*>(t.raw_mutable_data());
  for (int64_t i = 0; i < t.numel(); ++i) std::memcpy(out + i * item, value.raw_data(), item);
  c.SetConst(c.Output(0), t);
}

// Gather along `axis`: folded when both inputs are constants (shape arithmetic), else
// halfcaf's Gather (axis 0).
HALFCAF_ONNX_CONVERTER(Gather) {
  c.OnlyAttributes({"axis"});
  const Tensor* data = c.Const(0);
  const Tensor* idx = c.Const(1);
  int64_t axis = c.Int("axis", 0);
  if (data && idx) {
    const int64_t rank = static_cast<int64_t>(data->dims().size());
    axis = NormalizeAxis(c, axis, rank);
    const std::vector<int64_t> ind = c.ConstInts(1, "the indices");
    const int64_t d = data->dims()[axis];
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < axis; ++k) outer *= data->dims()[k];
    for (int64_t k = axis + 1; k < rank; ++k) inner *= data->dims()[k];
    std::vector<int64_t> dims(data->dims().begin(), data->dims().begin() + axis);
    dims.insert(dims.end(), idx->dims().begin(), idx->dims().end());
    dims.insert(dims.end(), data->dims().begin() + axis + 1, data->dims().end());
    Tensor out(dims, data->dtype());
    const size_t item = DataTypeSize(data->dtype());
    const char* src = static_cast<const char*>(data->raw_data());
    char* dst = static_cast<char*>(out.raw_mutable_data());
    for (int64_t o = 0; o < outer; ++o) {
      for (size_t j = 0; j < ind.size(); ++j) {
        int64_t i = ind[j] < 0 ? ind[j] + d : ind[j];
        if (i < 0 || i >= d) c.Unsupported(MakeString("index ", ind[j], " is out of range"));
        std::memcpy(dst + ((o * ind.size() + j) * inner) * item, src + ((o * d + i) * inner) * item,
                    inner * item);
      }
    }
    c.SetConst(c.Output(0), out);
    return;
  }
  RequireOperator(c, "Gather");
  if (axis < 0) {
    axis = NormalizeAxis(c, axis,
                         static_cast<int64_t>(c.Dims(0, "a negative axis counts from it").size()));
  }
  // ONNX lets a negative index count from the end on every axis (Caffe2 only on axis 0).
  c.Emit(c.Op("Gather", {c.Input(0), c.Input(1)}, {c.Output(0)},
              {MakeArgument("axis", axis), MakeArgument("wrap_indices", 1)}));
}

// ReduceMean / ReduceSum / ReduceMax / ReduceMin (axes as attribute, or input from opset 13 for
// ReduceSum and 18 for the others).
static void Reduce(ConvertContext& c, const std::string& type) {
  c.OnlyAttributes({"axes", "keepdims", "noop_with_empty_axes"});
  RequireOperator(c, type);
  c.RequireFloat(0);
  std::vector<int64_t> axes = c.Ints("axes");
  if (c.HasInput(1)) axes = c.ConstInts(1, "the axes input");
  if (axes.empty() && c.Int("noop_with_empty_axes", 0) != 0) {
    c.Emit(c.Op("Copy", {c.Input(0)}, {c.Output(0)}));
    return;
  }
  std::vector<Argument> args{MakeArgument("keepdims", c.Int("keepdims", 1))};
  if (!axes.empty()) args.push_back(MakeArgument("axes", axes));
  c.Emit(c.Op(type, {c.Input(0)}, {c.Output(0)}, args));
}

HALFCAF_ONNX_CONVERTER(ReduceMean) { Reduce(c, "ReduceMean"); }
HALFCAF_ONNX_CONVERTER(ReduceSum) { Reduce(c, "ReduceSum"); }
HALFCAF_ONNX_CONVERTER(ReduceMax) { Reduce(c, "ReduceMax"); }
HALFCAF_ONNX_CONVERTER(ReduceMin) { Reduce(c, "ReduceMin"); }

static void ArgReduce(ConvertContext& c, const std::string& type) {
  c.OnlyAttributes({"axis", "keepdims", "select_last_index"});
  RequireOperator(c, type);
  c.RequireFloat(0);
  std::vector<Argument> args{MakeArgument("axis", c.Int("axis", 0)),
                             MakeArgument("keepdims", c.Int("keepdims", 1))};
  if (c.Int("select_last_index", 0) != 0) args.push_back(MakeArgument("select_last_index", 1));
  c.Emit(c.Op(type, {c.Input(0)}, {c.Output(0)}, args));
}

HALFCAF_ONNX_CONVERTER(ArgMax) { ArgReduce(c, "ArgMax"); }
HALFCAF_ONNX_CONVERTER(ArgMin) { ArgReduce(c, "ArgMin"); }

// Pad of two adjacent dims of a 4-D tensor: dims 2 and 3 (NCHW) or 1 and 2 (NHWC), as PadImage.
HALFCAF_ONNX_CONVERTER(Pad) {
  c.OnlyAttributes({"mode", "pads", "value"});
  RequireOperator(c, "PadImage");
  c.RequireFloat(0);
  std::vector<int64_t> pads = c.opset() < 11 ? c.Ints("pads") : c.ConstInts(1, "the pads input");
  float value = c.Float("value", 0.f);
  if (c.opset() >= 11 && c.HasInput(2)) value = c.ConstFloats(2, "the constant_value input").at(0);
  if (c.opset() >= 18 && c.HasInput(3)) c.Unsupported("the axes input is not supported");
  const std::string mode = c.String("mode", "constant");
  if (pads.size() != 8) c.Unsupported("only 4-D inputs (NCHW or NHWC) are supported");
  for (int64_t p : pads) {
    if (p < 0) c.Unsupported("negative pads (cropping) are not supported");
  }
  // pads: begins of dims 0-3, then their ends.
  const bool nchw = !pads[0] && !pads[1] && !pads[4] && !pads[5];
  const bool nhwc = !pads[0] && !pads[3] && !pads[4] && !pads[7];
  if (!nchw && !nhwc) {
    c.Unsupported("padding of the batch dim, or of more than two adjacent dims, is not supported");
  }
  const int h = nchw ? 2 : 1;
  c.Emit(c.Op("PadImage", {c.Input(0)}, {c.Output(0)},
              {MakeArgument("pads", std::vector<int64_t>{pads[h], pads[h + 1], pads[h + 4],
                                                         pads[h + 5]}),
               MakeArgument("mode", mode), MakeArgument("value", value),
               MakeArgument("order", nchw ? "NCHW" : "NHWC")}));
}

}  // namespace onnx_import
}  // namespace halfcaf
