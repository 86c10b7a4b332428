// Flatten, ResizeLike and Reshape on CUDA: the dims change and the data is copied device to device
// on the op's stream (nothing is copied in place). Shape inputs and Reshape's old_shape output
// are CPU tensors, as in Caffe2 and in the CPU operators (flatten_op.cc, reshape_op.cc hold the
// schemas and gradient makers).
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/tensor_copy.h"
#include "operators/tensor/flatten_op.h"
#include "operators/tensor/reshape_op.h"

namespace halfcaf {

namespace {

void CopyWithDimsAsync(const Tensor& src, std::vector<int64_t> dims, Tensor* dst,
                       cudaStream_t stream) {
  gpu::CopyTensorAsync(src, dst, stream);
  dst->Reshape(std::move(dims));
}

class FlattenCUDAOp final : public Operator<CUDAContext> {
 public:
  FlattenCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), axis_(GetSingleArgument<int>("axis", 1)) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    CopyWithDimsAsync(X, FlattenDims(X.dims(), axis_), Output(0), context_.stream());
  }

 private:
  int axis_;
};

class ResizeLikeCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& like = Input(1);
    HALFCAF_ENFORCE(X.numel() == like.numel(), "ResizeLike: data ", X.DebugString(), " has ",
                    X.numel(), " elements but the shape input ", like.DebugString(), " has ",
                    like.numel());
    CopyWithDimsAsync(X, like.dims(), Output(0), context_.stream());
  }
};

class ReshapeCUDAOp final : public Operator<CUDAContext> {
 public:
  ReshapeCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), shape_(GetRepeatedArgument<int64_t>("shape")) {
    const bool has_arg = HasArgument("shape");
    HALFCAF_ENFORCE(has_arg != (InputSize() == 2),
                    has_arg ? "the new shape is given both as the `shape` argument and as input "
                              "1; give exactly one"
                            : "no new shape: give the `shape` argument or a shape tensor as "
                              "input 1");
  }

  void RunOnDevice() override {
    DataType shape_type = DataType::INT64;
    if (InputSize() == 2) {
      const Tensor& S = CPUInput(1);
      HALFCAF_ENFORCE(S.ndim() == 1 && (S.dtype() == DataType::INT32 ||
                                        S.dtype() == DataType::INT64),
                      "the shape input must be a 1-D int32 or int64 tensor, got ",
                      S.DebugString());
      shape_type = S.dtype();
      requested_.resize(S.numel());
      for (int64_t i = 0; i < S.numel(); ++i) {
        requested_[i] =
            shape_type == DataType::INT32 ? S.data<int32_t>()[i] : S.data<int64_t>()[i];
      }
    } else {
      requested_ = shape_;
    }
    const Tensor& X = Input(0);
    const std::vector<int64_t> old_dims = X.dims();
    std::vector<int64_t> new_dims = ComputeReshapeDims(old_dims, requested_);

    Tensor* old_shape = OutputBlob(1)->GetMutableTensor(Device());
    old_shape->Resize({static_cast<int64_t>(old_dims.size())});
    if (shape_type == DataType::INT32) {
      int32_t* p = old_shape->mutable_data<int32_t>();
      for (size_t i = 0; i < old_dims.size(); ++i) p[i] = static_cast<int32_t>(old_dims[i]);
    } else {
      int64_t* p = old_shape->mutable_data<int64_t>();
      for (size_t i = 0; i < old_dims.size(); ++i) p[i] = old_dims[i];
    }
    CopyWithDimsAsync(X, std::move(new_dims), Output(0), context_.stream());
  }

 private:
  std::vector<int64_t> shape_;
  std::vector<int64_t> requested_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Flatten, FlattenCUDAOp);
REGISTER_CUDA_OPERATOR(ResizeLike, ResizeLikeCUDAOp);
REGISTER_CUDA_OPERATOR(Reshape, ReshapeCUDAOp);

}  // namespace halfcaf
