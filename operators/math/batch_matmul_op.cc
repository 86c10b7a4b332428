#include "operators/math/batch_matmul_op.h"

#include <algorithm>

#include "core/checked_math.h"
#include "core/float_io.h"
#include "core/gradient.h"

namespace halfcaf {

BatchMatMulPlan MakeBatchMatMulPlan(const std::vector<int64_t>& a_dims,
                                    const std::vector<int64_t>& b_dims, bool trans_a, bool trans_b,
                                    bool broadcast, const std::string& op) {
  if (!broadcast) {
    HALFCAF_ENFORCE(a_dims.size() >= 2 && a_dims.size() == b_dims.size(), op, ": A ",
                    DimsString(a_dims), " and B ", DimsString(b_dims),
                    " must have the same rank, at least 2, without broadcast (set broadcast=1 "
                    "for numpy.matmul's rules)");
    HALFCAF_ENFORCE(std::equal(a_dims.begin(), a_dims.end() - 2, b_dims.begin()), op,
                    ": the batch dims of A ", DimsString(a_dims), " and B ", DimsString(b_dims),
                    " differ (without broadcast they must be equal; set broadcast=1 to "
                    "broadcast them)");
  }
  HALFCAF_ENFORCE(!a_dims.empty() && !b_dims.empty(), op, ": A ", DimsString(a_dims), " and B ",
                  DimsString(b_dims), " must have at least one dim");
  // Vectors become a row (A) or a column (B) matrix, which a transpose leaves as it is.
  const bool a_vec = a_dims.size() == 1, b_vec = b_dims.size() == 1;
  std::vector<int64_t> a = a_dims, b = b_dims;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  const bool ta = trans_a && !a_vec, tb = trans_b && !b_vec;
  const size_t ra = a.size(), rb = b.size();
  BatchMatMulPlan p;
  p.trans_a = ta ? math::Trans::kYes : math::Trans::kNo;
  p.trans_b = tb ? math::Trans::kYes : math::Trans::kNo;
  p.M = ta ? a[ra - 1] : a[ra - 2];
  p.K = ta ? a[ra - 2] : a[ra - 1];
  const int64_t kb = tb ? b[rb - 1] : b[rb - 2];
  p.N = tb ? b[rb - 2] : b[rb - 1];
  HALFCAF_ENFORCE(p.K == kb, op, ": the inner dims differ: ", ta ? "A^T" : "A", " is ", p.M, " x ",
                  p.K, " but ", tb ? "B^T" : "B", " is ", kb, " x ", p.N, " (A ",
                  DimsString(a_dims), ", B ", DimsString(b_dims), ", trans_a ", trans_a,
                  ", trans_b ", trans_b, ")");

  // Batch dims aligned from the right; a missing or size-1 dim repeats its one matrix.
  const size_t na = ra - 2, nb = rb - 2, n = std::max(na, nb);
  std::vector<int64_t> batch(n), a_stride(n, 0), b_stride(n, 0);
  int64_t sa = 1, sb = 1;
  for (size_t k = n; k-- > 0;) {
    const int64_t da = k + na >= n ? a[k + na - n] : 1;
    const int64_t db = k + nb >= n ? b[k + nb - n] : 1;
    HALFCAF_ENFORCE(da == db || da == 1 || db == 1, op, ": the batch dims of A ",
                    DimsString(a_dims), " and B ", DimsString(b_dims), " do not broadcast (", da,
                    " vs ", db, ")");
    batch[k] = da == 1 ? db : da;
    if (da != 1) a_stride[k] = sa;
    if (db != 1) b_stride[k] = sb;
    sa *= da;
    sb *= db;
  }
  p.out_dims = batch;
  if (!a_vec) p.out_dims.push_back(p.M);
  if (!b_vec) p.out_dims.push_back(p.N);
  if (p.out_dims.empty()) p.out_dims.push_back(1);  // vector . vector, as in Caffe2
  CheckedNumel(p.out_dims, op, ": Y");
  const int64_t batches = CheckedNumel(batch, op, ": batch dims");
  p.a_index.resize(static_cast<size_t>(batches));
  p.b_index.resize(static_cast<size_t>(batches));
  for (int64_t i = 0; i < batches; ++i) {
    int64_t rest = i, ao = 0, bo = 0;
    for (size_t k = n; k-- > 0;) {
      const int64_t at = rest % batch[k];
      rest /= batch[k];
      ao += at * a_stride[k];
      bo += at * b_stride[k];
    }
    p.a_index[i] = ao;
    p.b_index[i] = bo;
  }
  return p;
}

BatchMatMulPlan PlanBatchMatMul(const Tensor& A, const Tensor& B, bool trans_a, bool trans_b,
                                bool broadcast, const std::string& op) {
  EnforceFloatType(A, "A");
  HALFCAF_ENFORCE(A.dtype() == B.dtype(), op, ": A and B must have one dtype, got A ",
                  A.DebugString(), " and B ", B.DebugString());
  return MakeBatchMatMulPlan(A.dims(), B.dims(), trans_a, trans_b, broadcast, op);
}

std::vector<StridedBatchRun> StridedBatchRuns(const BatchMatMulPlan& p) {
  std::vector<StridedBatchRun> runs;
  const int64_t n = p.batches();
  for (int64_t i = 0; i < n;) {
    StridedBatchRun r;
    r.first = i;
    r.a_first = p.a_index[i];
    r.b_first = p.b_index[i];
    if (i + 1 < n) {
      r.a_step = p.a_index[i + 1] - p.a_index[i];
      r.b_step = p.b_index[i + 1] - p.b_index[i];
    }
    int64_t j = i + 1;
    while (j < n && p.a_index[j] - p.a_index[j - 1] == r.a_step &&
           p.b_index[j] - p.b_index[j - 1] == r.b_step) {
      ++j;
    }
    r.count = j - i;
    runs.push_back(r);
    i = j;
  }
  return runs;
}

BatchMatMulOp::BatchMatMulOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      trans_a_(GetSingleArgument<int>("trans_a", 0) != 0),
      trans_b_(GetSingleArgument<int>("trans_b", 0) != 0),
      broadcast_(GetSingleArgument<int>("broadcast", 0) != 0) {}

void BatchMatMulOp::RunOnDevice() {
  const Tensor& A = Input(0);
  const Tensor& B = Input(1);
  const BatchMatMulPlan p = PlanBatchMatMul(A, B, trans_a_, trans_b_, broadcast_, DebugName());
  const float* a = ReadAsFloat(A, &a_);
  const float* b = ReadAsFloat(B, &b_);
  const DataType dtype = A.dtype();
  Tensor* Y = Output(0, p.out_dims);
  FloatWriter y(Y, dtype, &y_);
  for (int64_t i = 0; i < p.batches(); ++i) {
    math::Gemm(p.trans_a, p.trans_b, p.M, p.N, p.K, 1.f, a + p.a_index[i] * p.M * p.K,
               b + p.b_index[i] * p.K * p.N, 0.f, y.data() + i * p.M * p.N);
  }
  y.Commit();
}

namespace {

// Caffe2's maker: dA and dB from two BatchMatMul ops whose trans flags undo the forward ones.
class GetBatchMatMulGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  bool CopyArguments() const override { return false; }
  std::vector<OperatorDef> GetGradientDefs() override {
    HALFCAF_ENFORCE(args().GetSingleArgument<int>("broadcast", 0) == 0,
                    "the gradient of BatchMatMul with broadcast=1 is not supported (as in Caffe2)");
    const bool ta = args().GetSingleArgument<int>("trans_a", 0) != 0;
    const bool tb = args().GetSingleArgument<int>("trans_b", 0) != 0;
    auto flags = [](bool a, bool b) {
      std::vector<Argument> v;
      if (a) v.push_back(MakeArgument("trans_a", 1));
      if (b) v.push_back(MakeArgument("trans_b", 1));
      return v;
    };
    const std::string dy = GO(0);
    // Y = op(A) op(B):   A B    -> dA = dY B^T,    dB = A^T dY
    //                    A B^T  -> dA = dY B,      dB = dY^T A
    //                    A^T B  -> dA = B dY^T,    dB = A dY
    //                    A^T B^T-> dA = B^T dY^T,  dB = dY^T A^T
    const std::vector<std::string> da_in =
        ta ? std::vector<std::string>{I(1), dy} : std::vector<std::string>{dy, I(1)};
    const std::vector<std::string> db_in =
        tb ? std::vector<std::string>{dy, I(0)} : std::vector<std::string>{I(0), dy};
    return {MakeOperatorDef("BatchMatMul", "", da_in, {GI(0)}, flags(ta && tb, ta || !tb)),
            MakeOperatorDef("BatchMatMul", "", db_in, {GI(1)}, flags(!ta || tb, ta && tb))};
  }
};

std::vector<TensorShape> BatchMatMulShape(const OperatorDef& def,
                                          const std::vector<TensorShape>& in) {
  ArgumentHelper args(def);
  const BatchMatMulPlan p =
      MakeBatchMatMulPlan(in[0].dims, in[1].dims, args.GetSingleArgument<int>("trans_a", 0) != 0,
                          args.GetSingleArgument<int>("trans_b", 0) != 0,
                          args.GetSingleArgument<int>("broadcast", 0) != 0, def.type());
  return {TensorShape{p.out_dims, in[0].dtype}};
}

OpCost BatchMatMulCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  ArgumentHelper args(def);
  const BatchMatMulPlan p =
      MakeBatchMatMulPlan(in[0].dims, in[1].dims, args.GetSingleArgument<int>("trans_a", 0) != 0,
                          args.GetSingleArgument<int>("trans_b", 0) != 0,
                          args.GetSingleArgument<int>("broadcast", 0) != 0, def.type());
  OpCost c;
  const double item = static_cast<double>(DataTypeSize(in[0].dtype));
  c.flops = 2.0 * static_cast<double>(p.batches()) * p.M * p.N * p.K;
  c.bytes_read = static_cast<double>(in[0].numel() + in[1].numel()) * item;
  c.bytes_written = static_cast<double>(p.batches()) * p.M * p.N * item;
  return c;
}

}  // namespace

