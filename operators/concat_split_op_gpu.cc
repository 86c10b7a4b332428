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
    std::vector<int64_t> lengths = split_;
    if (InputSize() == 2) {
      const Tensor& L = CPUInput(1);
      HALFCAF_ENFORCE(L.ndim() == 1 && (L.dtype() == DataType::INT32 ||
                                        L.dtype() == DataType::INT64),
                      "split lengths (input 1) must be a 1-D int32 tensor, got ",
                      L.DebugString());
      lengths.resize(L.numel());
      for (int64_t i = 0; i < L.numel(); ++i) {
        lengths[i] = L.dtype() == DataType::INT32 ? L.data<int32_t>()[i] : L.data<int64_t>()[i];
      }
    }
    lengths = ComputeSplitLengths(X.dims(), axis_, OutputSize(), lengths);
    const int axis = X.canonical_axis(axis_.axis);
    const std::vector<int64_t>& xd = X.dims();
    const int64_t outer = Product(xd, 0, axis);
    const int64_t inner = Product(xd, axis + 1, xd.size());
    const size_t item = DataTypeSize(X.dtype());
    const size_t x_row = static_cast<size_t>(xd[axis] * inner) * item;
    const char* x = static_cast<const char*>(X.raw_data());
    size_t offset = 0;
    for (int k = 0; k < OutputSize(); ++k) {
      std::vector<int64_t> dims = xd;
      if (axis_.add_axis) {
        dims.erase(dims.begin() + axis);
      } else {
        dims[axis] = lengths[k];
      }
      Tensor* Yk = Output(k, dims);
      char* y = static_cast<char*>(Yk->raw_mutable_data(X.dtype()));
      const size_t row = static_cast<size_t>(lengths[k] * inner) * item;
      gpu::CopyRowsAsync(static_cast<size_t>(outer), row, x + offset, x_row, y, row,
                         context_.stream());
      offset += row;
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
