// ResizeNearest / ResizeBilinear and their gradients on CUDA (gpu/resize_kernels.h), float and
// float16, NCHW and NHWC. The coordinate tables are computed on the host exactly as for the CPU
// operators (resize_op.cc, which holds the schemas and the gradient maker) and copied to the device
// when the shape or the scales change. The optional scales input may live on the host or on the
// device (then it is copied back, which waits for the device).
#include <algorithm>
#include <cstring>
#include <initializer_list>

#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/resize_kernels.h"
#include "operators/nn/resize_op.h"

namespace halfcaf {

namespace {

// Concatenates vectors into one host tensor of `dtype` (INT64 for T = int64_t, FLOAT for float).
template <typename T>
Tensor Pack(DataType dtype, std::initializer_list<const std::vector<T>*> parts) {
  int64_t n = 0;
  for (const auto* p : parts) n += static_cast<int64_t>(p->size());
  Tensor t({n}, dtype);
  T* d = t.mutable_data<T>();
  for (const auto* p : parts) d = std::copy(p->begin(), p->end(), d);
  return t;
}

// Resize args and geometry for a run, the scales taken from input `scales_input` when present.
class ResizeCudaBase : public Operator<CUDAContext> {
 public:
  ResizeCudaBase(const OperatorDef& def, Workspace* ws, ResizeKind kind)
      : Operator(def, ws),
        a_(ParseResizeArgs(args_, kind, DebugName())),
        ints_(context_.device()),
        floats_(context_.device()) {}

 protected:
  ResizeArgs RunArgs(int scales_input) const {
    ResizeArgs a = a_;
    if (InputSize() > scales_input) {
      const Tensor& s = inputs_.at(scales_input)->GetTensor();
      if (s.device().type == DeviceType::CPU) {
        SetScalesFromInput(&a, s);
      } else {
        Tensor host;
        host.CopyFrom(s);
        SetScalesFromInput(&a, host);
      }
    }
    return a;
  }

  // What the tables depend on: X's dims and the scales. They are rebuilt when it changes.
  static std::vector<int64_t> Key(const std::vector<int64_t>& x_dims, const ResizeArgs& a) {
    std::vector<int64_t> key = x_dims;
    for (float f : {a.height_scale, a.width_scale}) {
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof(bits));
      key.push_back(bits);
    }
    return key;
  }

  static gpu::ResizeKernelShape Shape(const ResizeGeometry& g) {
    return gpu::ResizeKernelShape{g.N, g.C, g.H, g.W, g.OH, g.OW, g.nhwc};
  }

  ResizeArgs a_;
  Tensor ints_, floats_;  // the device tables
  std::vector<int64_t> key_;
};

template <ResizeKind kKind>
class ResizeCUDAOp final : public ResizeCudaBase {
 public:
  ResizeCUDAOp(const OperatorDef& def, Workspace* ws) : ResizeCudaBase(def, ws, kKind) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFloatType(X, "resize input X");
    const ResizeArgs a = RunArgs(1);
    const ResizeGeometry g = ComputeResizeGeometry(a, X.dims());
    const std::vector<int64_t> key = Key(X.dims(), a);
    if (key != key_) {
      const ResizeTaps ty = MakeResizeTaps(a, g.H, g.OH, a.height_scale);
      const ResizeTaps tx = MakeResizeTaps(a, g.W, g.OW, a.width_scale);
      ints_.CopyFrom(Pack<int64_t>(DataType::INT64, {&ty.i0, &ty.i1, &tx.i0, &tx.i1}));
      floats_.CopyFrom(Pack<float>(DataType::FLOAT, {&ty.l0, &ty.l1, &tx.l0, &tx.l1}));
      key_ = key;
    }
    const int64_t* i = ints_.data<int64_t>();
    const float* l = floats_.data<float>();
    const gpu::ResizeTapsView ty{i, i + g.OH, l, l + g.OH};
    const gpu::ResizeTapsView tx{i + 2 * g.OH, i + 2 * g.OH + g.OW, l + 2 * g.OH,
                                 l + 2 * g.OH + g.OW};
    Tensor* Y = Output(0, g.YDims());
    gpu::ResizeForward(Shape(g), kKind == ResizeKind::kNearest, ty, tx, X.dtype(), X.raw_data(),
                       Y->raw_mutable_data(X.dtype()), context_.stream());
  }
};

template <ResizeKind kKind>
class ResizeGradientCUDAOp final : public ResizeCudaBase {
 public:
  ResizeGradientCUDAOp(const OperatorDef& def, Workspace* ws) : ResizeCudaBase(def, ws, kKind) {}

  void RunOnDevice() override {
    const Tensor& dY = Input(0);
    const Tensor& X = Input(1);
    EnforceFloatType(dY, "resize gradient dY");
    EnforceFloatType(X, "resize gradient X");
    const ResizeArgs a = RunArgs(2);
    const ResizeGeometry g = ComputeResizeGeometry(a, X.dims());
    CheckResizeGradientDY(a, g, dY.dims());
    const std::vector<int64_t> key = Key(X.dims(), a);
    if (key != key_) {
      const bool nearest = kKind == ResizeKind::kNearest;
      const ResizeGather gy =
          MakeResizeGather(MakeResizeTaps(a, g.H, g.OH, a.height_scale), g.H, nearest);
      const ResizeGather gx =
          MakeResizeGather(MakeResizeTaps(a, g.W, g.OW, a.width_scale), g.W, nearest);
      ints_.CopyFrom(Pack<int64_t>(DataType::INT64, {&gy.offsets, &gy.out, &gx.offsets, &gx.out}));
      floats_.CopyFrom(Pack<float>(DataType::FLOAT, {&gy.weight, &gx.weight}));
      y_entries_ = static_cast<int64_t>(gy.out.size());
      key_ = key;
    }
    // Layout: [offsets y (H + 1) | out y | offsets x (W + 1) | out x], [weights y | weights x].
    const int64_t* i = ints_.data<int64_t>();
    const float* w = floats_.data<float>();
    const int64_t* x_part = i + (g.H + 1) + y_entries_;
    const gpu::ResizeGatherView gy{i, i + g.H + 1, w};
    const gpu::ResizeGatherView gx{x_part, x_part + g.W + 1, w + y_entries_};
    Tensor* dX = Output(0, X.dims());
    gpu::ResizeBackward(Shape(g), gy, gx, dY.dtype(), dY.raw_data(), X.dtype(),
                        dX->raw_mutable_data(X.dtype()), context_.stream());
  }

 private:
  int64_t y_entries_ = 0;
};

}  // namespace

REGISTER_CUDA_OPERATOR(ResizeNearest, ResizeCUDAOp<ResizeKind::kNearest>);
REGISTER_CUDA_OPERATOR(ResizeBilinear, ResizeCUDAOp<ResizeKind::kBilinear>);
REGISTER_CUDA_OPERATOR(ResizeNearestGradient, ResizeGradientCUDAOp<ResizeKind::kNearest>);
REGISTER_CUDA_OPERATOR(ResizeBilinearGradient, ResizeGradientCUDAOp<ResizeKind::kBilinear>);

}  // namespace halfcaf
