// Gather, BatchGatherGradient and SparseToDense on CUDA (gpu/gather_kernels.h). INDICES live on the
// device, as in Caffe2; each run copies them to the host once (a wait on the op's stream) to check
// them with the CPU operators' rules and messages before any kernel reads with them, and, for
// SparseToDense without a given first dim, to find it. Shapes, arguments and errors as in
// gather_op.cc, which holds the schemas and the gradient makers.
#include "core/operator.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_context.h"
#include "gpu/gather_kernels.h"
#include "operators/tensor/gather_op.h"

namespace halfcaf {

namespace {

// The index values of a device tensor, read on the host after the work queued before them.
void ReadDeviceIndices(const Tensor& indices, CUDAContext* ctx, Tensor* host,
                       std::vector<int64_t>* out) {
  host->Resize(indices.dims());
  void* h = host->raw_mutable_data(indices.dtype());
  if (indices.nbytes() > 0) {
    HALFCAF_CUDA_CHECK(cudaMemcpyAsync(h, indices.raw_data(), indices.nbytes(),
                                       cudaMemcpyDeviceToHost, ctx->stream()));
    ctx->FinishDevice();
  }
  ReadIndices(*host, out);
}

// out (already shaped: (outer, dim, inner) elements of src's dtype) = 0, then src's rows added at
// the device indices. float16 sums in a float scratch buffer, rounded once.
void ScatterAdd(int64_t outer, int64_t dim, int64_t inner, const Tensor& indices, bool wrap,
                const Tensor& src, Tensor* out, Tensor* scratch, CUDAContext* ctx) {
  const DataType dtype = src.dtype();
  void* o = out->raw_mutable_data(dtype);
  float* s = nullptr;
  if (dtype == DataType::FLOAT16) {
    scratch->SetDevice(ctx->device());
    scratch->Resize({out->numel()});
    s = scratch->mutable_data<float>();
  }
  gpu::ScatterAddRows(outer, dim, inner, indices.numel(), indices.dtype(), indices.raw_data(), wrap,
                      dtype, src.raw_data(), o, s, ctx->stream());
}

class GatherCUDAOp final : public Operator<CUDAContext> {
 public:
  GatherCUDAOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), gather_(*this, false) {}

  void RunOnDevice() override {
    const Tensor& D = Input(0);
    const Tensor& I = Input(1);
    EnforceIndexType(I, DebugName());
    const GatherPlan p = MakeGatherPlan(D.dims(), I.dims(), gather_.axis, DebugName());
    Tensor* Y = Output(0, p.out_dims);
    void* y = Y->raw_mutable_data(D.dtype());
    if (Y->numel() == 0) return;
    ReadDeviceIndices(I, &context_, &host_, &index_);
    CheckIndexRange(&index_, p.dim, gather_.wrap, DebugName());
    gpu::GatherRows(p.outer, p.dim, p.inner, p.n, I.dtype(), I.raw_data(), gather_.wrap,
                    DataTypeSize(D.dtype()), D.raw_data(), y, context_.stream());
  }

 private:
  GatherArgs gather_;
  Tensor host_;
  std::vector<int64_t> index_;
};

class BatchGatherGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  BatchGatherGradientCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), gather_(*this, true) {}

  void RunOnDevice() override {
    const Tensor& D = Input(0);
    const Tensor& I = Input(1);
    const Tensor& G = Input(2);
    const GatherPlan p = CheckBatchGatherGradientInputs(D, I, G, gather_.axis, DebugName());
    if (p.n > 0) {
      ReadDeviceIndices(I, &context_, &host_, &index_);
      CheckIndexRange(&index_, p.dim, gather_.wrap, DebugName());
    }
    ScatterAdd(p.outer, p.dim, p.inner, I, gather_.wrap, G, Output(0, D.dims()), &scratch_,
               &context_);
  }

 private:
  GatherArgs gather_;
  Tensor host_, scratch_;
  std::vector<int64_t> index_;
};

class SparseToDenseCUDAOp final : public Operator<CUDAContext> {
 public:
  SparseToDenseCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), args_s2d_(*this) {}

  void RunOnDevice() override {
    const Tensor& I = Input(0);
    const Tensor& V = Input(1);
    CheckSparseToDenseInputs(I, V, DebugName());
    ReadDeviceIndices(I, &context_, &host_, &index_);
    const int64_t first =
        SparseToDenseFirstDim(args_s2d_.output_first_dim, InputSize() == 3 ? &Input(2) : nullptr,
                              args_s2d_.wrap, DebugName(), &index_);
    Tensor* Y = Output(0, SparseToDenseDims(I.dims(), V.dims(), first, DebugName()));
    ScatterAdd(1, first, Y->size_from_dim(1), I, args_s2d_.wrap, V, Y, &scratch_, &context_);
  }

 private:
  SparseToDenseArgs args_s2d_;
  Tensor host_, scratch_;
  std::vector<int64_t> index_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Gather, GatherCUDAOp);
REGISTER_CUDA_OPERATOR(BatchGatherGradient, BatchGatherGradientCUDAOp);
REGISTER_CUDA_OPERATOR(SparseToDense, SparseToDenseCUDAOp);

}  // namespace halfcaf
