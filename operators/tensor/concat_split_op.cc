#include "operators/tensor/concat_split_op.h"

#include <cstring>
#include <limits>
#include <numeric>

#include "core/gradient.h"

namespace halfcaf {

namespace {

constexpr int kAny = std::numeric_limits<int>::max();

int64_t Product(const std::vector<int64_t>& d, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= d[i];
  return p;
}

// Copies `outer` rows: each row of `src_row` bytes goes to dst + o * dst_row.
void CopyRows(int64_t outer, size_t src_row, const char* src, size_t dst_row, char* dst) {
  if (src_row == 0) return;
  for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * dst_row, src + o * src_row, src_row);
}

}  // namespace

ConcatSplitAxis ParseConcatSplitAxis(const ArgumentHelper& args) {
  ConcatSplitAxis a;
  HALFCAF_ENFORCE(!(args.HasArgument("axis") && args.HasArgument("order")),
                  "give either `axis` or `order`, not both");
  if (args.HasArgument("order")) {
    const std::string order = args.GetSingleArgument<std::string>("order", "NCHW");
    if (order == "NCHW" || order == "nchw") {
      a.axis = 1;
    } else if (order == "NHWC" || order == "nhwc") {
      a.axis = 3;
    } else {
      HALFCAF_THROW("argument `order` must be \"NCHW\" or \"NHWC\", got \"", order, "\"");
    }
  } else {
    a.axis = args.GetSingleArgument<int>("axis", 1);
  }
  a.add_axis = args.GetSingleArgument<int>("add_axis", 0) != 0;
  return a;
}

ConcatShape ComputeConcatShape(const std::vector<std::vector<int64_t>>& input_dims,
                               const ConcatSplitAxis& a) {
  HALFCAF_ENFORCE(!input_dims.empty(), "Concat needs at least one input");
  const std::vector<int64_t>& d0 = input_dims[0];
  const int nd = static_cast<int>(d0.size());
  const int out_nd = nd + (a.add_axis ? 1 : 0);
  HALFCAF_ENFORCE(a.axis >= -out_nd && a.axis < out_nd, "axis ", a.axis, " is out of range for ",
                  a.add_axis ? "stacking inputs" : "inputs", " with dims ", DimsString(d0),
                  " (valid: ", -out_nd, " to ", out_nd - 1, ")");
  ConcatShape s;
  s.axis = a.axis < 0 ? a.axis + out_nd : a.axis;
  int64_t total = 0;
  for (size_t i = 0; i < input_dims.size(); ++i) {
    const std::vector<int64_t>& di = input_dims[i];
    if (a.add_axis) {
      HALFCAF_ENFORCE(di == d0, "with add_axis=1 all inputs must have the same shape, but input ",
                      i, " has dims ", DimsString(di), " and input 0 has ", DimsString(d0));
      s.extents.push_back(1);
    } else {
      HALFCAF_ENFORCE(static_cast<int>(di.size()) == nd, "input ", i, " has ", di.size(),
                      " dims ", DimsString(di), " but input 0 has ", nd, " dims ",
                      DimsString(d0));
      for (int d = 0; d < nd; ++d) {
        HALFCAF_ENFORCE(d == s.axis || di[d] == d0[d], "input ", i, " has dims ", DimsString(di),
                        " but input 0 has ", DimsString(d0), ": all dims except axis ", s.axis,
                        " must match (dim ", d, " differs)");
      }
      s.extents.push_back(di[s.axis]);
    }
    total += s.extents.back();
  }
  s.dims = d0;
  if (a.add_axis) {
    s.dims.insert(s.dims.begin() + s.axis, total);
  } else {
    s.dims[s.axis] = total;
  }
  return s;
}

std::vector<int64_t> ComputeSplitLengths(const std::vector<int64_t>& x_dims,
                                         const ConcatSplitAxis& a, int num_outputs,
                                         const std::vector<int64_t>& lengths) {
  const int nd = static_cast<int>(x_dims.size());
  HALFCAF_ENFORCE(a.axis >= -nd && a.axis < nd, "axis ", a.axis,
                  " is out of range for X with dims ", DimsString(x_dims));
  const int axis = a.axis < 0 ? a.axis + nd : a.axis;
  const int64_t size = x_dims[axis];
  std::vector<int64_t> out = lengths;
  if (out.empty()) {
    HALFCAF_ENFORCE(size % num_outputs == 0, "cannot split axis ", axis, " of size ", size,
                    " (X dims ", DimsString(x_dims), ") into ", num_outputs,
                    " equal parts; give the lengths in `split`");
    out.assign(num_outputs, size / num_outputs);
  } else {
    HALFCAF_ENFORCE(static_cast<int>(out.size()) == num_outputs, "got ", out.size(),
                    " split lengths ", DimsString(out), " for ", num_outputs, " outputs");
    int64_t sum = 0;
    for (int64_t l : out) {
      HALFCAF_ENFORCE(l >= 0, "split lengths must be >= 0, got ", DimsString(out));
      sum += l;
    }
    HALFCAF_ENFORCE(sum == size, "split lengths ", DimsString(out), " sum to ", sum,
                    " but axis ", axis, " of X ", DimsString(x_dims), " has size ", size);
  }
  if (a.add_axis) {
    for (int64_t l : out) {
      HALFCAF_ENFORCE(l == 1, "with add_axis=1 every piece must have length 1 (the axis is "
                      "removed), got lengths ", DimsString(out), " for axis ", axis,
                      " of X ", DimsString(x_dims));
    }
  }
  return out;
}

