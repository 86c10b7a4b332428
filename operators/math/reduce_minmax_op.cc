#include "operators/math/reduce_minmax_op.h"

#include <limits>
#include <string>

#include "core/float_io.h"
#include "core/gradient.h"
#include "operators/math/reduce_op.h"

namespace halfcaf {

ReduceLayout MakeReduceLayout(const std::vector<int64_t>& x_dims,
                              const std::vector<bool>& reduced) {
  HALFCAF_ENFORCE(x_dims.size() == reduced.size(), "reduce layout: ", x_dims.size(), " dims but ",
                  reduced.size(), " reduced flags");
  ReduceLayout l;
  // Row-major strides of X, then runs of one kind (kept / reduced) merged, innermost first.
  int64_t stride = 1;
  bool last_reduced = false, have_last = false;
  std::vector<int64_t>* dims = nullptr;
  std::vector<int64_t>* strides = nullptr;
  for (size_t i = x_dims.size(); i-- > 0;) {
    const int64_t d = x_dims[i];
    (reduced[i] ? l.count : l.outputs) *= d;
    if (d != 1) {
      if (have_last && last_reduced == reduced[i]) {
        dims->front() *= d;
      } else {
        dims = reduced[i] ? &l.reduced_dims : &l.kept_dims;
        strides = reduced[i] ? &l.reduced_strides : &l.kept_strides;
        dims->insert(dims->begin(), d);
        strides->insert(strides->begin(), stride);
        last_reduced = reduced[i];
        have_last = true;
      }
    }
    stride *= d;
  }
  return l;
}

MinMaxArgs::MinMaxArgs(const OperatorBase& op)
    : axes(op.GetRepeatedArgument<int>("axes")),
      keepdims(op.GetSingleArgument<int>("keepdims", 1) != 0) {
  CheckNoDuplicateAxes(axes);
}

MinMaxPlan PlanMinMax(const Tensor& X, const MinMaxArgs& a) {
  EnforceFloatType(X, "X");
  return MinMaxPlan{MakeReducePlan(X.dims(), a.axes, a.keepdims).out_dims,
                    MakeReduceLayout(X.dims(), ReducedDims(X.ndim(), a.axes))};
}

ReduceLayout PlanMinMaxGradient(const Tensor& dY, const Tensor& X, const Tensor& Y,
                                const MinMaxArgs& a) {
  EnforceFloatType(dY, "dY");
  EnforceFloatType(X, "X");
  EnforceFloatType(Y, "Y");
  const ReducePlan p = MakeReducePlan(X.dims(), a.axes, a.keepdims);
  for (const Tensor* t : {&dY, &Y}) {
    HALFCAF_ENFORCE(t->numel() == p.out_numel, t == &dY ? "dY" : "Y", " has dims ",
                    DimsString(t->dims()), " but reducing X ", DimsString(X.dims()), " over axes ",
                    DimsString(a.axes), " gives ", DimsString(p.out_dims));
  }
  return MakeReduceLayout(X.dims(), ReducedDims(X.ndim(), a.axes));
}

template <bool kMax>
void ReduceMinMaxOp<kMax>::RunOnDevice() {
  const Tensor& X = Input(0);
  const MinMaxPlan p = PlanMinMax(X, reduce_);
  const float* x = ReadAsFloat(X, &x_);
  // The extreme of an empty group is the identity of max / min.
  const float init =
      kMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  FindExtremes<kMax>(p.layout, x, init, &best_, &where_);
  const DataType dtype = X.dtype();
  Tensor* Y = Output(0, p.out_dims);
  FloatWriter y(Y, dtype, &y_);
  std::copy(best_.begin(), best_.end(), y.data());
  y.Commit();
}

template <bool kMax>
void ReduceMinMaxGradientOp<kMax>::RunOnDevice() {
  const Tensor& dY = Input(0);
  const Tensor& X = Input(1);
  const Tensor& Y = Input(2);
  const ReduceLayout l = PlanMinMaxGradient(dY, X, Y, reduce_);
  const float* dy = ReadAsFloat(dY, &dy_);
  const float* x = ReadAsFloat(X, &x_);
  const float* y = ReadAsFloat(Y, &y_);
  const DataType dtype = dY.dtype();
  Tensor* dX = Output(0, X.dims());
  FloatWriter dx(dX, dtype, &dx_);
  float* dxd = dx.data();
  ForEachReduced(l, [&](int64_t o, int64_t, int64_t xi) {
    dxd[xi] = GatedGradient(x[xi] == y[o], y[o], dy[o]);
  });
  dx.Commit();
}

namespace {

template <bool kMax>
class GetReduceMinMaxGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef(kMax ? "ReduceMaxGradient" : "ReduceMinGradient", {GO(0), I(0), O(0)},
                             {GI(0)});
  }
};

