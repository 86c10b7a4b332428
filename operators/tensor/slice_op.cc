#include "operators/tensor/slice_op.h"

#include <algorithm>
#include <cstring>

#include "core/gradient.h"

namespace halfcaf {

SlicePlan PlanSlice(const std::vector<int64_t>& dims, const std::vector<int64_t>& starts,
                    const std::vector<int64_t>& ends) {
  HALFCAF_ENFORCE(starts.size() == ends.size(), "starts ", DimsString(starts), " has ",
                  starts.size(), " entries but ends ", DimsString(ends), " has ", ends.size(),
                  ": give one start and one end per sliced dim");
  HALFCAF_ENFORCE(starts.size() <= dims.size(), "starts / ends have ", starts.size(),
                  " entries but data has only ", dims.size(), " dims ", DimsString(dims));
  SlicePlan p;
  p.out_dims = dims;
  int cut = -1;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t d = dims[i];
    int64_t s = starts[i], e = ends[i];
    // Negative v counts from past the end: -1 is d, -(d + 1) is 0.
    if (s < 0) s += d + 1;
    if (e < 0) e += d + 1;
    HALFCAF_ENFORCE(s >= 0, "start index ", starts[i], " for dim ", i, " (size ", d, ") of data ",
                    DimsString(dims), " is out of range: a negative index v means ",
                    "size + 1 + v, so it must be at least ", -(d + 1));
    HALFCAF_ENFORCE(e >= 0, "end index ", ends[i], " for dim ", i, " (size ", d, ") of data ",
                    DimsString(dims), " is out of range: a negative index v means size + 1 + v, ",
                    "so it must be at least ", -(d + 1));
    s = std::min(s, d);
    e = std::min(e, d);
    HALFCAF_ENFORCE(s <= e, "start ", starts[i], " is after end ", ends[i], " for dim ", i,
                    " (size ", d, ", i.e. ", s, " > ", e, ") of data ", DimsString(dims),
                    " (starts ", DimsString(starts), ", ends ", DimsString(ends), ")");
    if (s == 0 && e == d) continue;
    HALFCAF_ENFORCE(cut < 0, "Slice cuts at most one dimension, but starts ", DimsString(starts),
                    " / ends ", DimsString(ends), " cut both dim ", cut, " and dim ", i,
                    " of data ", DimsString(dims),
                    " (slice one dim per Slice op, or take the other dims whole)");
    cut = static_cast<int>(i);
    p.start = s;
    p.end = e;
  }
  p.axis = cut < 0 ? 0 : cut;
  if (dims.empty()) {  // a scalar: nothing to cut, one element kept
    p.dim = p.end = 1;
    return p;
  }
  for (int i = 0; i < p.axis; ++i) p.outer *= dims[i];
  for (size_t i = p.axis + 1; i < dims.size(); ++i) p.inner *= dims[i];
  p.dim = dims[p.axis];
  if (cut < 0) {
    p.start = 0;
    p.end = p.dim;
  }
  p.out_dims[p.axis] = p.length();
  return p;
}

namespace {

std::vector<int64_t> ReadIndices(const Tensor& t, const char* what, const std::string& name) {
  HALFCAF_ENFORCE(t.ndim() == 1 && (t.dtype() == DataType::INT32 || t.dtype() == DataType::INT64),
                  what, " input '", name, "' must be a 1-D int32 or int64 tensor, got ",
                  t.DebugString());
  std::vector<int64_t> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) {
    v[i] = t.dtype() == DataType::INT32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i];
  }
  return v;
}

}  // namespace

SliceBounds::SliceBounds(const OperatorBase& op, int tensor_inputs)
    : from_inputs_(op.InputSize() == tensor_inputs + 2) {
  HALFCAF_ENFORCE(op.InputSize() == tensor_inputs || from_inputs_, op.type(), " takes ",
                  tensor_inputs, " or ", tensor_inputs + 2, " inputs, got ", op.InputSize());
  const bool has_args = op.HasArgument("starts") || op.HasArgument("ends");
  HALFCAF_ENFORCE(!(from_inputs_ && has_args),
                  "starts / ends are given both as arguments and as inputs 1 and 2; give them "
                  "one way only");
  if (!from_inputs_) {
    starts_ = op.GetRepeatedArgument<int64_t>("starts");
    ends_ = op.GetRepeatedArgument<int64_t>("ends");
    HALFCAF_ENFORCE(starts_.size() == ends_.size(), "argument starts ", DimsString(starts_),
                    " has ", starts_.size(), " entries but ends ", DimsString(ends_), " has ",
                    ends_.size());
  }
}

SlicePlan SliceBounds::Plan(const OperatorBase& op, const std::vector<int64_t>& dims) {
  if (from_inputs_) {
    starts_ = ReadIndices(op.CPUInput(1), "the starts", op.input_name(1));
    ends_ = ReadIndices(op.CPUInput(2), "the ends", op.input_name(2));
  }
  return PlanSlice(dims, starts_, ends_);
}

SlicePlan SliceBounds::PlanGradient(const OperatorBase& op, const Tensor& data, const Tensor& dY) {
  SlicePlan p = Plan(op, data.dims());
  HALFCAF_ENFORCE(dY.dims() == p.out_dims, "dY has dims ", DimsString(dY.dims()),
                  " but the slice of data ", DimsString(data.dims()), " has dims ",
                  DimsString(p.out_dims));
  return p;
}

SliceOp::SliceOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), bounds_(*this, 1) {}

void SliceOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const SlicePlan p = bounds_.Plan(*this, X.dims());
  Tensor* Y = Output(0, p.out_dims);
  const size_t item = DataTypeSize(X.dtype());
  char* y = static_cast<char*>(Y->raw_mutable_data(X.dtype()));
  const char* x = static_cast<const char*>(X.raw_data());
  const size_t row = static_cast<size_t>(p.length() * p.inner) * item;
  if (row == 0) return;
  for (int64_t o = 0; o < p.outer; ++o) {
    std::memcpy(y + o * row, x + ((o * p.dim + p.start) * p.inner) * item, row);
  }
}

SliceGradientOp::SliceGradientOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), bounds_(*this, 2) {}

void SliceGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& dY = Input(InputSize() - 1);
  const SlicePlan p = bounds_.PlanGradient(*this, X, dY);
  Tensor* dX = Output(0, X.dims());
  const size_t item = DataTypeSize(dY.dtype());
  char* dx = static_cast<char*>(dX->raw_mutable_data(dY.dtype()));
  // All-zero bytes are zero in every numeric type, float16 included.
  std::memset(dx, 0, dX->nbytes());
  const char* dy = static_cast<const char*>(dY.raw_data());
  const size_t row = static_cast<size_t>(p.length() * p.inner) * item;
  if (row == 0) return;
  for (int64_t o = 0; o < p.outer; ++o) {
    std::memcpy(dx + ((o * p.dim + p.start) * p.inner) * item, dy + o * row, row);
  }
}

namespace {

// Slice -> SliceGradient: (data, [starts, ends,] dY) -> ddata; starts / ends get no gradient.
class GetSliceGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<std::string> in{I(0)};
    if (NumInputs() == 3) {
      in.push_back(I(1));
      in.push_back(I(2));
    }
    in.push_back(GO(0));
    return SingleGradientDef("SliceGradient", in, {GI(0)});
  }
};

// The output shape is known when the bounds are arguments; with index inputs only the dtype and
// rank are (the values decide the rest).
std::vector<TensorShape> SliceShapeInference(const OperatorDef& def,
                                             const std::vector<TensorShape>& in) {
  if (in.size() == 3) return {TensorShape{{}, in[0].dtype, true}};
  ArgumentHelper args(def);
  return {TensorShape{PlanSlice(in[0].dims, args.GetRepeatedArgument<int64_t>("starts"),
                                args.GetRepeatedArgument<int64_t>("ends"))
                          .out_dims,
                      in[0].dtype}};
}

OpCost SliceCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  OpCost c;
  const std::vector<TensorShape> out = SliceShapeInference(def, in);
  // With index inputs the slice size is unknown: count the whole input as an upper bound.
  const double n = out[0].unknown ? in[0].numel() : out[0].numel();
  c.bytes_read = n * DataTypeSize(in[0].dtype);
  c.bytes_written = c.bytes_read;
  return c;
}

OpCost SliceGradientCost(const OperatorDef&, const std::vector<TensorShape>& in) {
  OpCost c;
  const TensorShape& dy = in.back();
  c.bytes_read = static_cast<double>(dy.numel()) * DataTypeSize(dy.dtype);
  c.bytes_written = static_cast<double>(in[0].numel()) * DataTypeSize(dy.dtype);
  return c;
}

}  // namespace

REGISTER_CPU_OPERATOR(Slice, SliceOp);
REGISTER_CPU_OPERATOR(SliceGradient, SliceGradientOp);
REGISTER_GRADIENT(Slice, GetSliceGradient);

OPERATOR_SCHEMA(Slice)
    .NumInputs({1, 3})
    .NumOutputs(1)
    .TensorInferenceFunction(SliceShapeInference)
    .CostInferenceFunction(SliceCost)
    .SetDoc(
        "Takes a slice of `data`: Y = data[starts[0]:ends[0], starts[1]:ends[1], ...]. The "
        "bounds are the `starts` / `ends` arguments, or inputs 1 and 2 (1-D int32 or int64 "
        "tensors on the CPU, also for a CUDA op); the two lists have one entry per leading "
        "dim, and dims beyond them are taken whole. A negative index v means dim + 1 + v "
        "(-1 is the end of the dim, -(dim + 1) its start); indices above the dim are clamped "
        "to it; anything else out of range, or a start after its end, is an error. As in "
        "Caffe2, at most one dimension may actually be cut (the others must be taken whole). "
        "Any data type. Gradient: SliceGradient.")
    .Arg("starts", "ints: first index kept, per leading dim (when not given as input 1)")
    .Arg("ends", "ints: one past the last index kept, per leading dim (when not given as input 2)")
    .Input(0, "data", "tensor to slice, any data type")
    .Input(1, "starts", "optional 1-D int32/int64 CPU tensor of start indices")
    .Input(2, "ends", "optional 1-D int32/int64 CPU tensor of end indices")
    .Output(0, "Y", "the slice, same data type as data");

OPERATOR_SCHEMA(SliceGradient)
    .NumInputs({2, 4})
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return std::vector<TensorShape>{TensorShape{in[0].dims, in.back().dtype}};
    })
    .CostInferenceFunction(SliceGradientCost)
    .SetDoc(
        "Gradient of Slice: ddata has data's shape and dY's type, zero outside the slice and "
        "dY inside it. Inputs data, dY (bounds from the `starts` / `ends` arguments) or data, "
        "starts, ends, dY, as the forward op had them.")
    .Arg("starts", "ints: as in the forward op")
    .Arg("ends", "ints: as in the forward op")
    .Input(0, "data", "forward input (for its shape)")
    .Input(1, "starts_or_dY", "starts (4 inputs) or dY (2 inputs)")
    .Input(2, "ends", "ends (4 inputs only)")
    .Input(3, "dY", "gradient of Y (4 inputs)")
    .Output(0, "ddata", "gradient of data");

}  // namespace halfcaf
