// Gather, BatchGatherGradient and SparseToDense on CUDA (gpu/gather_kernels.h). INDICES live on the
// device, as in Caffe2; each run copies them to the host once (a wait on the op's stream) to check
// them with the CPU operators' rules and messages before any kernel reads with them, and, for
// SparseToDense without a given first dim, to find it. Shapes, arguments and errors as in
// gather_op.cc, which holds the schemas and the gradient makers.
#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_context.h"
#include "gpu/gather_kernels.h"
#include "operators/gather_op.h"

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

// A float scratch buffer of n elements on ctx's device (float16 scatter-adds sum in float).
float* FloatScratch(Tensor* scratch, int64_t n, CUDAContext* ctx) {
  scratch->SetDevice(ctx->device());
  scratch->Resize({n});
  return scratch->mutable_data<float>();
}

class GatherCUDAOp final : public Operator<CUDAContext> {
 public:
  GatherCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), axis_(GetSingleArgument<int>("axis", 0)) {
    wrap_ = GatherWrapsIndices(args_, axis_);
    EnforceNoMatchOuter(*this);
  }

  void RunOnDevice() override {
    const Tensor& D = Input(0);
    const Tensor& I = Input(1);
    EnforceIndexType(I, DebugName());
    const GatherPlan p = MakeGatherPlan(D.dims(), I.dims(), axis_, DebugName());
    Tensor* Y = Output(0, p.out_dims);
    void* y = Y->raw_mutable_data(D.dtype());
    if (Y->numel() == 0) return;
    ReadDeviceIndices(I, &context_, &host_, &index_);
    CheckIndexRange(&index_, p.dim, wrap_, DebugName());
    gpu::GatherRows(p.outer, p.dim, p.inner, p.n, I.dtype(), I.raw_data(), wrap_,
                    DataTypeSize(D.dtype()), D.raw_data(), y, context_.stream());
  }

 private:
  int axis_;
  bool wrap_;
  Tensor host_;
  std::vector<int64_t> index_;
};

class BatchGatherGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  BatchGatherGradientCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        axis_(GetSingleArgument<int>("axis", 1)),
        wrap_(GetSingleArgument<int>("wrap_indices", 0) != 0) {
    EnforceNoMatchOuter(*this);
  }

  void RunOnDevice() override {
    const Tensor& D = Input(0);
    const Tensor& I = Input(1);
    const Tensor& G = Input(2);
    const GatherPlan p = CheckBatchGatherGradientInputs(D, I, G, axis_, DebugName());
    if (p.n > 0) {
      ReadDeviceIndices(I, &context_, &host_, &index_);
      CheckIndexRange(&index_, p.dim, wrap_, DebugName());
    }
    const DataType dtype = G.dtype();
    Tensor* dD = Output(0, D.dims());
    void* out = dD->raw_mutable_data(dtype);
    float* scratch =
        dtype == DataType::FLOAT16 ? FloatScratch(&scratch_, dD->numel(), &context_) : nullptr;
    gpu::ScatterAddRows(p.outer, p.dim, p.inner, p.n, I.dtype(), I.raw_data(), wrap_, dtype,
                        G.raw_data(), out, scratch, context_.stream());
  }

 private:
  int axis_;
  bool wrap_;
  Tensor host_, scratch_;
  std::vector<int64_t> index_;
};

class SparseToDenseCUDAOp final : public Operator<CUDAContext> {
 public:
  SparseToDenseCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        output_first_dim_(GetSingleArgument<int64_t>("output_first_dim", 0)),
        wrap_(GetSingleArgument<int>("wrap_indices", 0) != 0) {
    HALFCAF_ENFORCE(output_first_dim_ <= 0 || InputSize() == 2, DebugName(),
                    ": output_first_dim and the data_to_infer_dim input both give the first "
                    "output dim; give one of them");
  }

  void RunOnDevice() override {
    const Tensor& I = Input(0);
    const Tensor& V = Input(1);
    CheckSparseToDenseInputs(I, V, DebugName());
    ReadDeviceIndices(I, &context_, &host_, &index_);
    const int64_t first = SparseToDenseFirstDim(
        output_first_dim_, InputSize() == 3 ? &Input(2) : nullptr, wrap_, DebugName(), &index_);
    const DataType dtype = V.dtype();
    Tensor* Y = Output(0, SparseToDenseDims(I.dims(), V.dims(), first, DebugName()));
    void* out = Y->raw_mutable_data(dtype);
    float* scratch =
        dtype == DataType::FLOAT16 ? FloatScratch(&scratch_, Y->numel(), &context_) : nullptr;
    gpu::ScatterAddRows(1, first, Y->size_from_dim(1), I.numel(), I.dtype(), I.raw_data(), wrap_,
                        dtype, V.raw_data(), out, scratch, context_.stream());
  }

 private:
  int64_t output_first_dim_;
  bool wrap_;
  Tensor host_, scratch_;
  std::vector<int64_t> index_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Gather, GatherCUDAOp);
REGISTER_CUDA_OPERATOR(BatchGatherGradient, BatchGatherGradientCUDAOp);
REGISTER_CUDA_OPERATOR(SparseToDense, SparseToDenseCUDAOp);

}  // namespace halfcaf
