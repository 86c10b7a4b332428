#include "operators/math/matmul_op.h"

#include "core/checked_math.h"
#include "core/float_io.h"
#include "core/gradient.h"
#include "core/operator.h"

namespace halfcaf {

namespace {

// Rows and columns of `dims` viewed as a matrix split at `axis` (Caffe2's axis range: -n to
// n - 1 for n dims).
struct MatrixView {
  int64_t rows = 1, cols = 1;
};

MatrixView ViewAsMatrix(const std::vector<int64_t>& dims, int axis, const char* name,
                        const char* arg, const std::string& op) {
  const int n = static_cast<int>(dims.size());
  HALFCAF_ENFORCE(n > 0, op, ": ", name, " must have at least one dim to be viewed as a matrix");
  HALFCAF_ENFORCE(axis >= -n && axis < n, op, ": ", arg, " ", axis, " is out of range for ", name,
                  " ", DimsString(dims), " (valid: ", -n, " to ", n - 1, ")");
  const int split = axis < 0 ? axis + n : axis;
  MatrixView v;
  for (int i = 0; i < n; ++i) (i < split ? v.rows : v.cols) *= dims[i];
  return v;
}

}  // namespace

MatMulShape ComputeMatMulShape(const std::vector<int64_t>& a_dims,
                               const std::vector<int64_t>& b_dims, int axis_a, int axis_b,
                               bool trans_a, bool trans_b, const std::vector<int64_t>* like_dims,
                               const std::string& op) {
  const MatrixView a = ViewAsMatrix(a_dims, axis_a, "A", "axis_a", op);
  const MatrixView b = ViewAsMatrix(b_dims, axis_b, "B", "axis_b", op);
  MatMulShape s;
  s.trans_a = trans_a ? math::Trans::kYes : math::Trans::kNo;
  s.trans_b = trans_b ? math::Trans::kYes : math::Trans::kNo;
  s.M = trans_a ? a.cols : a.rows;
  s.K = trans_a ? a.rows : a.cols;
  const int64_t kb = trans_b ? b.cols : b.rows;
  s.N = trans_b ? b.rows : b.cols;
  HALFCAF_ENFORCE(s.K == kb, op, ": the inner dims differ: ", trans_a ? "A^T" : "A", " is ", s.M,
                  " x ", s.K, " but ", trans_b ? "B^T" : "B", " is ", kb, " x ", s.N, " (A ",
                  DimsString(a_dims), " split at axis_a ", axis_a, ", B ", DimsString(b_dims),
                  " split at axis_b ", axis_b, ")");
  s.out_dims = {s.M, s.N};
  const int64_t y_numel = CheckedNumel(s.out_dims, op, ": Y");
  if (like_dims != nullptr) {
    const int64_t like_numel = CheckedNumel(*like_dims, op, ": the third input");
    HALFCAF_ENFORCE(like_numel == y_numel, op, ": the third input ", DimsString(*like_dims),
                    " has ", like_numel, " elements but Y is ", s.M, " x ", s.N,
                    " (Y takes the third input's dims, so the counts must match)");
    s.out_dims = *like_dims;
  }
  return s;
}

MatMulArgs ReadMatMulArgs(const ArgumentHelper& args) {
  MatMulArgs m;
  m.axis_a = args.GetSingleArgument<int>("axis_a", 1);
  m.axis_b = args.GetSingleArgument<int>("axis_b", 1);
  m.trans_a = args.GetSingleArgument<int>("trans_a", 0) != 0;
  m.trans_b = args.GetSingleArgument<int>("trans_b", 0) != 0;
  return m;
}

MatMulShape CheckMatMulInputs(const Tensor& A, const Tensor& B, const Tensor* like,
                              const MatMulArgs& args, const std::string& op) {
  EnforceFloatType(A, "A");
  HALFCAF_ENFORCE(A.dtype() == B.dtype(), op, ": A and B must have one dtype, got A ",
                  A.DebugString(), " and B ", B.DebugString());
  return ComputeMatMulShape(A.dims(), B.dims(), args.axis_a, args.axis_b, args.trans_a,
                            args.trans_b, like != nullptr ? &like->dims() : nullptr, op);
}

namespace {

// One GEMM in float; float16 and bfloat16 are converted in and out.
class MatMulOp final : public Operator<CPUContext> {
 public:
  MatMulOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), mm_(ReadMatMulArgs(args_)) {}

  void RunOnDevice() override {
    const Tensor& A = Input(0);
    const Tensor& B = Input(1);
    const MatMulShape s =
        CheckMatMulInputs(A, B, InputSize() == 3 ? &Input(2) : nullptr, mm_, DebugName());
    const float* a = ReadAsFloat(A, &a_);
    const float* b = ReadAsFloat(B, &b_);
    const DataType dtype = A.dtype();
    Tensor* Y = Output(0, s.out_dims);
    FloatWriter y(Y, dtype, &y_);
    math::Gemm(s.trans_a, s.trans_b, s.M, s.N, s.K, 1.f, a, b, 0.f, y.data());
    y.Commit();
  }

