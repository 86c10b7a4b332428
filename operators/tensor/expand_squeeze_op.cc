#include "operators/tensor/expand_squeeze_op.h"

#include <algorithm>

#include "core/gradient.h"

namespace halfcaf {

std::vector<int> CanonicalSqueezeDims(std::vector<int> dims, const std::string& op) {
  HALFCAF_ENFORCE(!dims.empty(), op, ": the `dims` argument is required");
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  HALFCAF_ENFORCE(dims.front() >= 0, op, ": dims ", DimsString(dims),
                  " must be >= 0 (negative positions are not supported)");
  return dims;
}

std::vector<int64_t> ExpandDimsShape(const std::vector<int64_t>& x_dims,
                                     const std::vector<int>& dims, const std::string& op) {
  const size_t out_nd = x_dims.size() + dims.size();
  HALFCAF_ENFORCE(static_cast<size_t>(dims.back()) < out_nd, op, ": cannot insert dims ",
                  DimsString(dims), " into X with dims ", DimsString(x_dims), ": the result has ",
                  out_nd, " dims, so positions must be < ", out_nd);
  std::vector<int64_t> out;
  auto next = x_dims.begin();
  for (size_t pos = 0; pos < out_nd; ++pos) {
    const bool inserted = std::binary_search(dims.begin(), dims.end(), static_cast<int>(pos));
    out.push_back(inserted ? 1 : *next++);
  }
  return out;
}

std::vector<int64_t> SqueezeShape(const std::vector<int64_t>& x_dims, const std::vector<int>& dims,
                                  const std::string& op) {
  HALFCAF_ENFORCE(static_cast<size_t>(dims.back()) < x_dims.size(), op, ": cannot squeeze dims ",
                  DimsString(dims), " of X with dims ", DimsString(x_dims), " (only ",
                  x_dims.size(), " dims)");
  std::vector<int64_t> out;
  for (size_t pos = 0; pos < x_dims.size(); ++pos) {
    if (!std::binary_search(dims.begin(), dims.end(), static_cast<int>(pos))) {
      out.push_back(x_dims[pos]);
      continue;
    }
    HALFCAF_ENFORCE(x_dims[pos] == 1, op, ": dim ", pos, " of X ", DimsString(x_dims), " has size ",
                    x_dims[pos], "; only size-1 dims can be squeezed");
  }
  return out;
}

namespace {

template <bool kExpand>
std::vector<int64_t> NewDims(const std::vector<int64_t>& x_dims, const std::vector<int>& dims,
                             const std::string& op) {
  return kExpand ? ExpandDimsShape(x_dims, dims, op) : SqueezeShape(x_dims, dims, op);
}

}  // namespace

template <bool kExpand>
ExpandSqueezeOp<kExpand>::ExpandSqueezeOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      dims_(CanonicalSqueezeDims(GetRepeatedArgument<int>("dims"), DebugName())) {}

template <bool kExpand>
void ExpandSqueezeOp<kExpand>::RunOnDevice() {
  const Tensor& X = Input(0);
  std::vector<int64_t> dims = NewDims<kExpand>(X.dims(), dims_, DebugName());
  Tensor* Y = Output(0);
  if (Y != &X) Y->CopyFrom(X);
  Y->Reshape(std::move(dims));
}

template class ExpandSqueezeOp<true>;
template class ExpandSqueezeOp<false>;

namespace {

// Each is the other's gradient, with the same dims (copied with the arguments).
template <bool kExpand>
class GetExpandSqueezeGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef(kExpand ? "Squeeze" : "ExpandDims", {GO(0)}, {GI(0)});
  }
};

template <bool kExpand>
std::vector<TensorShape> ExpandSqueezeShape(const OperatorDef& def,
                                            const std::vector<TensorShape>& in) {
  const std::vector<int> dims =
      CanonicalSqueezeDims(ArgumentHelper(def).GetRepeatedArgument<int>("dims"), def.type());
  return {TensorShape{NewDims<kExpand>(in[0].dims, dims, def.type()), in[0].dtype}};
}

}  // namespace

REGISTER_CPU_OPERATOR(ExpandDims, ExpandSqueezeOp<true>);
REGISTER_CPU_OPERATOR(Squeeze, ExpandSqueezeOp<false>);
REGISTER_GRADIENT(ExpandDims, GetExpandSqueezeGradient<true>);
REGISTER_GRADIENT(Squeeze, GetExpandSqueezeGradient<false>);

OPERATOR_SCHEMA(ExpandDims)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(ExpandSqueezeShape<true>)
    .PointwiseCost(0)
    .SetDoc(
        "Inserts size-1 dims: `dims` are their positions in the output, e.g. X [3, 4, 5] "
        "with dims [0, 4] gives [1, 3, 4, 5, 1]. Repeated entries count once. The elements "
        "are unchanged; in place only the dims change. Any data type. Gradient: Squeeze "
        "with the same dims.")
    .Arg("dims", "ints, required: positions (>= 0) of the new size-1 dims in the output")
    .Input(0, "data", "tensor of any shape")
    .Output(0, "expanded", "data with the new dims");

OPERATOR_SCHEMA(Squeeze)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(ExpandSqueezeShape<false>)
    .PointwiseCost(0)
    .SetDoc(
        "Removes the size-1 dims at positions `dims` (each must have size 1); the inverse "
        "of ExpandDims with the same dims. Repeated entries count once. The elements are "
        "unchanged; in place only the dims change. Any data type. Gradient: ExpandDims with "
        "the same dims.")
    .Arg("dims", "ints, required: positions (>= 0) of the dims to remove")
    .Input(0, "data", "tensor with size 1 at every position in dims")
    .Output(0, "squeezed", "data without those dims");

}  // namespace halfcaf
