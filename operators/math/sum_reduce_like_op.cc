#include "operators/math/sum_reduce_like_op.h"

#include "core/float_io.h"
#include "core/gradient.h"
#include "operators/math/elementwise_broadcast.h"

namespace halfcaf {

namespace {

// acc[j] = sum over i < pre, k < post of a[(i * n + j) * post + k].
template <typename T>
void SumToSpan(const T* a, const BroadcastSizes& s, std::vector<double>* acc) {
  acc->assign(static_cast<size_t>(s.n), 0.0);
  double* out = acc->data();
  for (int64_t i = 0; i < s.pre; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      const T* p = a + (i * s.n + j) * s.post;
      double sum = 0;
      for (int64_t k = 0; k < s.post; ++k) sum += p[k];
      out[j] += sum;
    }
  }
}

}  // namespace

SumReduceLikeOp::SumReduceLikeOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), axis_(ParseBroadcastAxis(args_)) {}

void SumReduceLikeOp::RunOnDevice() {
  const Tensor& A = Input(0);
  const Tensor& B = Input(1);
  const BroadcastSizes s = ComputeBroadcastSizes(A.dims(), B.dims(), axis_);
  const DataType dtype = A.dtype();
  if (dtype == DataType::DOUBLE) {
    SumToSpan(A.data<double>(), s, &acc_);
    double* c = Output(0, B.dims())->mutable_data<double>();
    std::copy(acc_.begin(), acc_.end(), c);
    return;
  }
  HALFCAF_ENFORCE(IsFloatType(dtype),
                  "SumReduceLike: A must be float, float16, bfloat16 or double, got ",
                  A.DebugString());
  SumToSpan(ReadAsFloat(A, &a_), s, &acc_);
  FloatWriter c(Output(0, B.dims()), dtype, &c_);
  float* cd = c.data();
  for (int64_t j = 0; j < s.n; ++j) cd[j] = static_cast<float>(acc_[j]);
  c.Commit();
}

REGISTER_CPU_OPERATOR(SumReduceLike, SumReduceLikeOp);

OPERATOR_SCHEMA(SumReduceLike)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      ComputeBroadcastSizes(in[0].dims, in[1].dims, ParseBroadcastAxis(ArgumentHelper(def)));
      return std::vector<TensorShape>{TensorShape{in[1].dims, in[0].dtype}};
    })
    .CostInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      OpCost c;
      c.flops = static_cast<double>(in[0].numel());
      c.bytes_read = in[0].numel() * static_cast<double>(DataTypeSize(in[0].dtype));
      c.bytes_written = in[1].numel() * static_cast<double>(DataTypeSize(in[0].dtype));
      return c;
    })
    .SetDoc("Sums A down to B's shape: B is lined up with A as in Add/Sub/Mul/Div with "
            "broadcast=1 (at `axis`, default trailing; size-1 dims at either end of B ignored) "
            "and A is summed over all dims outside B's span. A B with one element gives the sum "
            "of all of A. This is the gradient of a broadcast B. Float, float16 (summed in "
            "float) and double; sums accumulate in double. A `broadcast` argument is ignored.")
    .Arg("axis", "int, default -1: dimension of A where B's dims start (-1: trailing)")
    .Arg("axis_str", "string, default \"\": the axis as one letter of `order`; exclusive with axis")
    .Arg("order", "string, default \"NCHW\": layout used to look up axis_str")
    .Input(0, "A", "tensor to reduce")
    .Input(1, "B", "shape template (its values are not read)")
    .Output(0, "C", "A summed to B's shape, A's type");

}  // namespace halfcaf
