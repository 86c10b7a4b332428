#include "operators/tensor/reshape_op.h"

#include "core/checked_math.h"
#include "core/gradient.h"

namespace halfcaf {

std::vector<int64_t> ComputeReshapeDims(const std::vector<int64_t>& in_dims,
                                        const std::vector<int64_t>& shape) {
  std::vector<int64_t> out(shape.size());
  int infer = -1;
  int64_t known = 1;
  const int64_t total = CheckedNumel(in_dims, "input");
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t s = shape[i];
    if (s == -1) {
      HALFCAF_ENFORCE(infer < 0, "new shape ", DimsString(shape),
                      " has more than one -1 (at most one dim can be inferred)");
      infer = static_cast<int>(i);
      continue;
    }
    HALFCAF_ENFORCE(s >= 0, "new shape ", DimsString(shape), " has the invalid entry ", s,
                    " (entries are sizes, 0 = keep the input dim, or -1 = infer)");
    if (s == 0) {
      HALFCAF_ENFORCE(i < in_dims.size(), "new shape ", DimsString(shape), " has 0 at position ",
                      i, " (keep the input dim) but the input ", DimsString(in_dims), " has only ",
                      in_dims.size(), " dims");
      out[i] = in_dims[i];
    } else {
      out[i] = s;
    }
    known = CheckedMul(known, out[i], "new shape ", DimsString(shape));
  }
  if (infer >= 0) {
    HALFCAF_ENFORCE(known != 0, "cannot infer the -1 in new shape ", DimsString(shape),
                    " for input ", DimsString(in_dims), ": the other dims multiply to 0");
    HALFCAF_ENFORCE(total % known == 0, "cannot reshape input ", DimsString(in_dims), " (",
                    total, " elements) to ", DimsString(shape), ": ", total,
                    " is not a multiple of ", known);
    out[infer] = total / known;
  } else {
    HALFCAF_ENFORCE(known == total, "cannot reshape input ", DimsString(in_dims), " (", total,
                    " elements) to ", DimsString(shape), " (", known,
                    " elements): the sizes do not match");
  }
  return out;
}

ReshapeOp::ReshapeOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), shape_(GetRepeatedArgument<int64_t>("shape")) {
  const bool has_arg = HasArgument("shape");
  HALFCAF_ENFORCE(has_arg != (InputSize() == 2),
                  has_arg ? "the new shape is given both as the `shape` argument and as input 1; "
                            "give exactly one"
                          : "no new shape: give the `shape` argument or a shape tensor as "
                            "input 1");
}

void ReshapeOp::RunOnDevice() {
  DataType shape_type = DataType::INT64;
  if (InputSize() == 2) {
    const Tensor& S = CPUInput(1);
    HALFCAF_ENFORCE(S.ndim() == 1 && (S.dtype() == DataType::INT32 ||
                                      S.dtype() == DataType::INT64),
                    "the shape input must be a 1-D int32 or int64 tensor, got ", S.DebugString());
    shape_type = S.dtype();
    requested_.resize(S.numel());
    for (int64_t i = 0; i < S.numel(); ++i) {
      requested_[i] = shape_type == DataType::INT32 ? S.data<int32_t>()[i] : S.data<int64_t>()[i];
    }
  } else {
    requested_ = shape_;
  }
  const Tensor& X = Input(0);
  const std::vector<int64_t> old_dims = X.dims();
  std::vector<int64_t> new_dims = ComputeReshapeDims(old_dims, requested_);

  Tensor* old_shape = Output(1, {static_cast<int64_t>(old_dims.size())});
  if (shape_type == DataType::INT32) {
    int32_t* p = old_shape->mutable_data<int32_t>();
    for (size_t i = 0; i < old_dims.size(); ++i) p[i] = static_cast<int32_t>(old_dims[i]);
  } else {
    int64_t* p = old_shape->mutable_data<int64_t>();
    for (size_t i = 0; i < old_dims.size(); ++i) p[i] = old_dims[i];
  }
  Tensor* Y = Output(0);
  if (Y != &X) Y->CopyFrom(X);
  Y->Reshape(std::move(new_dims));
}

namespace {

class GetReshapeGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  bool CopyArguments() const override { return false; }
  std::vector<OperatorDef> GetGradientDefs() override {
    const std::string dx = GI(0);
    return SingleGradientDef("Reshape", {GO(0), O(1)}, {dx, "_" + dx + "_dims"});
  }
};

std::vector<TensorShape> ReshapeShapeInference(const OperatorDef& def,
                                               const std::vector<TensorShape>& in) {
  const TensorShape old_shape{{static_cast<int64_t>(in[0].dims.size())},
                              in.size() == 2 ? in[1].dtype : DataType::INT64};
  if (in.size() == 2) return {TensorShape{{}, in[0].dtype, true}, old_shape};
  ArgumentHelper args(def);
  return {TensorShape{ComputeReshapeDims(in[0].dims, args.GetRepeatedArgument<int64_t>("shape")),
                      in[0].dtype},
          old_shape};
}

}  // namespace

REGISTER_CPU_OPERATOR(Reshape, ReshapeOp);
REGISTER_GRADIENT(Reshape, GetReshapeGradient);

OPERATOR_SCHEMA(Reshape)
    .NumInputs(1, 2)
    .NumOutputs(2)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(ReshapeShapeInference)
    .CostInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      OpCost c;
      c.bytes_read = static_cast<double>(in.at(0).numel()) * DataTypeSize(in[0].dtype);
      c.bytes_written = c.bytes_read;
      return c;
    })
    .SetDoc("Gives X new dims with the same elements in the same order. The new shape comes "
            "from the `shape` argument or from input 1, exactly one of them; an entry 0 keeps "
            "X's dim at that position and one entry may be -1, inferred from the element count. "
            "The second output records X's original dims for the gradient. Any data type; may "
            "run in place.")
    .Arg("shape", "ints: the new shape (0 = keep, -1 = infer); not together with input 1")
    .Input(0, "X", "tensor of any shape")
    .Input(1, "new_shape", "optional 1-D int32/int64 CPU tensor: the new shape")
    .Output(0, "reshaped", "X with the new dims")
    .Output(1, "old_shape", "1-D: X's original dims (int64, or the shape input's type)");

}  // namespace halfcaf