// ---- Concat --------------------------------------------------------------------------------

ConcatOp::ConcatOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), axis_(ParseConcatSplitAxis(args_)) {}

ConcatPlan PlanConcat(const OperatorBase& op, const std::vector<const Tensor*>& inputs,
                      const ConcatSplitAxis& axis) {
  ConcatPlan plan;
  plan.dtype = inputs[0]->dtype();
  std::vector<std::vector<int64_t>> dims(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    HALFCAF_ENFORCE(inputs[i]->dtype() == plan.dtype, "input ", i, " '",
                    op.input_name(static_cast<int>(i)), "' is ", inputs[i]->DebugString(),
                    " but input 0 is ", inputs[0]->DebugString(),
                    ": Concat inputs must share one data type");
    dims[i] = inputs[i]->dims();
  }
  plan.shape = ComputeConcatShape(dims, axis);
  const ConcatShape& s = plan.shape;
  const size_t item = DataTypeSize(plan.dtype);
  const int64_t inner = Product(s.dims, s.axis + 1, s.dims.size());
  plan.outer = static_cast<size_t>(Product(s.dims, 0, s.axis));
  plan.y_row = static_cast<size_t>(s.dims[s.axis] * inner) * item;
  size_t offset = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    plan.row_bytes.push_back(static_cast<size_t>(s.extents[i] * inner) * item);
    plan.offsets.push_back(offset);
    offset += plan.row_bytes.back();
  }
  return plan;
}

void WriteSplitInfo(const ConcatShape& shape, Tensor* info) {
  info->Resize({static_cast<int64_t>(shape.extents.size())});
  int32_t* p = info->mutable_data<int32_t>();
  for (size_t i = 0; i < shape.extents.size(); ++i) p[i] = static_cast<int32_t>(shape.extents[i]);
}

void ConcatOp::RunOnDevice() {
  std::vector<const Tensor*> inputs;
  for (int i = 0; i < InputSize(); ++i) inputs.push_back(&Input(i));
  const ConcatPlan plan = PlanConcat(*this, inputs, axis_);
  char* y = static_cast<char*>(Output(0, plan.shape.dims)->raw_mutable_data(plan.dtype));
  for (int i = 0; i < InputSize(); ++i) {
    CopyRows(static_cast<int64_t>(plan.outer), plan.row_bytes[i],
             static_cast<const char*>(inputs[i]->raw_data()), plan.y_row, y + plan.offsets[i]);
  }
  WriteSplitInfo(plan.shape, OutputBlob(1)->GetMutableTensor(Device()));
}

// ---- Split ---------------------------------------------------------------------------------

SplitOp::SplitOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      axis_(ParseConcatSplitAxis(args_)),
      split_(GetRepeatedArgument<int64_t>("split")) {
  HALFCAF_ENFORCE(!(HasArgument("split") && InputSize() == 2),
                  "give the split lengths either as the `split` argument or as input 1, not both");
}

