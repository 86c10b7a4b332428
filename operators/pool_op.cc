#include "operators/pool_op.h"

#include <algorithm>
#include <limits>

#include "core/float_io.h"
#include "core/gradient.h"
#include "operators/cpu_parallel.h"

namespace halfcaf {

namespace {

// The in-image part [h0, h1) x [w0, w1) of the window of output (oh, ow).
struct Window {
  int64_t h0, h1, w0, w1;
  int64_t count() const { return (h1 - h0) * (w1 - w0); }
};

Window WindowAt(const ConvPoolGeometry& g, int64_t oh, int64_t ow) {
  Window win;
  win.h0 = oh * g.stride[0] - g.pad_head(0);
  win.w0 = ow * g.stride[1] - g.pad_head(1);
  win.h1 = std::min(win.h0 + g.kernel[0], g.in[0]);
  win.w1 = std::min(win.w0 + g.kernel[1], g.in[1]);
  win.h0 = std::max<int64_t>(win.h0, 0);
  win.w0 = std::max<int64_t>(win.w0, 0);
  // Caffe's legacy pooling can leave a last window wholly in the padding: make it empty.
  win.h1 = std::max(win.h1, win.h0);
  win.w1 = std::max(win.w1, win.w0);
  return win;
}

void Enforce2D(const ConvPoolArgs& a) {
  HALFCAF_ENFORCE(a.num_spatial_dims() == 2, a.op_label,
                  ": only 2-D pooling is implemented, got kernels ", DimsString(a.kernel));
}

const char* PoolName(PoolType t) { return t == PoolType::kMax ? "MaxPool" : "AveragePool"; }

}  // namespace

template <PoolType kType>
PoolOp<kType>::PoolOp(const OperatorDef& def, Workspace* ws)
    : ConvPoolOpBase(def, ws, ConvPoolKind::kPool) {
  Enforce2D(cp_);
}

template <PoolType kType>
void PoolOp<kType>::RunOnDevice() {
  const Tensor& X = Input(0);
  EnforceFloatType(X, "pooling input X");
  const ConvPoolGeometry g = Geometry(X.dims());
  Tensor* Y = Output(0, g.OutputDims(g.C, cp_.order));
  const float* x = ReadAsFloat(X, &x_);
  FloatWriter yw(Y, X.dtype(), &y_);
  float* y = yw.data();
  const int64_t C = g.C, H = g.in[0], W = g.in[1], OH = g.out[0], OW = g.out[1];
  const float lowest = -std::numeric_limits<float>::infinity();

  if (cp_.order == StorageOrder::NCHW) {
    // Planes are independent: split them over the threads.
    const double work = static_cast<double>(OH * OW) * g.kernel_size();
    ParallelFor(g.N * C, work, [&](int64_t nc0, int64_t nc1) {
      for (int64_t nc = nc0; nc < nc1; ++nc) {
        const float* xp = x + nc * H * W;
        float* yp = y + nc * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh) {
          for (int64_t ow = 0; ow < OW; ++ow) {
            const Window win = WindowAt(g, oh, ow);
            float acc = kType == PoolType::kMax ? lowest : 0.f;
            for (int64_t h = win.h0; h < win.h1; ++h) {
              for (int64_t w = win.w0; w < win.w1; ++w) {
                const float v = xp[h * W + w];
                acc = kType == PoolType::kMax ? std::max(acc, v) : acc + v;
              }
            }
            const int64_t count = win.count();
            if (count == 0) {
              acc = 0.f;
            } else if (kType == PoolType::kAverage) {
              acc /= static_cast<float>(count);
            }
            yp[oh * OW + ow] = acc;
          }
        }
      }
    });
  } else {
    // Output rows are independent: split (image, output row) pairs over the threads.
    const double work = static_cast<double>(OW * C) * g.kernel_size();
    ParallelFor(g.N * OH, work, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / OH, oh = r % OH;
        const float* ximg = x + n * H * W * C;
        float* yimg = y + n * OH * OW * C;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const Window win = WindowAt(g, oh, ow);
          float* yo = yimg + (oh * OW + ow) * C;
          std::fill_n(yo, C, kType == PoolType::kMax ? lowest : 0.f);
          for (int64_t h = win.h0; h < win.h1; ++h) {
            for (int64_t w = win.w0; w < win.w1; ++w) {
              const float* xs = ximg + (h * W + w) * C;
              if (kType == PoolType::kMax) {
                for (int64_t c = 0; c < C; ++c) yo[c] = std::max(yo[c], xs[c]);
              } else {
                for (int64_t c = 0; c < C; ++c) yo[c] += xs[c];
              }
            }
          }
          const int64_t count = win.count();
          if (count == 0) {
            std::fill_n(yo, C, 0.f);
          } else if (kType == PoolType::kAverage) {
            const float inv = 1.f / static_cast<float>(count);
            for (int64_t c = 0; c < C; ++c) yo[c] *= inv;
          }
        }
      }
    });
  }
  yw.Commit();
}

