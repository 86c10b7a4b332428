// Concat / Split (and the DepthConcat / DepthSplit aliases) on CUDA: strided device-to-device
// copies (cudaMemcpy2DAsync) on the op's stream, any data type. As on the CPU, Concat's
// split_info output and Split's optional lengths input are CPU int32 tensors. Schemas and gradient
// makers are in concat_split_op.cc.
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/tensor_copy.h"
#include "operators/concat_split_op.h"

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
    const int n = InputSize();
    const DataType dtype = Input(0).dtype();
    input_dims_.resize(n);
    for (int i = 0; i < n; ++i) {
      const Tensor& Xi = Input(i);
      HALFCAF_ENFORCE(Xi.dtype() == dtype, "input ", i, " '", input_name(i), "' is ",
                      Xi.DebugString(), " but input 0 is ", Input(0).DebugString(),
                      ": Concat inputs must share one data type");
      input_dims_[i] = Xi.dims();
    }
    const ConcatShape s = ComputeConcatShape(input_dims_, axis_);
    Tensor* Y = Output(0, s.dims);
    char* y = static_cast<char*>(Y->raw_mutable_data(dtype));
    const size_t item = DataTypeSize(dtype);
    const int64_t outer = Product(s.dims, 0, s.axis);
    const int64_t inner = Product(s.dims, s.axis + 1, s.dims.size());
    const size_t y_row = static_cast<size_t>(s.dims[s.axis] * inner) * item;
    size_t offset = 0;
    for (int i = 0; i < n; ++i) {
      const size_t row = static_cast<size_t>(s.extents[i] * inner) * item;
      gpu::CopyRowsAsync(static_cast<size_t>(outer), row, Input(i).raw_data(), row, y + offset,
                         y_row, context_.stream());
      offset += row;
    }
    Tensor* info = OutputBlob(1)->GetMutableTensor(Device());
    info->Resize({n});
    int32_t* p = info->mutable_data<int32_t>();
    for (int i = 0; i < n; ++i) p[i] = static_cast<int32_t>(s.extents[i]);
  }

 private:
  ConcatSplitAxis axis_;
  std::vector<std::vector<int64_t>> input_dims_;
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
