#include "operators/nn/fc_op.h"

#include <algorithm>
#include <initializer_list>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/math.h"
#ifdef HALFCAF_WITH_DNNL
#include "operators/math/gemm_dnnl.h"
#endif

namespace halfcaf {

FCShape ComputeFCShape(const std::vector<int64_t>& x_dims, const std::vector<int64_t>& w_dims,
                       int axis, int axis_w, bool transposed) {
  const int xn = static_cast<int>(x_dims.size()), wn = static_cast<int>(w_dims.size());
  HALFCAF_ENFORCE(axis >= -xn && axis < std::max(xn, 1), "axis ", axis,
                  " out of range for X with dims ", DimsString(x_dims));
  HALFCAF_ENFORCE(axis_w >= -wn && axis_w < std::max(wn, 1), "axis_w ", axis_w,
                  " out of range for W with dims ", DimsString(w_dims));
  if (axis < 0) axis += xn;
  if (axis_w < 0) axis_w += wn;
  FCShape s{1, 1, 1, axis};
  for (int i = 0; i < axis; ++i) s.M *= x_dims[i];
  for (int i = axis; i < xn; ++i) s.K *= x_dims[i];
  // FC: W is (N, K) split at axis_w; FCTransposed: (K, N).
  int64_t head = 1, tail = 1;
  for (int i = 0; i < axis_w; ++i) head *= w_dims[i];
  for (int i = axis_w; i < wn; ++i) tail *= w_dims[i];
  const int64_t wk = transposed ? head : tail;
  s.N = transposed ? tail : head;
  HALFCAF_ENFORCE(wk == s.K, "X has dims ", DimsString(x_dims), " (K = ", s.K, " from axis ",
                  axis, ") but W has dims ", DimsString(w_dims), " (K = ", wk,
                  transposed ? " before axis_w " : " from axis_w ", axis_w,
                  transposed ? ", W being (K, N) in FCTransposed" : "",
                  "): the inner dimensions must match");
  return s;
}

FCShape CheckFCInputs(const Tensor& X, const Tensor& W, const Tensor& B, int axis, int axis_w,
                      bool transposed) {
  // bfloat16 on CUDA too (fc_op_gpu.cc).
  EnforceFloatType(X, "X", true);
  EnforceFloatType(W, "W", true);
  EnforceFloatType(B, "b", true);
  const FCShape s = ComputeFCShape(X.dims(), W.dims(), axis, axis_w, transposed);
  HALFCAF_ENFORCE(B.numel() == s.N, "b has ", B.numel(), " elements (dims ",
                  DimsString(B.dims()), ") but W has N = ", s.N, " outputs");
  return s;
}

FCShape CheckFCGradientInputs(const Tensor& X, const Tensor& W, const Tensor& dY, int axis,
                              int axis_w, bool transposed) {
  EnforceFloatType(X, "X", true);
  EnforceFloatType(W, "W", true);
  EnforceFloatType(dY, "dY", true);
  const FCShape s = ComputeFCShape(X.dims(), W.dims(), axis, axis_w, transposed);
  HALFCAF_ENFORCE(dY.numel() == s.M * s.N, "dY has dims ", DimsString(dY.dims()),
                  " but FC output is ", s.M, " x ", s.N);
  return s;
}

std::vector<int64_t> FCOutputDims(const std::vector<int64_t>& x_dims, const FCShape& s) {
  std::vector<int64_t> y(x_dims.begin(), x_dims.begin() + s.axis);
  y.push_back(s.N);
  return y;
}

namespace {

bool AllBFloat16(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) {
    if (t->dtype() != DataType::BFLOAT16) return false;
  }
  return true;
}

// bfloat16 C = op(A) op(B) [+ bias] on oneDNN's BF16 kernels; false when they are off or absent
// (the caller computes in float).
bool BFloat16Gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const Tensor& A,
                  const Tensor& B, const float* bias, Tensor* C) {
#ifdef HALFCAF_WITH_DNNL
  return DnnlBFloat16Gemm(trans_a, trans_b, M, N, K, A.data<BFloat16>(), B.data<BFloat16>(), bias,
                          C->mutable_data<BFloat16>());
#else
  return false;
#endif
}

}  // namespace

