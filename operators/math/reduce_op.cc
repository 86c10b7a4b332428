#include "operators/math/reduce_op.h"

#include <algorithm>

#include "core/float_io.h"
#include "core/gradient.h"

namespace halfcaf {

namespace {

// Calls f(x_index, y_index) for every element of X, in X's order.
template <typename F>
void WalkReduce(const std::vector<int64_t>& x_dims, const std::vector<int64_t>& y_stride, F f) {
  const int nd = static_cast<int>(x_dims.size());
  int64_t n = 1;
  for (int64_t d : x_dims) n *= d;
  if (n == 0) return;
  if (nd == 0) {
    f(0, 0);
    return;
  }
  const int64_t inner = x_dims[nd - 1];
  const int64_t inner_stride = y_stride[nd - 1];
  std::vector<int64_t> index(nd, 0);
  int64_t y = 0;
  for (int64_t x = 0; x < n; x += inner) {
    for (int64_t j = 0; j < inner; ++j) f(x + j, y + j * inner_stride);
    for (int d = nd - 2; d >= 0; --d) {
      if (++index[d] < x_dims[d]) {
        y += y_stride[d];
        break;
      }
      y -= y_stride[d] * (x_dims[d] - 1);
      index[d] = 0;
    }
  }
}

}  // namespace

void CheckNoDuplicateAxes(const std::vector<int>& axes) {
  std::vector<int> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  HALFCAF_ENFORCE(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(), "axes ",
                  DimsString(axes), " lists a dim more than once");
}

std::vector<bool> ReducedDims(int ndim, const std::vector<int>& axes) {
  std::vector<bool> reduced(ndim, axes.empty());
  for (int a : axes) reduced[a < 0 ? a + ndim : a] = true;
  return reduced;
}

ReducePlan MakeReducePlan(const std::vector<int64_t>& x_dims, const std::vector<int>& axes,
                          bool keepdims) {
  const int nd = static_cast<int>(x_dims.size());
  std::vector<bool> reduced(nd, axes.empty());
  for (int a : axes) {
    HALFCAF_ENFORCE(a >= -nd && a < nd, "axes ", DimsString(axes), ": axis ", a,
                    " is out of range for X with dims ", DimsString(x_dims));
    const int c = a < 0 ? a + nd : a;
    HALFCAF_ENFORCE(!reduced[c], "axes ", DimsString(axes), " lists dim ", c, " more than once");
    reduced[c] = true;
  }
  ReducePlan p;
  p.y_stride.assign(nd, 0);
  int64_t stride = 1;
  for (int d = nd - 1; d >= 0; --d) {
    if (reduced[d]) {
      p.count *= x_dims[d];
    } else {
      p.y_stride[d] = stride;
      stride *= x_dims[d];
    }
  }
  p.out_numel = stride;
  for (int d = 0; d < nd; ++d) {
    if (!reduced[d]) {
      p.out_dims.push_back(x_dims[d]);
    } else if (keepdims) {
      p.out_dims.push_back(1);
    }
  }
  return p;
}

template <bool kMean>
ReduceOp<kMean>::ReduceOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      axes_(GetRepeatedArgument<int>("axes")),
      keepdims_(GetSingleArgument<int>("keepdims", 1) != 0) {
  CheckNoDuplicateAxes(axes_);
}

template <bool kMean>
void ReduceOp<kMean>::RunOnDevice() {
  const Tensor& X = Input(0);
  EnforceFloatType(X, "X");
  const ReducePlan p = MakeReducePlan(X.dims(), axes_, keepdims_);
  const float* x = ReadAsFloat(X, &x_);
  acc_.assign(static_cast<size_t>(p.out_numel), 0.0);
  double* acc = acc_.data();
  WalkReduce(X.dims(), p.y_stride, [&](int64_t xi, int64_t yi) { acc[yi] += x[xi]; });
  const DataType dtype = X.dtype();
  Tensor* Y = Output(0, p.out_dims);
  FloatWriter y(Y, dtype, &y_);
  float* yd = y.data();
  // The mean of an empty set is NaN (0 / 0), as in NumPy.
  const double scale = kMean ? 1.0 / static_cast<double>(p.count) : 1.0;
  for (int64_t i = 0; i < p.out_numel; ++i) {
    yd[i] = static_cast<float>(kMean && p.count == 0 ? acc[i] / 0.0 : acc[i] * scale);
  }
  y.Commit();
}

template <bool kMean>
ReduceGradientOp<kMean>::ReduceGradientOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      axes_(GetRepeatedArgument<int>("axes")),
      keepdims_(GetSingleArgument<int>("keepdims", 1) != 0) {
  CheckNoDuplicateAxes(axes_);
}

template <bool kMean>
void ReduceGradientOp<kMean>::RunOnDevice() {
  const Tensor& dY = Input(0);
  const Tensor& X = Input(1);
  EnforceFloatType(dY, "dY");
  const ReducePlan p = MakeReducePlan(X.dims(), axes_, keepdims_);
  HALFCAF_ENFORCE(dY.numel() == p.out_numel, "dY has dims ", DimsString(dY.dims()),
                  " but reducing X ", DimsString(X.dims()), " over axes ", DimsString(axes_),
                  " gives ", DimsString(p.out_dims));
  const float* dy = ReadAsFloat(dY, &dy_);
  const DataType dtype = dY.dtype();
  Tensor* dX = Output(0, X.dims());
  FloatWriter dx(dX, dtype, &dx_);
  float* dxd = dx.data();
  const float scale = kMean ? 1.f / static_cast<float>(std::max<int64_t>(p.count, 1)) : 1.f;
  WalkReduce(X.dims(), p.y_stride, [&](int64_t xi, int64_t yi) { dxd[xi] = dy[yi] * scale; });
  dx.Commit();
}

namespace {

template <bool kMean>
class GetReduceGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef(kMean ? "ReduceMeanGradient" : "ReduceSumGradient",
                             {GO(0), I(0), O(0)}, {GI(0)});
  }
};