SplitPlan PlanSplit(const OperatorBase& op, const Tensor& X, const ConcatSplitAxis& axis_arg,
                    const std::vector<int64_t>& split_arg) {
  std::vector<int64_t> lengths = split_arg;
  if (op.InputSize() == 2) {
    const Tensor& L = op.CPUInput(1);
    HALFCAF_ENFORCE(L.ndim() == 1 && (L.dtype() == DataType::INT32 ||
                                      L.dtype() == DataType::INT64),
                    "split lengths (input 1) must be a 1-D int32 tensor, got ", L.DebugString());
    lengths.resize(L.numel());
    for (int64_t i = 0; i < L.numel(); ++i) {
      lengths[i] = L.dtype() == DataType::INT32 ? L.data<int32_t>()[i] : L.data<int64_t>()[i];
    }
  }
  lengths = ComputeSplitLengths(X.dims(), axis_arg, op.OutputSize(), lengths);
  const int axis = X.canonical_axis(axis_arg.axis);
  const std::vector<int64_t>& xd = X.dims();
  const int64_t inner = Product(xd, axis + 1, xd.size());
  const size_t item = DataTypeSize(X.dtype());
  SplitPlan plan;
  plan.outer = static_cast<size_t>(Product(xd, 0, axis));
  plan.x_row = static_cast<size_t>(xd[axis] * inner) * item;
  size_t offset = 0;
  for (int k = 0; k < op.OutputSize(); ++k) {
    std::vector<int64_t> dims = xd;
    if (axis_arg.add_axis) {
      dims.erase(dims.begin() + axis);
    } else {
      dims[axis] = lengths[k];
    }
    plan.out_dims.push_back(dims);
    plan.row_bytes.push_back(static_cast<size_t>(lengths[k] * inner) * item);
    plan.offsets.push_back(offset);
    offset += plan.row_bytes.back();
  }
  return plan;
}

void SplitOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const SplitPlan plan = PlanSplit(*this, X, axis_, split_);
  const char* x = static_cast<const char*>(X.raw_data());
  for (int k = 0; k < OutputSize(); ++k) {
    char* y = static_cast<char*>(Output(k, plan.out_dims[k])->raw_mutable_data(X.dtype()));
    const size_t row = plan.row_bytes[k];
    for (size_t o = 0; o < plan.outer && row > 0; ++o) {
      std::memcpy(y + o * row, x + o * plan.x_row + plan.offsets[k], row);
    }
  }
}

// ---- gradients -----------------------------------------------------------------------------

namespace {

class GetConcatGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    if (!HasGO(0)) return {};
    std::vector<std::string> grads;
    for (int i = 0; i < NumInputs(); ++i) grads.push_back(GI(i));
    return SingleGradientDef("Split", {GO(0), O(1)}, grads);
  }
};

// Split -> Concat of the output gradients. Caffe2 concatenates only the gradients that exist,
// which gives dX the wrong shape when some outputs have none; here each missing one is replaced
// by zeros (ConstantFill shaped like that output), and the forward args are copied to the Concat
// only.
class GetSplitGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  bool CopyArguments() const override { return copy_args_; }
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<std::string> grads;
    std::vector<OperatorDef> ops;
    bool any = false;
    for (int i = 0; i < NumOutputs(); ++i) any |= HasGO(i);
    if (!any) return {};
    for (int i = 0; i < NumOutputs(); ++i) {
      if (HasGO(i)) {
        grads.push_back(GO(i));
      } else {
        const std::string zero = "_" + O(i) + "_grad_zero";
        ops.push_back(MakeOperatorDef("ConstantFill", "", {O(i)}, {zero},
                                      {MakeArgument("value", 0.0f)}));
        grads.push_back(zero);
      }
    }
    const std::string dx = GI(0);
    OperatorDef concat = MakeOperatorDef("Concat", "", grads, {dx, "_" + dx + "_dims"});
    if (!ops.empty()) {
      copy_args_ = false;
      for (const auto& a : def_.arg()) *concat.add_arg() = a;
    }
    ops.push_back(concat);
    return ops;
  }

 private:
  bool copy_args_ = true;
};

std::vector<TensorShape> ConcatShapeInference(const OperatorDef& def,
                                              const std::vector<TensorShape>& in) {
  std::vector<std::vector<int64_t>> dims;
  for (const auto& s : in) dims.push_back(s.dims);
  ConcatShape s = ComputeConcatShape(dims, ParseConcatSplitAxis(ArgumentHelper(def)));
  return {TensorShape{s.dims, in[0].dtype},
          TensorShape{{static_cast<int64_t>(in.size())}, DataType::INT32}};
}

std::vector<TensorShape> SplitShapeInference(const OperatorDef& def,
                                             const std::vector<TensorShape>& in) {
  const int k = def.output_size();
  if (in.size() == 2) return std::vector<TensorShape>(k, TensorShape{{}, in[0].dtype, true});
  ArgumentHelper args(def);
  ConcatSplitAxis a = ParseConcatSplitAxis(args);
  auto lengths =
      ComputeSplitLengths(in[0].dims, a, k, args.GetRepeatedArgument<int64_t>("split"));
  const int nd = static_cast<int>(in[0].dims.size());
  const int axis = a.axis < 0 ? a.axis + nd : a.axis;
  std::vector<TensorShape> out;
  for (int i = 0; i < k; ++i) {
    TensorShape s{in[0].dims, in[0].dtype};
    if (a.add_axis) {
      s.dims.erase(s.dims.begin() + axis);
    } else {
      s.dims[axis] = lengths[i];
    }
    out.push_back(s);
  }
  return out;
}

