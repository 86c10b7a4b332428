// Concat / Split (and the DepthConcat / DepthSplit aliases) on CUDA: strided device-to-device
// copies (cudaMemcpy2DAsync) on the op's stream, any data type. As on the CPU, Concat's
// split_info output and Split's optional lengths input are CPU int32 tensors. Schemas and gradient
// makers are in concat_split_op.cc.
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/tensor_copy.h"
#include "operators/tensor/concat_split_op.h"

namespace halfcaf {

namespace {

int64_t Product(const std::vector<int64_t>& d, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= d[i];
  return p;
}

class ConcatCUDAOp final : public Operator<CUDAContext> {
 public:
  ConcatCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), axis_(ParseConcatSplitAxis(args_)) {}

  void RunOnDevice() override {
    std::vector<const Tensor*> inputs;
    for (int i = 0; i < InputSize(); ++i) inputs.push_back(&Input(i));
    const ConcatPlan plan = PlanConcat(*this, inputs, axis_);
    char* y = static_cast<char*>(Output(0, plan.shape.dims)->raw_mutable_data(plan.dtype));
    for (int i = 0; i < InputSize(); ++i) {
      gpu::CopyRowsAsync(plan.outer, plan.row_bytes[i], inputs[i]->raw_data(), plan.row_bytes[i],
                         y + plan.offsets[i], plan.y_row, context_.stream());
    }
    WriteSplitInfo(plan.shape, OutputBlob(1)->GetMutableTensor(Device()));
  }

 private:
  ConcatSplitAxis axis_;
};

class SplitCUDAOp final : public Operator<CUDAContext> {
 public:
  SplitCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        axis_(ParseConcatSplitAxis(args_)),
        split_(GetRepeatedArgument<int64_t>("split")) {
    HALFCAF_ENFORCE(!(HasArgument("split") && InputSize() == 2),
                    "give the split lengths either as the `split` argument or as input 1, not "
                    "both");
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const SplitPlan plan = PlanSplit(*this, X, axis_, split_);
    const char* x = static_cast<const char*>(X.raw_data());
    for (int k = 0; k < OutputSize(); ++k) {
      char* y = static_cast<char*>(Output(k, plan.out_dims[k])->raw_mutable_data(X.dtype()));
      gpu::CopyRowsAsync(plan.outer, plan.row_bytes[k], x + plan.offsets[k], plan.x_row, y,
                         plan.row_bytes[k], context_.stream());
    }
  }

 private:
  ConcatSplitAxis axis_;
  std::vector<int64_t> split_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Concat, ConcatCUDAOp);
REGISTER_CUDA_OPERATOR(DepthConcat, ConcatCUDAOp);
REGISTER_CUDA_OPERATOR(Split, SplitCUDAOp);
REGISTER_CUDA_OPERATOR(DepthSplit, SplitCUDAOp);

}  // namespace halfcaf