REGISTER_CPU_OPERATOR(BatchMatMul, BatchMatMulOp);
REGISTER_GRADIENT(BatchMatMul, GetBatchMatMulGradient);

OPERATOR_SCHEMA(BatchMatMul)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction(BatchMatMulShape)
    .CostInferenceFunction(BatchMatMulCost)
    .SetDoc(
        "One matrix product per batch: Y[..., M, N] = op(A)[..., M, K] op(B)[..., K, N], "
        "where op transposes the last two dims when trans_a / trans_b is set. Without "
        "broadcast, A and B have one rank >= 2 and equal batch dims. With broadcast=1 the "
        "rules are numpy.matmul's: batch dims broadcast, a 1-D A is a row vector and a 1-D B "
        "a column vector whose unit dim Y drops (two vectors give Y [1]); the trans flags do "
        "not apply to vectors. Float and float16 (one dtype for both). Gradient: two "
        "BatchMatMul ops; not available with broadcast=1 (as in Caffe2).")
    .Arg("trans_a", "int, default 0: transpose the last two dims of A")
    .Arg("trans_b", "int, default 0: transpose the last two dims of B")
    .Arg("broadcast", "int, default 0: numpy.matmul broadcasting")
    .Input(0, "A", "(..., M, K), or (..., K, M) with trans_a")
    .Input(1, "B", "(..., K, N), or (..., N, K) with trans_b")
    .Output(0, "Y", "(..., M, N)");

}  // namespace halfcaf
