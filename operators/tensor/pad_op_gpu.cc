// PadImage and PadImageGradient on CUDA (gpu/pad_kernels.h), float and float16. Arguments,
// shapes and errors as in pad_op.cc, which holds the schemas and the gradient maker.
#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/pad_kernels.h"
#include "operators/tensor/pad_op.h"

namespace halfcaf {

namespace {

template <bool kGradient>
class PadImageCUDAOp final : public Operator<CUDAContext> {
 public:
  PadImageCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), pad_(ParsePadImageArgs(def)) {}

  void RunOnDevice() override {
    const Tensor& in = Input(0);
    EnforceFloatType(in, kGradient ? "dY" : "X");
    const PadImageGeometry g =
        kGradient ? PadGeometryFromOutput(pad_, in.dims()) : PadGeometryFromInput(pad_, in.dims());
    gpu::PadImageDims d;
    d.outer = g.outer;
    d.height = g.height;
    d.width = g.width;
    d.channels = g.channels;
    d.pad_t = pad_.pad_t;
    d.pad_l = pad_.pad_l;
    d.pad_b = pad_.pad_b;
    d.pad_r = pad_.pad_r;
    d.mode = static_cast<int>(pad_.mode);
    const DataType dtype = in.dtype();
    Tensor* out = Output(0, kGradient ? g.x_dims : g.y_dims);
    void* o = out->raw_mutable_data(dtype);
    if (kGradient) {
      gpu::PadImageBackward(d, dtype, in.raw_data(), o, context_.stream());
    } else {
      gpu::PadImageForward(d, pad_.value, dtype, in.raw_data(), o, context_.stream());
    }
  }

 private:
  PadImageArgs pad_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(PadImage, PadImageCUDAOp<false>);
REGISTER_CUDA_OPERATOR(PadImageGradient, PadImageCUDAOp<true>);

}  // namespace halfcaf