template <bool kTransposed>
FCOpT<kTransposed>::FCOpT(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      axis_(GetSingleArgument<int>("axis", 1)),
      axis_w_(GetSingleArgument<int>("axis_w", 1)) {}

template <bool kTransposed>
void FCOpT<kTransposed>::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& W = Input(1);
  const Tensor& B = Input(2);
  const FCShape s = CheckFCInputs(X, W, B, axis_, axis_w_, kTransposed);
  Tensor* Y = Output(0, FCOutputDims(X.dims(), s));
  if (AllBFloat16({&X, &W, &B})) {
    // Y = X W^T (FC, W is N x K) or X W (FCTransposed, W is K x N), plus b, on oneDNN's BF16
    // kernels when the CPU has them.
    const float* b = ReadAsFloat(B, &b_);
    if (BFloat16Gemm(false, !kTransposed, s.M, s.N, s.K, X, W, b, Y)) return;
  }
  const float* x = ReadAsFloat(X, &x_);
  const float* w = ReadAsFloat(W, &w_);
  const float* b = ReadAsFloat(B, &b_);
  FloatWriter y(Y, X.dtype(), &y_);
  float* yd = y.data();
  for (int64_t i = 0; i < s.M; ++i) std::copy(b, b + s.N, yd + i * s.N);
  // FC: Y += X W^T with W (N, K); FCTransposed: Y += X W with W (K, N).
  math::Gemm(math::Trans::kNo, kTransposed ? math::Trans::kNo : math::Trans::kYes, s.M, s.N, s.K,
             1.f, x, w, 1.f, yd);
  y.Commit();
}

template <bool kTransposed>
FCGradientOpT<kTransposed>::FCGradientOpT(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      axis_(GetSingleArgument<int>("axis", 1)),
      axis_w_(GetSingleArgument<int>("axis_w", 1)) {}

template <bool kTransposed>
void FCGradientOpT<kTransposed>::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& W = Input(1);
  const Tensor& dY = Input(2);
  const FCShape s = CheckFCGradientInputs(X, W, dY, axis_, axis_w_, kTransposed);
  if (AllBFloat16({&X, &W, &dY}) && RunBFloat16(X, W, dY, s)) return;
  const float* x = ReadAsFloat(X, &x_);
  const float* w = ReadAsFloat(W, &w_);
  const float* dy = ReadAsFloat(dY, &dy_);
  using math::Trans;
  Tensor* dW = Output(0, W.dims());
  FloatWriter dw(dW, W.dtype(), &dw_);
  if (kTransposed) {
    // dW = X^T dY  (K x N)
    math::Gemm(Trans::kYes, Trans::kNo, s.K, s.N, s.M, 1.f, x, dy, 0.f, dw.data());
  } else {
    // dW = dY^T X  (N x K)
    math::Gemm(Trans::kYes, Trans::kNo, s.N, s.K, s.M, 1.f, dy, x, 0.f, dw.data());
  }
  // db = column sums of dY
  Tensor* dB = Output(1, {s.N});
  FloatWriter db(dB, W.dtype(), &db_);
  std::fill_n(db.data(), s.N, 0.f);
  for (int64_t i = 0; i < s.M; ++i) math::Axpy(s.N, 1.f, dy + i * s.N, db.data());
  // dX = dY W (FC) or dY W^T (FCTransposed)  (M x K)
  if (OutputSize() == 3) {
    Tensor* dX = Output(2, X.dims());
    FloatWriter dx(dX, X.dtype(), &dx_);
    math::Gemm(Trans::kNo, kTransposed ? Trans::kYes : Trans::kNo, s.M, s.K, s.N, 1.f, dy, w, 0.f,
               dx.data());
    dx.Commit();
  }
  dw.Commit();
  db.Commit();
}