std::vector<TensorShape> ReduceShapeInference(const OperatorDef& def,
                                              const std::vector<TensorShape>& in) {
  ArgumentHelper args(def);
  ReducePlan p = MakeReducePlan(in[0].dims, args.GetRepeatedArgument<int>("axes"),
                                args.GetSingleArgument<int>("keepdims", 1) != 0);
  return {TensorShape{p.out_dims, in[0].dtype}};
}

OpCost ReduceCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  OpCost c;
  const TensorShape& x = in.at(0);
  c.flops = static_cast<double>(x.numel());
  c.bytes_read = static_cast<double>(x.numel()) * DataTypeSize(x.dtype);
  c.bytes_written = static_cast<double>(ReduceShapeInference(def, in)[0].numel()) *
                    DataTypeSize(x.dtype);
  return c;
}

OpCost ReduceGradientCost(const OperatorDef&, const std::vector<TensorShape>& in) {
  OpCost c;
  const TensorShape& x = in.at(1);
  c.flops = static_cast<double>(x.numel());
  c.bytes_read = static_cast<double>(in[0].numel()) * DataTypeSize(in[0].dtype);
  c.bytes_written = static_cast<double>(x.numel()) * DataTypeSize(in[0].dtype);
  return c;
}

}  // namespace

template class ReduceOp<false>;
template class ReduceOp<true>;
template class ReduceGradientOp<false>;
template class ReduceGradientOp<true>;

REGISTER_CPU_OPERATOR(ReduceSum, ReduceOp<false>);
REGISTER_CPU_OPERATOR(ReduceMean, ReduceOp<true>);
REGISTER_CPU_OPERATOR(ReduceSumGradient, ReduceGradientOp<false>);
REGISTER_CPU_OPERATOR(ReduceMeanGradient, ReduceGradientOp<true>);
REGISTER_GRADIENT(ReduceSum, GetReduceGradient<false>);
REGISTER_GRADIENT(ReduceMean, GetReduceGradient<true>);

#define HALFCAF_REDUCE_SCHEMA(type, what)                                                   \
  OPERATOR_SCHEMA(type)                                                                     \
      .NumInputs(1)                                                                         \
      .NumOutputs(1)                                                                        \
      .TensorInferenceFunction(ReduceShapeInference)                                        \
      .CostInferenceFunction(ReduceCost)                                                    \
      .SetDoc("Computes the " what " of X over `axes` (all dims when empty). With "         \
              "keepdims=1 the reduced dims stay as size 1, otherwise they are removed. Float " \
              "and float16 (accumulated in double).")                                       \
      .Arg("axes", "ints: dims to reduce (negative counts from the end); empty = all")      \
      .Arg("keepdims", "int, default 1: keep reduced dims as size 1")                       \
      .Input(0, "X", "input tensor")                                                        \
      .Output(0, "Y", "reduced tensor")

#define HALFCAF_REDUCE_GRADIENT_SCHEMA(type, what)                                          \
  OPERATOR_SCHEMA(type)                                                                     \
      .NumInputs(3)                                                                         \
      .NumOutputs(1)                                                                        \
      .IdenticalTypeAndShapeOfInput(1)                                                      \
      .CostInferenceFunction(ReduceGradientCost)                                            \
      .SetDoc("Gradient of " what ": dY spread back over the reduced dims of X.")           \
      .Arg("axes", "ints: the forward op's axes")                                           \
      .Arg("keepdims", "int, default 1: the forward op's keepdims")                         \
      .Input(0, "dY", "gradient of the reduced output")                                     \
      .Input(1, "X", "forward input (gives dX's shape)")                                    \
      .Input(2, "Y", "forward output (unused; kept for Caffe2 compatibility)")              \
      .Output(0, "dX", "gradient of X")

HALFCAF_REDUCE_SCHEMA(ReduceSum, "sum");
HALFCAF_REDUCE_SCHEMA(ReduceMean, "mean");
HALFCAF_REDUCE_GRADIENT_SCHEMA(ReduceSumGradient, "ReduceSum (dX = dY broadcast)");
HALFCAF_REDUCE_GRADIENT_SCHEMA(ReduceMeanGradient,
                               "ReduceMean (dX = dY broadcast / number of reduced elements)");

}  // namespace halfcaf