// Pure data movement: every byte of the data input(s) is read once and written once.
OpCost CopyCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  OpCost c;
  const size_t n = def.type() == "Split" || def.type() == "DepthSplit" ? 1 : in.size();
  for (size_t i = 0; i < n && i < in.size(); ++i) {
    c.bytes_read += static_cast<double>(in[i].numel()) * DataTypeSize(in[i].dtype);
  }
  c.bytes_written = c.bytes_read;
  return c;
}

const char kConcatDoc[] =
    "Concatenates the inputs along `axis`. All inputs share one data type (any type: bytes are "
    "copied) and the same dims except along the axis. The second output, split_info, is a 1-D "
    "int32 CPU tensor with each input's extent along the axis (what the gradient Split needs). "
    "With add_axis=1 the inputs, which must all have the same shape, are stacked along a new "
    "axis inserted at `axis` (split_info is then all ones).";

const char kSplitDoc[] =
    "Splits X along `axis` into one piece per output. The lengths come from the `split` "
    "argument or from input 1 (a 1-D int32 CPU tensor), not both; without either, the axis is "
    "cut into equal parts (its size must be divisible by the number of outputs). Lengths must "
    "sum to the axis size. With add_axis=1 every length must be 1 and the axis is dropped from "
    "the outputs (the inverse of Concat with add_axis=1). Any data type. Gradient: Concat of the "
    "output gradients; an output without a gradient contributes zeros (Caffe2 would skip it and "
    "produce a wrongly shaped gradient).";

}  // namespace

REGISTER_CPU_OPERATOR(Concat, ConcatOp);
REGISTER_CPU_OPERATOR(DepthConcat, ConcatOp);
REGISTER_CPU_OPERATOR(Split, SplitOp);
REGISTER_CPU_OPERATOR(DepthSplit, SplitOp);
REGISTER_GRADIENT(Concat, GetConcatGradient);
REGISTER_GRADIENT(DepthConcat, GetConcatGradient);
REGISTER_GRADIENT(Split, GetSplitGradient);
REGISTER_GRADIENT(DepthSplit, GetSplitGradient);

#define HALFCAF_CONCAT_SCHEMA(type, doc)                                                    \
  OPERATOR_SCHEMA(type)                                                                     \
      .NumInputs(1, kAny)                                                                   \
      .NumOutputs(2)                                                                        \
      .TensorInferenceFunction(ConcatShapeInference)                                        \
      .CostInferenceFunction(CopyCost)                                                      \
      .SetDoc(doc)                                                                          \
      .Arg("axis", "int, default 1: the axis to concatenate along (negative counts from "   \
                   "the end); not together with `order`")                                   \
      .Arg("order", "string, \"NCHW\" (axis 1) or \"NHWC\" (axis 3); not with `axis`")      \
      .Arg("add_axis", "int, default 0: 1 stacks the inputs along a new axis")              \
      .Input(0, "X0", "first input; further inputs X1 ... follow")                          \
      .Output(0, "Y", "the concatenation")                                                  \
      .Output(1, "split_info", "int32 (number of inputs) on CPU: each input's extent")

HALFCAF_CONCAT_SCHEMA(Concat, kConcatDoc);
HALFCAF_CONCAT_SCHEMA(DepthConcat, "Alias of Concat (kept for old nets).");

#define HALFCAF_SPLIT_SCHEMA(type, doc)                                                     \
  OPERATOR_SCHEMA(type)                                                                     \
      .NumInputs(1, 2)                                                                      \
      .NumOutputs(1, kAny)                                                                  \
      .TensorInferenceFunction(SplitShapeInference)                                         \
      .CostInferenceFunction(CopyCost)                                                      \
      .SetDoc(doc)                                                                          \
      .Arg("axis", "int, default 1: the axis to split (negative counts from the end); not " \
                   "together with `order`")                                                 \
      .Arg("order", "string, \"NCHW\" (axis 1) or \"NHWC\" (axis 3); not with `axis`")      \
      .Arg("split", "ints: length of each piece; not together with input 1")                \
      .Arg("add_axis", "int, default 0: 1 removes the (length-1) axis from each piece")     \
      .Input(0, "X", "tensor to split")                                                     \
      .Input(1, "split", "optional 1-D int32 CPU tensor of lengths")                        \
      .Output(0, "Y0", "first piece; further pieces Y1 ... follow")

HALFCAF_SPLIT_SCHEMA(Split, kSplitDoc);
HALFCAF_SPLIT_SCHEMA(DepthSplit, "Alias of Split (kept for old nets).");

}  // namespace halfcaf