template <bool kTransposed>
bool FCGradientOpT<kTransposed>::RunBFloat16(const Tensor& X, const Tensor& W, const Tensor& dY,
                                             const FCShape& s) {
  Tensor* dW = Output(0, W.dims());
  // dW = dY^T X (FC: N x K) or X^T dY (FCTransposed: K x N).
  const bool done = kTransposed ? BFloat16Gemm(true, false, s.K, s.N, s.M, X, dY, nullptr, dW)
                                : BFloat16Gemm(true, false, s.N, s.K, s.M, dY, X, nullptr, dW);
  if (!done) return false;
  // db = column sums of dY, in float, rounded once.
  const FloatIn dy(dY);
  db_.assign(static_cast<size_t>(s.N), 0.f);
  for (int64_t i = 0; i < s.M; ++i) math::Axpy(s.N, 1.f, dy.Read(i * s.N, s.N, 0), db_.data());
  Tensor* dB = Output(1, {s.N});
  FromFloatArray(db_.data(), dB->mutable_data<BFloat16>(), db_.size());
  // dX = dY W (FC) or dY W^T (FCTransposed).
  if (OutputSize() == 3) {
    Tensor* dX = Output(2, X.dims());
    HALFCAF_ENFORCE(BFloat16Gemm(false, kTransposed, s.M, s.K, s.N, dY, W, nullptr, dX),
                    "FCGradient: the bfloat16 product for dX failed after dW's ran");
  }
  return true;
}

template class FCOpT<false>;
template class FCOpT<true>;
template class FCGradientOpT<false>;
template class FCGradientOpT<true>;

namespace {

// FC -> FCGradient, FCTransposed -> FCTransposedGradient: (X, W, dY) -> (dW, db, dX).
class GetFCGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef(def_.type() + "Gradient", {I(0), I(1), GO(0)},
                             {GI(1), GI(2), GI(0)});
  }
};

// Both FC types and their gradients: the schema's type tells which view of W applies.
bool IsTransposedFC(const OperatorDef& def) {
  return def.type() == "FCTransposed" || def.type() == "FCTransposedGradient";
}

FCShape FCShapeOf(const OperatorDef& def, const std::vector<TensorShape>& in) {
  ArgumentHelper args(def);
  return ComputeFCShape(in[0].dims, in[1].dims, args.GetSingleArgument<int>("axis", 1),
                        args.GetSingleArgument<int>("axis_w", 1), IsTransposedFC(def));
}

std::vector<TensorShape> FCShapeInference(const OperatorDef& def,
                                          const std::vector<TensorShape>& in) {
  return {TensorShape{FCOutputDims(in[0].dims, FCShapeOf(def, in)), in[0].dtype}};
}

std::vector<TensorShape> FCGradientShapeInference(const OperatorDef& def,
                                                  const std::vector<TensorShape>& in) {
  const FCShape s = FCShapeOf(def, in);
  std::vector<TensorShape> out{TensorShape{in[1].dims, in[1].dtype},
                               TensorShape{{s.N}, in[1].dtype}};
  if (def.output_size() == 3) out.push_back(TensorShape{in[0].dims, in[0].dtype});
  return out;
}

OpCost FCCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  const FCShape s = FCShapeOf(def, in);
  OpCost c;
  c.flops = 2.0 * s.M * s.N * s.K;
  const double item = DataTypeSize(in[0].dtype);
  c.bytes_read = (s.M * s.K + s.N * s.K + s.N) * item;
  c.bytes_written = s.M * s.N * item;
  c.params_bytes = (s.N * s.K + s.N) * item;
  return c;
}

OpCost FCGradientCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  OpCost c = FCCost(def, in);
  c.flops *= 2;
  return c;
}

}  // namespace

