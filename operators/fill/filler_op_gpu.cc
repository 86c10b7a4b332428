// The fill operators on CUDA. ConstantFill is filled on the device by a kernel. The random fills
// (UniformFill, UniformIntFill, GaussianFill, XavierFill, MSRAFill) and GivenTensor*Fill are
// generated on the host by the same FillSpec as the CPU operator, drawing from the op context's
// std::mt19937 (seeded like the CPU's: device_option.random_seed or the global seed sequence), and
// copied to the GPU: CPU and CUDA give identical values for one seed. These ops run in init nets,
// where the host pass and the copy cost nothing that matters; cuRAND would give other values than
// the CPU. Schemas are in filler_op.cc and given_tensor_fill_op.cc.
#include "core/operator.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_context.h"
#include "gpu/elementwise_kernels.h"
#include "operators/fill/filler_op.h"

namespace halfcaf {

namespace {

class FillerCUDAOp final : public Operator<CUDAContext> {
 public:
  FillerCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        shape_args_(ParseFillShapeArgs(*this)),
        spec_(MakeFillSpec(def.type(), args_)) {}

  void RunOnDevice() override {
    Tensor* out = Output(0, FillRunDims(*this, shape_args_));
    double value = 0;
    if (spec_->Constant(&value)) {
      gpu::Fill(out->numel(), spec_->dtype(), value, out->raw_mutable_data(spec_->dtype()),
                context_.stream());
      return;
    }
    host_.Resize(out->dims());
    spec_->Fill(&host_, &context_.RandGenerator());
    void* dst = out->raw_mutable_data(host_.dtype());
    // The host buffer is reused by the next run: copy synchronously (ordered after earlier work
    // on the op's stream, which is a blocking stream).
    if (host_.nbytes() > 0) {
      HALFCAF_CUDA_CHECK(
          cudaMemcpyAsync(dst, host_.raw_data(), host_.nbytes(), cudaMemcpyHostToDevice,
                          context_.stream()));
      context_.FinishDevice();
    }
  }

 private:
  FillShapeArgs shape_args_;
  std::unique_ptr<FillSpec> spec_;
  Tensor host_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(ConstantFill, FillerCUDAOp);
REGISTER_CUDA_OPERATOR(UniformFill, FillerCUDAOp);
REGISTER_CUDA_OPERATOR(UniformIntFill, FillerCUDAOp);
REGISTER_CUDA_OPERATOR(GaussianFill, FillerCUDAOp);
REGISTER_CUDA_OPERATOR(XavierFill, FillerCUDAOp);
REGISTER_CUDA_OPERATOR(MSRAFill, FillerCUDAOp);
REGISTER_CUDA_OPERATOR(GivenTensorFill, FillerCUDAOp);
REGISTER_CUDA_OPERATOR(GivenTensorIntFill, FillerCUDAOp);
REGISTER_CUDA_OPERATOR(GivenTensorInt64Fill, FillerCUDAOp);
REGISTER_CUDA_OPERATOR(GivenTensorDoubleFill, FillerCUDAOp);
REGISTER_CUDA_OPERATOR(GivenTensorBoolFill, FillerCUDAOp);

}  // namespace halfcaf
