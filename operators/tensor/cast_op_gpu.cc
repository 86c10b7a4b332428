// CUDA versions of Cast, FloatToHalf / HalfToFloat, FloatToBFloat16 / BFloat16ToFloat, and the
// CPU<->GPU copy operators.
#include "core/gradient.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/pinned_buffer.h"
#include "gpu/elementwise_kernels.h"
#include "gpu/math_gpu.h"
#include "gpu/tensor_copy.h"
#include "operators/tensor/cast_op.h"

namespace halfcaf {

namespace {

// Cast between any numeric types (gpu::Convert: the CPU's conversion rules). In place with another
// element size the input is first copied to a device scratch tensor.
class CastCUDAOp final : public Operator<CUDAContext> {
 public:
  CastCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), to_(ReadTypeArg(args_, "to", DataType::FLOAT)) {
    HALFCAF_ENFORCE(DataTypeSize(to_) > 0, "Cast cannot produce type ", DataTypeName(to_));
    tmp_.SetDevice(context_.device());
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    Tensor* Y = Output(0);
    cudaStream_t stream = context_.stream();
    if (X.dtype() == to_) {
      gpu::CopyTensorAsync(X, Y, stream);
      return;
    }
    const Tensor* src = &X;
    if (Y == &X) {
      gpu::CopyTensorAsync(X, &tmp_, stream);
      src = &tmp_;
    }
    Y->Resize(src->dims());
    gpu::Convert(src->numel(), src->dtype(), src->raw_data(), to_, Y->raw_mutable_data(to_),
                 stream);
  }

 private:
  DataType to_;
  Tensor tmp_;
};

class FloatToHalfCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    HALFCAF_ENFORCE(X.dtype() == DataType::FLOAT, "FloatToHalf expects float input, got ",
                    X.DebugString());
    Tensor* Y = Output(0, X.dims());
    gpu::FloatToHalf(X.numel(), X.data<float>(), Y->mutable_data<Half>(), context_.stream());
  }
};

class HalfToFloatCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    HALFCAF_ENFORCE(X.dtype() == DataType::FLOAT16, "HalfToFloat expects float16 input, got ",
                    X.DebugString());
    Tensor* Y = Output(0, X.dims());
    gpu::HalfToFloat(X.numel(), X.data<Half>(), Y->mutable_data<float>(), context_.stream());
  }
};

// A cast between two fixed types (FloatToBFloat16, BFloat16ToFloat), by gpu::Convert.
template <DataType kFrom, DataType kTo>
class FixedCastCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFixedCastInput(X, kFrom, type());
    Tensor* Y = Output(0, X.dims());
    gpu::Convert(X.numel(), kFrom, X.raw_data(), kTo, Y->raw_mutable_data(kTo), context_.stream());
  }
};

// Copies between the host and the op's GPU; runs under a CUDA device option. To the GPU: through
// a pinned staging buffer, queued on the op's stream (the host does not wait for the transfer;
// kernels queued after it on the stream see the data). To the host: after the op's stream has
// finished producing X, a synchronous copy.
template <bool kToGpu>
class CopyHostDeviceOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    if (kToGpu) {
      const Tensor& X = CPUInput(0);
      Tensor* Y = OutputBlob(0)->GetMutableTensor(context_.device());
      Y->Resize(X.dims());
      void* dst = Y->raw_mutable_data(X.dtype());
      if (X.nbytes() > 0) staging_.CopyToDevice(X.raw_data(), X.nbytes(), dst, context_.stream());
      return;
    }
    const Tensor& X = Input(0);
    Tensor* Y = OutputBlob(0)->GetMutableTensor(Device());
    context_.FinishDevice();  // producers of X on this stream are done
    Y->CopyFrom(X);
  }

 private:
  gpu::PinnedStagingBuffer staging_;
};

class GetCopyCPUToGPUGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("CopyGPUToCPU", {GO(0)}, {GI(0)});
  }
};

class GetCopyGPUToCPUGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("CopyCPUToGPU", {GO(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(Cast, CastCUDAOp);
REGISTER_CUDA_OPERATOR(FloatToHalf, FloatToHalfCUDAOp);
REGISTER_CUDA_OPERATOR(HalfToFloat, HalfToFloatCUDAOp);
REGISTER_CUDA_OPERATOR(FloatToBFloat16, FixedCastCUDAOp<DataType::FLOAT, DataType::BFLOAT16>);
REGISTER_CUDA_OPERATOR(BFloat16ToFloat, FixedCastCUDAOp<DataType::BFLOAT16, DataType::FLOAT>);
REGISTER_CUDA_OPERATOR(CopyCPUToGPU, CopyHostDeviceOp<true>);
REGISTER_CUDA_OPERATOR(CopyGPUToCPU, CopyHostDeviceOp<false>);
// CopyFromCPUInput (schema in copy_op.cc) is CopyCPUToGPU under the name Caffe2 gives the
// "CPU input, output in the op's context" copy.
REGISTER_CUDA_OPERATOR(CopyFromCPUInput, CopyHostDeviceOp<true>);
REGISTER_GRADIENT(CopyCPUToGPU, GetCopyCPUToGPUGradient);
REGISTER_GRADIENT(CopyGPUToCPU, GetCopyGPUToCPUGradient);

OPERATOR_SCHEMA(CopyCPUToGPU)
    .NumInputs(1)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .SetDoc("Copies a CPU tensor to the GPU named by the op's device_option (CUDA build only).")
    .Input(0, "X", "CPU tensor")
    .Output(0, "Y", "GPU tensor");

OPERATOR_SCHEMA(CopyGPUToCPU)
    .NumInputs(1)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .SetDoc("Copies a GPU tensor to the CPU (CUDA build only; runs under a CUDA device_option).")
    .Input(0, "X", "GPU tensor")
    .Output(0, "Y", "CPU tensor");

}  // namespace halfcaf