REGISTER_CPU_OPERATOR(FC, FCOp);
REGISTER_CPU_OPERATOR(FCGradient, FCGradientOp);
REGISTER_GRADIENT(FC, GetFCGradient);
REGISTER_CPU_OPERATOR(FCTransposed, FCTransposedOp);
REGISTER_CPU_OPERATOR(FCTransposedGradient, FCTransposedGradientOp);
REGISTER_GRADIENT(FCTransposed, GetFCGradient);

OPERATOR_SCHEMA(FC)
    .NumInputs(3)
    .NumOutputs(1)
    .TensorInferenceFunction(FCShapeInference)
    .CostInferenceFunction(FCCost)
    .SetDoc("Fully connected layer: Y = X * W^T + b. X is viewed as a matrix (M, K) split at "
            "`axis`, W as (N, K) split at `axis_w`; Y has dims X.dims[:axis] + [N]. Float and "
            "float16 (float accumulation).")
    .Arg("axis", "int, default 1: where X's dims split into M and K")
    .Arg("axis_w", "int, default 1: where W's dims split into N and K")
    .Input(0, "X", "input, K = prod(dims[axis:])")
    .Input(1, "W", "weights (N, K)")
    .Input(2, "b", "bias (N)")
    .Output(0, "Y", "output X.dims[:axis] + [N]");

OPERATOR_SCHEMA(FCGradient)
    .NumInputs(3)
    .NumOutputs(2, 3)
    .TensorInferenceFunction(FCGradientShapeInference)
    .CostInferenceFunction(FCGradientCost)
    .SetDoc("Gradient of FC: dW = dY^T X, db = column sums of dY, dX = dY W (only when a third "
            "output is given).")
    .Input(0, "X", "forward input")
    .Input(1, "W", "forward weights")
    .Input(2, "dY", "gradient of Y")
    .Output(0, "dW", "gradient of W")
    .Output(1, "db", "gradient of b")
    .Output(2, "dX", "gradient of X (optional)");

OPERATOR_SCHEMA(FCTransposed)
    .NumInputs(3)
    .NumOutputs(1)
    .TensorInferenceFunction(FCShapeInference)
    .CostInferenceFunction(FCCost)
    .SetDoc("Fully connected layer with the weights stored transposed: Y = X * W + b. X is "
            "viewed as a matrix (M, K) split at `axis`, W as (K, N) split at `axis_w` (K = "
            "prod(W.dims[:axis_w]), N = prod(W.dims[axis_w:])); Y has dims X.dims[:axis] + [N]. "
            "Same arguments and dtypes as FC: float and float16 (float accumulation; on CUDA "
            "float16 runs on tensor cores, float as real FP32 math).")
    .Arg("axis", "int, default 1: where X's dims split into M and K")
    .Arg("axis_w", "int, default 1: where W's dims split into K and N")
    .Input(0, "X", "input, K = prod(dims[axis:])")
    .Input(1, "W", "weights (K, N)")
    .Input(2, "b", "bias (N)")
    .Output(0, "Y", "output X.dims[:axis] + [N]");

OPERATOR_SCHEMA(FCTransposedGradient)
    .NumInputs(3)
    .NumOutputs(2, 3)
    .TensorInferenceFunction(FCGradientShapeInference)
    .CostInferenceFunction(FCGradientCost)
    .SetDoc("Gradient of FCTransposed: dW = X^T dY (shape of W, viewed as (K, N)), db = column "
            "sums of dY, dX = dY W^T (only when a third output is given).")
    .Arg("axis", "int, default 1: as in the forward op")
    .Arg("axis_w", "int, default 1: as in the forward op")
    .Input(0, "X", "forward input")
    .Input(1, "W", "forward weights (K, N)")
    .Input(2, "dY", "gradient of Y")
    .Output(0, "dW", "gradient of W")
    .Output(1, "db", "gradient of b")
    .Output(2, "dX", "gradient of X (optional)");

}  // namespace halfcaf
