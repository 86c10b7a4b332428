// Add, Sub, Mul, Div (legacy and NumPy broadcast) and SumReduceLike on CUDA, with the kernels of
// gpu/elementwise_kernels.cu and gpu/reduce_kernels.cu. Same shapes, arguments, dtypes and errors
// as the CPU operators (elementwise_op.cc, sum_reduce_like_op.cc hold the schemas and gradient
// makers). Integer Div checks B for zeros on the host (one device-to-host copy of B and a sync),
// as the CPU reports the first zero instead of trapping.
#include <vector>

#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_context.h"
#include "gpu/elementwise_kernels.h"
#include "gpu/reduce_kernels.h"
#include "operators/math/elementwise_broadcast.h"
#include "operators/math/numpy_broadcast.h"

namespace halfcaf {

namespace {

template <gpu::BinaryOp kOp>
class BinaryElementwiseCUDAOp final : public Operator<CUDAContext> {
 public:
  BinaryElementwiseCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), bargs_(ParseLegacyBroadcastArgs(args_)) {
    HALFCAF_ENFORCE(!(bargs_.broadcast && IsInputOutputAlias(1, 0)), "with broadcast=1 only A ",
                    "may share its blob with the output C; B ('", input_name(1),
                    "') cannot be computed in place");
    HALFCAF_ENFORCE(GetSingleArgument<int>("fuse_relu", 0) == 0, type(),
                    ": fuse_relu (Add + Relu as one op) runs on the CPU only");
  }

  void RunOnDevice() override {
    const Tensor& A = Input(0);
    const Tensor& B = Input(1);
    const NumpyBroadcast* numpy = nullptr;
    BroadcastSizes s;
    if (!bargs_.broadcast && A.dims() != B.dims()) {
      numpy = &plan_.Get(*this, A.dims(), B.dims());
    } else {
      s = ComputeBinaryOpSizes(A.dims(), B.dims(), bargs_);
    }
    const DataType dtype = A.dtype();
    // float, float16 and bfloat16 in any mix compute in float (the output takes A's type).
    auto floating = [](DataType t) { return IsCudaFloatType(t) || t == DataType::BFLOAT16; };
    if (!(floating(dtype) && floating(B.dtype()))) {
      HALFCAF_ENFORCE(dtype == B.dtype(), type(), ": A and B must have the same type, got ",
                      A.DebugString(), " and ", B.DebugString());
      HALFCAF_ENFORCE(dtype == DataType::DOUBLE || dtype == DataType::INT32 ||
                          dtype == DataType::INT64,
                      type(), " supports float, float16, double, int32 and int64 tensors, got ",
                      A.DebugString());
      // Every element of B is read unless the broadcast output is empty.
      const int64_t n = numpy && numpy->numel == 0 ? 0 : B.numel();
      if (kOp == gpu::BinaryOp::kDiv && dtype == DataType::INT32) CheckNoZero<int32_t>(B, n);
      if (kOp == gpu::BinaryOp::kDiv && dtype == DataType::INT64) CheckNoZero<int64_t>(B, n);
    }
    const void* a = A.raw_data();
    const void* b = B.raw_data();
    const DataType b_type = B.dtype();
    Tensor* C = Output(0, numpy ? numpy->out_dims : A.dims());
    if (numpy) {
      gpu::BinaryStrided(kOp, numpy->dims, numpy->a_stride, numpy->b_stride, dtype, a, b_type, b,
                         dtype, C->raw_mutable_data(dtype), context_.stream());
    } else {
      gpu::BinaryBroadcast(kOp, s.pre, s.n, s.post, dtype, a, b_type, b, dtype,
                           C->raw_mutable_data(dtype), context_.stream());
    }
  }

 private:
  template <typename T>
  void CheckNoZero(const Tensor& B, int64_t n) {
    host_.resize(static_cast<size_t>(n) * sizeof(T));
    if (n == 0) return;
    HALFCAF_CUDA_CHECK(cudaMemcpyAsync(host_.data(), B.raw_data(), n * sizeof(T),
                                       cudaMemcpyDeviceToHost, context_.stream()));
    context_.FinishDevice();
    const T* b = reinterpret_cast<const T*>(host_.data());
    for (int64_t j = 0; j < n; ++j) {
      HALFCAF_ENFORCE(b[j] != 0, "integer division by zero: B ('", input_name(1),
                      "') has a zero at element ", j);
    }
  }

  LegacyBroadcastArgs bargs_;
  NumpyBroadcastPlan plan_;
  std::vector<char> host_;
};

class SumReduceLikeCUDAOp final : public Operator<CUDAContext> {
 public:
  SumReduceLikeCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), axis_(ParseBroadcastAxis(args_)) {}

  void RunOnDevice() override {
    const Tensor& A = Input(0);
    const Tensor& B = Input(1);
    const BroadcastSizes s = ComputeBroadcastSizes(A.dims(), B.dims(), axis_);
    const DataType dtype = A.dtype();
    HALFCAF_ENFORCE(dtype == DataType::DOUBLE || IsCudaFloatType(dtype),
                    "SumReduceLike: A must be float, float16 or double, got ", A.DebugString());
    Tensor* C = Output(0, B.dims());
    // A as (pre, n, post), summed over pre and post.
    gpu::ReduceSum({s.pre, s.n, s.post}, {true, false, true}, dtype, A.raw_data(), dtype,
                   C->raw_mutable_data(dtype), 1.0, context_.stream());
  }

 private:
  int axis_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Add, BinaryElementwiseCUDAOp<gpu::BinaryOp::kAdd>);
REGISTER_CUDA_OPERATOR(Sub, BinaryElementwiseCUDAOp<gpu::BinaryOp::kSub>);
REGISTER_CUDA_OPERATOR(Mul, BinaryElementwiseCUDAOp<gpu::BinaryOp::kMul>);
REGISTER_CUDA_OPERATOR(Div, BinaryElementwiseCUDAOp<gpu::BinaryOp::kDiv>);
REGISTER_CUDA_OPERATOR(SumReduceLike, SumReduceLikeCUDAOp);

}  // namespace halfcaf
