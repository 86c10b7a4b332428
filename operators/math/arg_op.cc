#include "operators/math/arg_op.h"

#include <algorithm>
#include <string>

#include "core/float_io.h"
#include "core/gradient.h"

namespace halfcaf {

ArgPlan MakeArgPlan(const std::vector<int64_t>& x_dims, int axis, bool keepdims,
                    const std::string& op) {
  const int nd = static_cast<int>(x_dims.size());
  HALFCAF_ENFORCE(axis >= -nd && axis < nd, op, ": axis ", axis,
                  " is out of range for X with dims ", DimsString(x_dims), " (expected ", -nd,
                  " <= axis < ", nd, ")");
  const int a = axis < 0 ? axis + nd : axis;
  HALFCAF_ENFORCE(x_dims[a] > 0, op, ": X ", DimsString(x_dims), " is empty along axis ", a,
                  ", so there is no index to return");
  ArgPlan p;
  std::vector<bool> reduced(nd, false);
  reduced[a] = true;
  p.layout = MakeReduceLayout(x_dims, reduced);
  for (int d = 0; d < nd; ++d) {
    if (d != a) {
      p.out_dims.push_back(x_dims[d]);
    } else if (keepdims) {
      p.out_dims.push_back(1);
    }
  }
  return p;
}

void EnforceArgInputType(const Tensor& X, const std::string& op) {
  const DataType t = X.dtype();
  HALFCAF_ENFORCE(t == DataType::FLOAT || t == DataType::FLOAT16 || t == DataType::INT32 ||
                      t == DataType::INT64,
                  op, ": X must be float, float16, int32 or int64, got ", X.DebugString());
}

template <bool kMax>
ArgOp<kMax>::ArgOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      axis_(GetSingleArgument<int>("axis", -1)),
      keepdims_(GetSingleArgument<int>("keepdims", 1) != 0),
      select_last_index_(GetSingleArgument<int>("select_last_index", 0) != 0) {}

template <bool kMax>
template <typename T>
void ArgOp<kMax>::Run(const ReduceLayout& l, const T* x, std::vector<T>* best, int64_t* y) {
  FindExtremes<kMax>(l, x, T{}, best, &where_, select_last_index_);
  std::copy(where_.begin(), where_.end(), y);
}

template <bool kMax>
void ArgOp<kMax>::RunOnDevice() {
  const Tensor& X = Input(0);
  EnforceArgInputType(X, DebugName());
  const ArgPlan p = MakeArgPlan(X.dims(), axis_, keepdims_, DebugName());
  Tensor* out = Output(0, p.out_dims);
  int64_t* y = out->mutable_data<int64_t>();
  switch (X.dtype()) {
    case DataType::INT32:
      Run(p.layout, X.data<int32_t>(), &best_int32_, y);
      break;
    case DataType::INT64:
      Run(p.layout, X.data<int64_t>(), &best_int64_, y);
      break;
    default:
      Run(p.layout, ReadAsFloat(X, &x_), &best_float_, y);
      break;
  }
}

template class ArgOp<true>;
template class ArgOp<false>;

namespace {

std::vector<TensorShape> ArgShape(const OperatorDef& def, const std::vector<TensorShape>& in) {
  ArgumentHelper args(def);
  const ArgPlan p = MakeArgPlan(in[0].dims, args.GetSingleArgument<int>("axis", -1),
                                args.GetSingleArgument<int>("keepdims", 1) != 0, def.type());
  return {TensorShape{p.out_dims, DataType::INT64}};
}

OpCost ArgCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  OpCost c;
  const TensorShape& x = in.at(0);
  c.flops = static_cast<double>(x.numel());
  c.bytes_read = static_cast<double>(x.numel()) * DataTypeSize(x.dtype);
  c.bytes_written = static_cast<double>(ArgShape(def, in)[0].numel()) * sizeof(int64_t);
  return c;
}

std::string ArgDoc(const char* what, const char* nan) {
  return MakeString("Index (int64) along `axis` of the ", what,
                    " element of X, for every position of the other dims. keepdims=1 leaves the "
                    "axis in place as size 1, keepdims=0 removes it. Ties go to the lowest "
                    "index, or to the highest with select_last_index=1; NaN counts as ",
                    nan,
                    " than any number and NaNs tie with each other. X: float, float16, int32 or "
                    "int64, non-empty along the axis. Not differentiable (asking for its gradient "
                    "is an error).");
}

}  // namespace

REGISTER_CPU_OPERATOR(ArgMax, ArgOp<true>);
REGISTER_CPU_OPERATOR(ArgMin, ArgOp<false>);
SHOULD_NOT_DO_GRADIENT(ArgMax);
SHOULD_NOT_DO_GRADIENT(ArgMin);

#define HALFCAF_ARG_SCHEMA(type, what, nan)                                             \
  OPERATOR_SCHEMA(type)                                                                 \
      .NumInputs(1)                                                                     \
      .NumOutputs(1)                                                                    \
      .TensorInferenceFunction(ArgShape)                                                \
      .CostInferenceFunction(ArgCost)                                                   \
      .SetDoc(ArgDoc(what, nan))                                                        \
      .Arg("axis", "int, default -1: the dim to search (negative counts from the end)") \
      .Arg("keepdims", "int, default 1: keep the axis as size 1")                       \
      .Arg("select_last_index",                                                         \
           "int, default 0: 1 returns the last of tied elements instead of the first "  \
           "(a halfcaf extension for ONNX's attribute of that name; Caffe2 has none)")  \
      .Input(0, "X", "input tensor")                                                    \
      .Output(0, "Indices", "int64 indices along the axis")

HALFCAF_ARG_SCHEMA(ArgMax, "largest", "larger");
HALFCAF_ARG_SCHEMA(ArgMin, "smallest", "smaller");

}  // namespace halfcaf