template <PoolType kType>
PoolGradientOp<kType>::PoolGradientOp(const OperatorDef& def, Workspace* ws)
    : ConvPoolOpBase(def, ws, ConvPoolKind::kPool) {
  Enforce2D(cp_);
}

template <PoolType kType>
void PoolGradientOp<kType>::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& Yt = Input(1);
  const Tensor& dY = Input(2);
  EnforceFloatType(X, "pooling gradient input X");
  EnforceFloatType(Yt, "pooling gradient input Y");
  EnforceFloatType(dY, "pooling gradient input dY");
  const ConvPoolGeometry g = Geometry(X.dims());
  const std::vector<int64_t> y_dims = g.OutputDims(g.C, cp_.order);
  HALFCAF_ENFORCE(Yt.dims() == y_dims && dY.dims() == y_dims, cp_.op_label,
                  ": Y and dY must have the pooled shape ", DimsString(y_dims), " of X ",
                  DimsString(X.dims()), ", got Y ", DimsString(Yt.dims()), " and dY ",
                  DimsString(dY.dims()));
  const float* x = ReadAsFloat(X, &x_);
  const float* dy = ReadAsFloat(dY, &dy_);
  FloatWriter dxw(Output(0, X.dims()), X.dtype(), &dx_);
  float* dx = dxw.data();
  std::fill_n(dx, X.numel(), 0.f);
  const int64_t C = g.C, H = g.in[0], W = g.in[1], OH = g.out[0], OW = g.out[1];

  if (cp_.order == StorageOrder::NCHW) {
    const double work = static_cast<double>(OH * OW) * g.kernel_size();
    ParallelFor(g.N * C, work, [&](int64_t nc0, int64_t nc1) {
      for (int64_t nc = nc0; nc < nc1; ++nc) {
        const float* xp = x + nc * H * W;
        const float* dyp = dy + nc * OH * OW;
        float* dxp = dx + nc * H * W;
        for (int64_t oh = 0; oh < OH; ++oh) {
          for (int64_t ow = 0; ow < OW; ++ow) {
            const Window win = WindowAt(g, oh, ow);
            const int64_t count = win.count();
            if (count == 0) continue;
            const float d = dyp[oh * OW + ow];
            if (kType == PoolType::kMax) {
              int64_t best = win.h0 * W + win.w0;
              for (int64_t h = win.h0; h < win.h1; ++h) {
                for (int64_t w = win.w0; w < win.w1; ++w) {
                  if (xp[h * W + w] > xp[best]) best = h * W + w;
                }
              }
              dxp[best] += d;
            } else {
              const float share = d / static_cast<float>(count);
              for (int64_t h = win.h0; h < win.h1; ++h) {
                for (int64_t w = win.w0; w < win.w1; ++w) dxp[h * W + w] += share;
              }
            }
          }
        }
      }
    });
  } else {
    // Windows overlap within an image, so images (not rows) are split over the threads.
    const double work = static_cast<double>(OH * OW * C) * g.kernel_size();
    ParallelFor(g.N, work, [&](int64_t n0, int64_t n1) {
      std::vector<float> best(kType == PoolType::kMax ? C : 0);
      std::vector<int64_t> best_index(best.size());
      for (int64_t n = n0; n < n1; ++n) {
        const float* ximg = x + n * H * W * C;
        float* dximg = dx + n * H * W * C;
        for (int64_t oh = 0; oh < OH; ++oh) {
          for (int64_t ow = 0; ow < OW; ++ow) {
            const Window win = WindowAt(g, oh, ow);
            const int64_t count = win.count();
            if (count == 0) continue;
            const float* dyo = dy + ((n * OH + oh) * OW + ow) * C;
            if (kType == PoolType::kMax) {
              const int64_t first = win.h0 * W + win.w0;
              std::copy_n(ximg + first * C, C, best.begin());
              std::fill(best_index.begin(), best_index.end(), first);
              for (int64_t h = win.h0; h < win.h1; ++h) {
                for (int64_t w = win.w0; w < win.w1; ++w) {
                  const float* xs = ximg + (h * W + w) * C;
                  for (int64_t c = 0; c < C; ++c) {
                    if (xs[c] > best[c]) {
                      best[c] = xs[c];
                      best_index[c] = h * W + w;
                    }
                  }
                }
              }
              for (int64_t c = 0; c < C; ++c) dximg[best_index[c] * C + c] += dyo[c];
            } else {
              const float inv = 1.f / static_cast<float>(count);
              for (int64_t h = win.h0; h < win.h1; ++h) {
                for (int64_t w = win.w0; w < win.w1; ++w) {
                  float* dxs = dximg + (h * W + w) * C;
                  for (int64_t c = 0; c < C; ++c) dxs[c] += dyo[c] * inv;
                }
              }
            }
          }
        }
      }
    });
  }
  dxw.Commit();
}

namespace {

class GetPoolGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef(def_.type() + "Gradient", {I(0), O(0), GO(0)}, {GI(0)});
  }
};

