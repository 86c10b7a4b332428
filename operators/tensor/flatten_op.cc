#include "operators/tensor/flatten_op.h"

#include "core/gradient.h"

namespace halfcaf {

std::vector<int64_t> FlattenDims(const std::vector<int64_t>& dims, int axis) {
  const int nd = static_cast<int>(dims.size());
  HALFCAF_ENFORCE(axis >= -nd && axis <= nd, "Flatten axis ", axis, " is out of range for X ",
                  DimsString(dims), " (valid: ", -nd, " to ", nd, ")");
  if (axis < 0) axis += nd;
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= dims[i];
  for (int i = axis; i < nd; ++i) inner *= dims[i];
  return {outer, inner};
}

void CopyWithDims(const Tensor& src, std::vector<int64_t> dims, Tensor* dst) {
  if (dst != &src) dst->CopyFrom(src);
  dst->Reshape(std::move(dims));
}

FlattenOp::FlattenOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), axis_(GetSingleArgument<int>("axis", 1)) {}

void FlattenOp::RunOnDevice() {
  const Tensor& X = Input(0);
  CopyWithDims(X, FlattenDims(X.dims(), axis_), Output(0));
}

void ResizeLikeOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& like = Input(1);
  HALFCAF_ENFORCE(X.numel() == like.numel(), "ResizeLike: data ", X.DebugString(), " has ",
                  X.numel(), " elements but the shape input ", like.DebugString(), " has ",
                  like.numel());
  CopyWithDims(X, like.dims(), Output(0));
}

namespace {

class GetFlattenGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("ResizeLike", {GO(0), I(0)}, {GI(0)});
  }
};

OpCost CopyFirstInputCost(const OperatorDef&, const std::vector<TensorShape>& in) {
  OpCost c;
  c.bytes_read = static_cast<double>(in.at(0).numel()) * DataTypeSize(in[0].dtype);
  c.bytes_written = c.bytes_read;
  return c;
}

}  // namespace

REGISTER_CPU_OPERATOR(Flatten, FlattenOp);
REGISTER_CPU_OPERATOR(ResizeLike, ResizeLikeOp);
REGISTER_GRADIENT(Flatten, GetFlattenGradient);

OPERATOR_SCHEMA(Flatten)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      ArgumentHelper args(def);
      return std::vector<TensorShape>{
          {FlattenDims(in[0].dims, args.GetSingleArgument<int>("axis", 1)), in[0].dtype}};
    })
    .CostInferenceFunction(CopyFirstInputCost)
    .SetDoc("Flattens X into a matrix: the dims before `axis` become the rows, the rest the "
            "columns. Any data type. Gradient: ResizeLike(dY, X).")
    .Arg("axis", "int, default 1: first dim of the columns (0..ndim; negative counts from the "
                 "end)")
    .Input(0, "X", "tensor of any shape")
    .Output(0, "Y", "(prod(X.dims[:axis]), prod(X.dims[axis:]))");

OPERATOR_SCHEMA(ResizeLike)
    .NumInputs(2)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return std::vector<TensorShape>{{in[1].dims, in[0].dtype}};
    })
    .CostInferenceFunction(CopyFirstInputCost)
    .SetDoc("Copies `data` and gives it the dims of `like` (element counts must match). Any "
            "data type. Used as the gradient of Flatten.")
    .Input(0, "data", "values to copy")
    .Input(1, "like", "tensor whose dims the output takes")
    .Output(0, "Y", "data's values with like's dims");

}  // namespace halfcaf
