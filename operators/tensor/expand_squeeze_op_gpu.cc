// ExpandDims and Squeeze on CUDA: the data is copied device to device on the op's stream (nothing
// is copied in place) and the dims change. Arguments and errors as in expand_squeeze_op.cc, which
// holds the schemas and gradient makers.
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/tensor_copy.h"
#include "operators/tensor/expand_squeeze_op.h"

namespace halfcaf {

namespace {

template <bool kExpand>
class ExpandSqueezeCUDAOp final : public Operator<CUDAContext> {
 public:
  ExpandSqueezeCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        dims_(CanonicalSqueezeDims(GetRepeatedArgument<int>("dims"), DebugName())) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    std::vector<int64_t> dims = kExpand ? ExpandDimsShape(X.dims(), dims_, DebugName())
                                        : SqueezeShape(X.dims(), dims_, DebugName());
    Tensor* Y = Output(0);
    gpu::CopyTensorAsync(X, Y, context_.stream());
    Y->Reshape(std::move(dims));
  }

 private:
  std::vector<int> dims_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(ExpandDims, ExpandSqueezeCUDAOp<true>);
REGISTER_CUDA_OPERATOR(Squeeze, ExpandSqueezeCUDAOp<false>);

}  // namespace halfcaf
