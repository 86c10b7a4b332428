// AddGradient, SubGradient, MulGradient and DivGradient (both forms) on CUDA: products with
// gpu::BinaryStrided, sums down to A's and B's shapes with gpu::ReduceSum (accumulated in
// double). Same shapes, arguments, dtypes and errors as the CPU operators
// (elementwise_gradient_op.cc holds the schemas).
#include <utility>
#include <vector>

#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/elementwise_kernels.h"
#include "gpu/reduce_kernels.h"
#include "operators/math/elementwise_gradient_op.h"

namespace halfcaf {

namespace {

template <BinaryGradientKind kKind>
class BinaryGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  BinaryGradientCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), bargs_(ParseLegacyBroadcastArgs(args_)) {}

  void RunOnDevice() override {
    constexpr bool kDiv = kKind == BinaryGradientKind::kDiv;
    if (kDiv && InputSize() == 3) {
      RunLegacyDiv();
      return;
    }
    GradientInputs in = CheckGradientInputs(kKind, type(), bargs_, Input(0), Input(1), Input(2),
                                            kDiv ? &Input(3) : nullptr);
    const Tensor &dC = *in.dC, &A = *in.A, &B = *in.B, *C = in.C;
    walk_ = std::move(in.walk);
    a_rep_ = RepeatedDims(walk_.out_dims, A.dims());
    b_rep_ = RepeatedDims(walk_.out_dims, bargs_.broadcast ? LegacyBroadcastView(
                                                                 A.dims(), B.dims(), bargs_.axis)
                                                           : B.dims());
    full_stride_.assign(walk_.dims.size(), 1);
    for (size_t d = walk_.dims.size() - 1; d > 0; --d) {
      full_stride_[d - 1] = full_stride_[d] * walk_.dims[d];
    }
    const DataType t = dC.dtype();
    tmp_type_ = in.all_double ? DataType::DOUBLE : DataType::FLOAT;
    void* da = Output(0, A.dims())->raw_mutable_data(t);
    void* db = Output(1, B.dims())->raw_mutable_data(t);
    switch (kKind) {
      case BinaryGradientKind::kAdd:
      case BinaryGradientKind::kSub:
        SumInto(a_rep_, t, dC.raw_data(), t, da, 1.0);
        SumInto(b_rep_, t, dC.raw_data(), t, db, kKind == BinaryGradientKind::kSub ? -1.0 : 1.0);
        break;
      case BinaryGradientKind::kMul:
        ProductSumInto(gpu::BinaryOp::kMul, dC, B, walk_.b_stride, a_rep_, t, da);
        ProductSumInto(gpu::BinaryOp::kMul, dC, A, walk_.a_stride, b_rep_, t, db);
        break;
      case BinaryGradientKind::kDiv: {
        // q = dC / B over the output; dA = sum of q; dB = -(sum of q * C).
        void* q = Scratch();
        gpu::BinaryStrided(gpu::BinaryOp::kDiv, walk_.dims, full_stride_, walk_.b_stride,
                           dC.dtype(), dC.raw_data(), B.dtype(), B.raw_data(), tmp_type_, q,
                           context_.stream());
        SumInto(a_rep_, tmp_type_, q, t, da, 1.0);
        gpu::BinaryStrided(gpu::BinaryOp::kMul, walk_.dims, full_stride_, full_stride_,
                           tmp_type_, q, C->dtype(), C->raw_data(), tmp_type_, q,
                           context_.stream());
        SumInto(b_rep_, tmp_type_, q, t, db, -1.0);
        break;
      }
    }
  }

 private:
  // y = scale * x (output-shaped) summed over the dims in `rep`.
  void SumInto(const std::vector<bool>& rep, DataType x_type, const void* x, DataType y_type,
               void* y, double scale) {
    gpu::ReduceSum(walk_.out_dims, rep, x_type, x, y_type, y, scale, context_.stream());
  }

  // y = (dC (op) X repeated at x_stride) summed over the dims in `rep`; straight into y when
  // nothing is summed.
  void ProductSumInto(gpu::BinaryOp op, const Tensor& dC, const Tensor& X,
                      const std::vector<int64_t>& x_stride, const std::vector<bool>& rep,
                      DataType y_type, void* y) {
    bool any = false;
    for (bool r : rep) any |= r;
    void* p = any ? Scratch() : y;
    gpu::BinaryStrided(op, walk_.dims, full_stride_, x_stride, dC.dtype(), dC.raw_data(),
                       X.dtype(), X.raw_data(), any ? tmp_type_ : y_type, p, context_.stream());
    if (any) SumInto(rep, tmp_type_, p, y_type, y, 1.0);
  }

  // An output-shaped device buffer of tmp_type_ (float, or double for double inputs).
  void* Scratch() {
    tmp_.SetDevice(context_.device());
    tmp_.Resize(walk_.out_dims);
    return tmp_.raw_mutable_data(tmp_type_);
  }

  void RunLegacyDiv() {
    const Tensor& B = Input(0);
    const Tensor& C = Input(1);
    const Tensor& dC = Input(2);
    EnforceLegacyDivShapes(B, C, dC);
    const bool all_double = B.dtype() == DataType::DOUBLE && C.dtype() == DataType::DOUBLE &&
                            dC.dtype() == DataType::DOUBLE;
    if (!all_double) {
      EnforceFloatType(B, "B");
      EnforceFloatType(C, "C");
      EnforceFloatType(dC, "dC");
    }
    const DataType da_type = dC.dtype(), db_type = B.dtype();
    Tensor* dA = Output(0, B.dims());
    Tensor* dB = Output(1, B.dims());
    gpu::DivGradient(B.numel(), B.dtype(), B.raw_data(), C.dtype(), C.raw_data(), dC.dtype(),
                     dC.raw_data(), da_type, dA->raw_mutable_data(da_type), db_type,
                     dB->raw_mutable_data(db_type), context_.stream());
  }

  LegacyBroadcastArgs bargs_;
  NumpyBroadcast walk_;
  std::vector<bool> a_rep_, b_rep_;
  std::vector<int64_t> full_stride_;  // dC's (and C's) strides over walk_.dims
  DataType tmp_type_ = DataType::FLOAT;
  Tensor tmp_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(AddGradient, BinaryGradientCUDAOp<BinaryGradientKind::kAdd>);
REGISTER_CUDA_OPERATOR(SubGradient, BinaryGradientCUDAOp<BinaryGradientKind::kSub>);
REGISTER_CUDA_OPERATOR(MulGradient, BinaryGradientCUDAOp<BinaryGradientKind::kMul>);
REGISTER_CUDA_OPERATOR(DivGradient, BinaryGradientCUDAOp<BinaryGradientKind::kDiv>);

}  // namespace halfcaf
