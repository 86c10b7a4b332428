// MatMul on CUDA: one cuBLAS GEMM (gpu/cublas_gemm.h: float16 with FP32 accumulation on tensor
// cores, float as real FP32). Shapes, arguments and errors as in matmul_op.cc, which holds the
// schema and the gradient maker.
#include "core/operator.h"
#include "gpu/cublas_gemm.h"
#include "gpu/cuda_context.h"
#include "operators/math/matmul_op.h"

namespace halfcaf {

namespace {

class MatMulCUDAOp final : public Operator<CUDAContext> {
 public:
  MatMulCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), mm_(ReadMatMulArgs(args_)) {}

  void RunOnDevice() override {
    const Tensor& A = Input(0);
    const Tensor& B = Input(1);
    const MatMulShape s =
        CheckMatMulInputs(A, B, InputSize() == 3 ? &Input(2) : nullptr, mm_, DebugName());
    Tensor* Y = Output(0, s.out_dims);
    if (A.dtype() == DataType::FLOAT) {
      Run<float>(s, A, B, Y);
    } else {
      Run<Half>(s, A, B, Y);
    }
  }

 private:
  template <typename T>
  void Run(const MatMulShape& s, const Tensor& A, const Tensor& B, Tensor* Y) {
    gpu::Gemm(&context_, s.trans_a, s.trans_b, s.M, s.N, s.K, 1.f, A.data<T>(), B.data<T>(), 0.f,
              Y->mutable_data<T>());
  }

  MatMulArgs mm_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(MatMul, MatMulCUDAOp);

}  // namespace halfcaf