 private:
  MatMulArgs mm_;
  std::vector<float> a_, b_, y_;
};

// Caffe2's maker, G = dY:  A B     -> dA = G B^T,    dB = A^T G
//                          A B^T   -> dA = G B,      dB = G^T A
//                          A^T B   -> dA = B G^T,    dB = A G
//                          A^T B^T -> dA = B^T G^T,  dB = G^T A^T
// Each op views the forward input it reads at that input's forward axis and takes the input it
// differentiates as third input, for its dims. Caffe2 stored the axes in bools (any axis but 0
// became 1, a wrong view for axes past 1); here they keep their values.
class GetMatMulGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  bool CopyArguments() const override { return false; }
  std::vector<OperatorDef> GetGradientDefs() override {
    // G would need its own axis, which depends on the third input's dims.
    HALFCAF_ENFORCE(NumInputs() == 2,
                    "the gradient of MatMul with a third input (the dims of Y) is not supported");
    const MatMulArgs m = ReadMatMulArgs(args());
    // trans_a / trans_b when set (as Caffe2 writes them), then the axis of the forward input.
    auto op_args = [](bool ta, bool tb, const char* axis_name, int axis) {
      std::vector<Argument> v;
      if (ta) v.push_back(MakeArgument("trans_a", 1));
      if (tb) v.push_back(MakeArgument("trans_b", 1));
      v.push_back(MakeArgument(axis_name, axis));
      return v;
    };
    const std::string g = GO(0);
    OperatorDef da = m.trans_a ? MakeOperatorDef("MatMul", "", {I(1), g, I(0)}, {GI(0)},
                                                 op_args(m.trans_b, true, "axis_a", m.axis_b))
                               : MakeOperatorDef("MatMul", "", {g, I(1), I(0)}, {GI(0)},
                                                 op_args(false, !m.trans_b, "axis_b", m.axis_b));
    OperatorDef db = m.trans_b ? MakeOperatorDef("MatMul", "", {g, I(0), I(1)}, {GI(1)},
                                                 op_args(true, m.trans_a, "axis_b", m.axis_a))
                               : MakeOperatorDef("MatMul", "", {I(0), g, I(1)}, {GI(1)},
                                                 op_args(!m.trans_a, false, "axis_a", m.axis_a));
    return {da, db};
  }
};

MatMulShape ShapeOfDef(const OperatorDef& def, const std::vector<TensorShape>& in) {
  const MatMulArgs m = ReadMatMulArgs(ArgumentHelper(def));
  return ComputeMatMulShape(in[0].dims, in[1].dims, m.axis_a, m.axis_b, m.trans_a, m.trans_b,
                            in.size() == 3 ? &in[2].dims : nullptr, def.type());
}

std::vector<TensorShape> MatMulShapeFn(const OperatorDef& def, const std::vector<TensorShape>& in) {
  return {TensorShape{ShapeOfDef(def, in).out_dims, in[0].dtype}};
}

OpCost MatMulCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  const MatMulShape s = ShapeOfDef(def, in);
  const double item = static_cast<double>(DataTypeSize(in[0].dtype));
  OpCost c;
  c.flops = 2.0 * static_cast<double>(s.M) * s.N * s.K;
  c.bytes_read = static_cast<double>(in[0].numel() + in[1].numel()) * item;
  c.bytes_written = static_cast<double>(s.M) * s.N * item;
  return c;
}

}  // namespace

REGISTER_CPU_OPERATOR(MatMul, MatMulOp);
REGISTER_GRADIENT(MatMul, GetMatMulGradient);

OPERATOR_SCHEMA(MatMul)
    .NumInputs(2, 3)
    .NumOutputs(1)
    .TensorInferenceFunction(MatMulShapeFn)
    .CostInferenceFunction(MatMulCost)
    .SetDoc(
        "One matrix product Y = op(A2) op(B2) of dims [M, N]: A2 is A viewed as a matrix split "
        "at axis_a (rows: the product of the dims before it, columns: the rest), B2 is B split "
        "at axis_b, and op transposes the view when trans_a / trans_b is set. An optional third "
        "input gives Y its dims instead (same element count; the gradient ops use it to give dA "
        "and dB the dims of A and B). Float, float16 and bfloat16 (float and float16 on CUDA); "
        "A and B share one dtype. Gradient: two MatMul ops, as in Caffe2, except that axes "
        "other than 0 and 1 are kept (Caffe2 turned them into 1) and a MatMul with a third "
        "input has none.")
    .Arg("axis_a", "int, default 1: the dim of A where its matrix view's columns start")
    .Arg("axis_b", "int, default 1: the dim of B where its matrix view's columns start")
    .Arg("trans_a", "int, default 0: transpose A's matrix view")
    .Arg("trans_b", "int, default 0: transpose B's matrix view")
    .Input(0, "A", "viewed as (M, K), or (K, M) with trans_a")
    .Input(1, "B", "viewed as (K, N), or (N, K) with trans_b")
    .Input(2, "like", "optional: Y takes its dims (M * N elements)")
    .Output(0, "Y", "(M, N), or the dims of input 2");

}  // namespace halfcaf