std::vector<TensorShape> ReduceMinMaxShape(const OperatorDef& def,
                                           const std::vector<TensorShape>& in) {
  ArgumentHelper args(def);
  const ReducePlan p = MakeReducePlan(in[0].dims, args.GetRepeatedArgument<int>("axes"),
                                      args.GetSingleArgument<int>("keepdims", 1) != 0);
  return {TensorShape{p.out_dims, in[0].dtype}};
}

// One comparison per element of X (forward) or per element of dX (gradient).
OpCost ReduceMinMaxCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  OpCost c;
  const TensorShape& x = in.at(0);
  c.flops = static_cast<double>(x.numel());
  c.bytes_read = static_cast<double>(x.numel()) * DataTypeSize(x.dtype);
  c.bytes_written =
      static_cast<double>(ReduceMinMaxShape(def, in)[0].numel()) * DataTypeSize(x.dtype);
  return c;
}

OpCost ReduceMinMaxGradientCost(const OperatorDef&, const std::vector<TensorShape>& in) {
  OpCost c;
  const TensorShape& x = in.at(1);
  c.flops = static_cast<double>(x.numel());
  c.bytes_read = static_cast<double>(in[0].numel() + in.at(2).numel()) * DataTypeSize(in[0].dtype) +
                 static_cast<double>(x.numel()) * DataTypeSize(x.dtype);
  c.bytes_written = static_cast<double>(x.numel()) * DataTypeSize(in[0].dtype);
  return c;
}

std::string MinMaxDoc(const char* what, const char* empty) {
  return MakeString("Takes the ", what,
                    " of X over `axes` (every dim when empty). keepdims=1 keeps the reduced dims "
                    "as size 1; keepdims=0 drops them. A NaN anywhere in a group makes that "
                    "result NaN; a group with no elements gives ",
                    empty, ". Float and float16.");
}

std::string MinMaxGradientDoc(const char* what) {
  return MakeString("Gradient of ", what,
                    ": dX is dY (of the element's group) wherever X equals the group's result Y, "
                    "and 0 elsewhere; all tied elements receive the full dY. NaN in Y or dY "
                    "stays NaN.");
}

}  // namespace

template class ReduceMinMaxOp<true>;
template class ReduceMinMaxOp<false>;
template class ReduceMinMaxGradientOp<true>;
template class ReduceMinMaxGradientOp<false>;

REGISTER_CPU_OPERATOR(ReduceMax, ReduceMinMaxOp<true>);
REGISTER_CPU_OPERATOR(ReduceMin, ReduceMinMaxOp<false>);
REGISTER_CPU_OPERATOR(ReduceMaxGradient, ReduceMinMaxGradientOp<true>);
REGISTER_CPU_OPERATOR(ReduceMinGradient, ReduceMinMaxGradientOp<false>);
REGISTER_GRADIENT(ReduceMax, GetReduceMinMaxGradient<true>);
REGISTER_GRADIENT(ReduceMin, GetReduceMinMaxGradient<false>);

#define HALFCAF_REDUCE_MINMAX_SCHEMA(type, what, empty)                                \
  OPERATOR_SCHEMA(type)                                                                \
      .NumInputs(1)                                                                    \
      .NumOutputs(1)                                                                   \
      .TensorInferenceFunction(ReduceMinMaxShape)                                      \
      .CostInferenceFunction(ReduceMinMaxCost)                                         \
      .SetDoc(MinMaxDoc(what, empty))                                                  \
      .Arg("axes", "ints: dims to reduce (negative counts from the end); empty = all") \
      .Arg("keepdims", "int, default 1: keep reduced dims as size 1")                  \
      .Input(0, "X", "input tensor (float or float16)")                                \
      .Output(0, "Y", "reduced tensor")

#define HALFCAF_REDUCE_MINMAX_GRADIENT_SCHEMA(type, what)           \
  OPERATOR_SCHEMA(type)                                             \
      .NumInputs(3)                                                 \
      .NumOutputs(1)                                                \
      .IdenticalTypeAndShapeOfInput(1)                              \
      .CostInferenceFunction(ReduceMinMaxGradientCost)              \
      .SetDoc(MinMaxGradientDoc(what))                              \
      .Arg("axes", "ints: the forward op's axes")                   \
      .Arg("keepdims", "int, default 1: the forward op's keepdims") \
      .Input(0, "dY", "gradient of the reduced output")             \
      .Input(1, "X", "forward input")                               \
      .Input(2, "Y", "forward output")                              \
      .Output(0, "dX", "gradient of X, X's shape, dY's dtype")

HALFCAF_REDUCE_MINMAX_SCHEMA(ReduceMax, "maximum", "-inf");
HALFCAF_REDUCE_MINMAX_SCHEMA(ReduceMin, "minimum", "+inf");
HALFCAF_REDUCE_MINMAX_GRADIENT_SCHEMA(ReduceMaxGradient, "ReduceMax");
HALFCAF_REDUCE_MINMAX_GRADIENT_SCHEMA(ReduceMinGradient, "ReduceMin");

}  // namespace halfcaf