OpSchema& DescribePool(OpSchema& s, PoolType t) {
  const std::string what =
      t == PoolType::kMax
          ? "Max pooling: each output is the maximum of its window."
          : "Average pooling: each output is the mean of its window's in-image elements "
            "(padding is not counted in the divisor).";
  return s.NumInputs(1)
      .NumOutputs(1)
      .TensorInferenceFunction(PoolShapeInference)
      .CostInferenceFunction(PoolCost)
      .SetDoc(what +
              " 2-D, NCHW (N, C, H, W) or NHWC (N, H, W, C); channels are unchanged, "
              "output sizes follow the kernel/stride/pad/legacy_pad arguments as for Conv. "
              "global_pooling=1 pools the whole image (output 1x1, no kernel needed). Pads must "
              "be smaller than the kernel; dilation must be 1. Float and float16 (output dtype "
              "of X).")
      .Arg("kernel / kernels / kernel_h, kernel_w", "ints: window size (unless global_pooling)")
      .Arg("stride / strides / stride_h, stride_w", "ints, default 1")
      .Arg("pad / pads / pad_t, pad_l, pad_b, pad_r",
           "ints, default 0; each smaller than the kernel")
      .Arg("legacy_pad", "int, default 0: 0 NOTSET, 1 VALID, 2 SAME, 3 CAFFE_LEGACY_POOLING")
      .Arg("global_pooling", "int, default 0: pool over the whole image")
      .Arg("order", "string, default \"NCHW\": \"NCHW\" or \"NHWC\" (any case)")
      .Input(0, "X", "input images")
      .Output(0, "Y", "pooled images");
}

OpSchema& DescribePoolGradient(OpSchema& s, PoolType t) {
  return s.NumInputs(3)
      .NumOutputs(1)
      .IdenticalTypeAndShapeOfInput(0)
      .CostInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
        OpCost c = PoolCost(def, {in.at(0)});
        c.bytes_read +=
            static_cast<double>(in.at(1).numel() + in.at(2).numel()) * DataTypeSize(in[2].dtype);
        c.bytes_written = static_cast<double>(in[0].numel()) * DataTypeSize(in[0].dtype);
        return c;
      })
      .SetDoc(std::string("Gradient of ") + PoolName(t) +
              (t == PoolType::kMax
                   ? ": each window's dY goes to the first element holding its maximum."
                   : ": each window's dY is shared equally by its in-image elements.") +
              " Takes the forward op's arguments.")
      .Input(0, "X", "forward input")
      .Input(1, "Y", "forward output")
      .Input(2, "dY", "gradient of Y")
      .Output(0, "dX", "gradient of X");
}

}  // namespace

using MaxPoolOp = PoolOp<PoolType::kMax>;
using AveragePoolOp = PoolOp<PoolType::kAverage>;
using MaxPoolGradientOp = PoolGradientOp<PoolType::kMax>;
using AveragePoolGradientOp = PoolGradientOp<PoolType::kAverage>;

REGISTER_CPU_OPERATOR(MaxPool, MaxPoolOp);
REGISTER_CPU_OPERATOR(MaxPool2D, MaxPoolOp);
REGISTER_CPU_OPERATOR(AveragePool, AveragePoolOp);
REGISTER_CPU_OPERATOR(AveragePool2D, AveragePoolOp);
REGISTER_CPU_OPERATOR(MaxPoolGradient, MaxPoolGradientOp);
REGISTER_CPU_OPERATOR(MaxPool2DGradient, MaxPoolGradientOp);
REGISTER_CPU_OPERATOR(AveragePoolGradient, AveragePoolGradientOp);
REGISTER_CPU_OPERATOR(AveragePool2DGradient, AveragePoolGradientOp);
REGISTER_GRADIENT(MaxPool, GetPoolGradient);
REGISTER_GRADIENT(MaxPool2D, GetPoolGradient);
REGISTER_GRADIENT(AveragePool, GetPoolGradient);
REGISTER_GRADIENT(AveragePool2D, GetPoolGradient);

#define HALFCAF_POOL_SCHEMA(type, describe, kind)     \
  [[maybe_unused]] static OpSchema& g_schema_##type = \
      describe(OpSchemaRegistry::NewSchema(#type, __FILE__, __LINE__), PoolType::kind)
HALFCAF_POOL_SCHEMA(MaxPool, DescribePool, kMax);
HALFCAF_POOL_SCHEMA(MaxPool2D, DescribePool, kMax);
HALFCAF_POOL_SCHEMA(AveragePool, DescribePool, kAverage);
HALFCAF_POOL_SCHEMA(AveragePool2D, DescribePool, kAverage);
HALFCAF_POOL_SCHEMA(MaxPoolGradient, DescribePoolGradient, kMax);
HALFCAF_POOL_SCHEMA(MaxPool2DGradient, DescribePoolGradient, kMax);
HALFCAF_POOL_SCHEMA(AveragePoolGradient, DescribePoolGradient, kAverage);
HALFCAF_POOL_SCHEMA(AveragePool2DGradient, DescribePoolGradient, kAverage);
#undef HALFCAF_POOL_SCHEMA

}  // namespace halfcaf
