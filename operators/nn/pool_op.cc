#include "operators/nn/pool_op.h"

#include <algorithm>
#include <limits>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/nan_math.h"
#include "operators/cpu_parallel.h"
#include "operators/math/bf16_vector_loops.h"
#include "operators/nn/channel_block.h"

namespace halfcaf {

namespace {

// One dim of a window: of its taps start + i * dilation (0 <= i < kernel), those inside
// [0, size), as [*lo, *hi) walked in steps of the dilation (*hi == *lo when there is none: Caffe's
// legacy pooling can leave a last window wholly in the padding). Returns how many there are.
int64_t ClipTaps(int64_t start, int64_t kernel, int64_t dilation, int64_t size, int64_t* lo,
                 int64_t* hi) {
  const int64_t first = start >= 0 ? 0 : (dilation - 1 - start) / dilation;
  const int64_t end = size > start ? std::min(kernel, (size - start + dilation - 1) / dilation) : 0;
  const int64_t n = std::max<int64_t>(end - first, 0);
  *lo = start + first * dilation;
  *hi = *lo + n * dilation;
  return n;
}

// The in-image taps [h0, h1) x [w0, w1) of the window of output (oh, ow), rows dh and columns dw
// apart (the dilations).
struct Window {
  int64_t h0, h1, w0, w1, dh, dw, rows, cols;
  int64_t count() const { return rows * cols; }
};

Window WindowAt(const ConvPoolGeometry& g, int64_t oh, int64_t ow) {
  Window win;
  win.dh = g.dilation[0];
  win.dw = g.dilation[1];
  win.rows = ClipTaps(oh * g.stride[0] - g.pad_head(0), g.kernel[0], win.dh, g.in[0], &win.h0,
                      &win.h1);
  win.cols = ClipTaps(ow * g.stride[1] - g.pad_head(1), g.kernel[1], win.dw, g.in[1], &win.w0,
                      &win.w1);
  return win;
}

// The first maximum (BeatsMax: the larger, or the first NaN) of NHWC channels [c0, c0 + lanes)
// over a window's taps in scan order, as a pixel h * W + w per channel. kLanes > 1: exactly that
// many channels, in fixed-size arrays so that the compare-and-select vectorizes; kLanes 1: any
// `lanes`.
constexpr int64_t kArgMaxLanes = 16;
template <int64_t kLanes>
void WindowArgMax(const float* ximg, int64_t W, int64_t C, const Window& win, int64_t c0,
                  int64_t lanes, int32_t* at) {
  const int64_t n = kLanes > 1 ? kLanes : lanes;
  float best[kArgMaxLanes];
  const int32_t first = static_cast<int32_t>(win.h0 * W + win.w0);
  for (int64_t k = 0; k < n; ++k) {
    best[k] = ximg[first * C + c0 + k];
    at[k] = first;
  }
  for (int64_t h = win.h0; h < win.h1; h += win.dh) {
    for (int64_t w = win.w0; w < win.w1; w += win.dw) {
      const int32_t p = static_cast<int32_t>(h * W + w);
      const float* xs = ximg + p * C + c0;
      for (int64_t k = 0; k < n; ++k) {
        const float v = xs[k], b = best[k];
        const bool take = v > b || (v != v && b == b);  // BeatsMax(v, b)
        best[k] = take ? v : b;
        at[k] = take ? p : at[k];
      }
    }
  }
}
const char* PoolName(PoolType t) { return t == PoolType::kMax ? "MaxPool" : "AveragePool"; }

// ---- N-d NCHW pooling (1-D, 3-D, ...): the same window rules as the 2-D code above, on one
// (n, c) plane at a time, with the spatial dims walked as multi-indices in scan order (last dim
// fastest).

// Steps the multi-index `idx` to the next position of a grid of `sizes` (last dim fastest).
void NextIndex(const std::vector<int64_t>& sizes, std::vector<int64_t>* idx) {
  for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
    if (++(*idx)[d] < sizes[d]) return;
    (*idx)[d] = 0;
  }
}

// The in-image taps [lo[d], hi[d]) (g.dilation[d] apart) of the window of output position `o`;
// returns their number.
int64_t WindowNdAt(const ConvPoolGeometry& g, const std::vector<int64_t>& o,
                   std::vector<int64_t>* lo, std::vector<int64_t>* hi) {
  int64_t count = 1;
  for (int d = 0; d < g.num_spatial_dims(); ++d) {
    count *= ClipTaps(o[d] * g.stride[d] - g.pad_head(d), g.kernel[d], g.dilation[d], g.in[d],
                      &(*lo)[d], &(*hi)[d]);
  }
  return count;
}

// Calls f(flat index in the plane) for each tap of a non-empty window, in scan order. `pos` is
// scratch with one entry per dim.
template <typename F>
void ForEachInWindow(const ConvPoolGeometry& g, const std::vector<int64_t>& lo,
                     const std::vector<int64_t>& hi, std::vector<int64_t>* pos, F&& f) {
  const std::vector<int64_t>& in = g.in;
  const int nd = static_cast<int>(in.size());
  std::copy(lo.begin(), lo.end(), pos->begin());
  while (true) {
    int64_t base = 0;
    for (int d = 0; d < nd - 1; ++d) base = base * in[d] + (*pos)[d];
    base *= in[nd - 1];
    for (int64_t i = lo[nd - 1]; i < hi[nd - 1]; i += g.dilation[nd - 1]) f(base + i);
    int d = nd - 2;
    for (; d >= 0; --d) {
      if (((*pos)[d] += g.dilation[d]) < hi[d]) break;
      (*pos)[d] = lo[d];
    }
    if (d < 0) return;
  }
}

// Runs body(plane index, output multi-index, flat output index, lo, hi, count, pos scratch) for
// every output of every (n, c) plane, planes split over the threads.
template <typename F>
void ForEachOutputNd(const ConvPoolGeometry& g, F&& body) {
  const int nd = g.num_spatial_dims();
  const int64_t out_size = g.out_size();
  const double work = static_cast<double>(out_size) * g.kernel_size();
  ParallelFor(g.N * g.C, work, [&](int64_t p0, int64_t p1) {
    std::vector<int64_t> o(nd), lo(nd), hi(nd), pos(nd);
    for (int64_t p = p0; p < p1; ++p) {
      std::fill(o.begin(), o.end(), 0);
      for (int64_t i = 0; i < out_size; ++i, NextIndex(g.out, &o)) {
        const int64_t count = WindowNdAt(g, o, &lo, &hi);
        body(p, i, lo, hi, count, &pos);
      }
    }
  });
}

template <PoolType kType>
void PoolForwardNd(const ConvPoolGeometry& g, const float* x, float* y) {
  const int64_t in_size = g.in_size(), out_size = g.out_size();
  ForEachOutputNd(g, [&](int64_t p, int64_t i, const std::vector<int64_t>& lo,
                         const std::vector<int64_t>& hi, int64_t count, std::vector<int64_t>* pos) {
    float acc = 0.f;
    if (count > 0) {
      const float* xp = x + p * in_size;
      acc = kType == PoolType::kMax ? -std::numeric_limits<float>::infinity() : 0.f;
      ForEachInWindow(g, lo, hi, pos, [&](int64_t j) {
        acc = kType == PoolType::kMax ? MaxNaN(acc, xp[j]) : acc + xp[j];
      });
      if (kType == PoolType::kAverage) acc /= static_cast<float>(count);
    }
    y[p * out_size + i] = acc;
  });
}

// dx must be zero on entry. Planes are independent, so each thread owns its planes of dx.
template <PoolType kType>
void PoolBackwardNd(const ConvPoolGeometry& g, const float* x, const float* dy, float* dx) {
  const int64_t in_size = g.in_size(), out_size = g.out_size();
  ForEachOutputNd(g, [&](int64_t p, int64_t i, const std::vector<int64_t>& lo,
                         const std::vector<int64_t>& hi, int64_t count, std::vector<int64_t>* pos) {
    if (count == 0) return;
    const float d = dy[p * out_size + i];
    const float* xp = x + p * in_size;
    float* dxp = dx + p * in_size;
    if (kType == PoolType::kMax) {
      int64_t best = -1;
      ForEachInWindow(g, lo, hi, pos, [&](int64_t j) {
        if (best < 0 || BeatsMax(xp[j], xp[best])) best = j;
      });
      dxp[best] += d;
    } else {
      const float share = d / static_cast<float>(count);
      ForEachInWindow(g, lo, hi, pos, [&](int64_t j) { dxp[j] += share; });
    }
  });
}

}  // namespace

void CheckPoolLayout(const ConvPoolArgs& a) {
  // Global pooling takes its rank from X: ComputeConvPoolGeometry checks it at run time.
  if (a.global_pooling) return;
  HALFCAF_ENFORCE(a.order == StorageOrder::NCHW || a.num_spatial_dims() == 2, a.op_label,
                  ": NHWC order supports only 2-D pooling, got a ", a.num_spatial_dims(),
                  "-D window ", DimsString(a.kernel), "; use order NCHW");
}

int64_t ReadPoolChannelBlock(const OperatorBase& op, const ConvPoolArgs& args) {
  const int64_t block = ReadChannelBlock(op);
  HALFCAF_ENFORCE(block == 0 || (args.order == StorageOrder::NCHW &&
                                 (args.global_pooling || args.num_spatial_dims() == 2)),
                  args.op_label, ": channel_block needs 2-D windows and order NCHW");
  return block;
}

PoolLayout PoolLayoutOf(const ConvPoolArgs& args, int64_t block,
                        const std::vector<int64_t>& x_dims) {
  PoolLayout p;
  if (block == 0) {
    p.g = ComputeConvPoolGeometry(args, x_dims);
    p.order = args.order;
    p.y_dims = p.g.OutputDims(p.g.C, p.order);
    return p;
  }
  UnblockedDims(x_dims, block, args.op_label, "X");  // checks the rank and the block
  ConvPoolArgs view = args;
  view.order = StorageOrder::NHWC;
  p.g = ComputeConvPoolGeometry(view, {x_dims[0] * x_dims[1], x_dims[2], x_dims[3], block});
  p.order = StorageOrder::NHWC;
  p.y_dims = {x_dims[0], x_dims[1], p.g.out[0], p.g.out[1], block};
  return p;
}

template <PoolType kType>
PoolOp<kType>::PoolOp(const OperatorDef& def, Workspace* ws)
    : ConvPoolOpBase(def, ws, ConvPoolKind::kPool), block_(ReadPoolChannelBlock(*this, cp_)) {
  CheckPoolLayout(cp_);
}

template <PoolType kType>
void PoolOp<kType>::RunOnDevice() {
  const Tensor& X = Input(0);
  EnforceFloatType(X, "pooling input X");
  const PoolLayout layout = PoolLayoutOf(cp_, block_, X.dims());
  const ConvPoolGeometry& g = layout.g;
  Tensor* Y = Output(0, layout.y_dims);
  const int64_t C = g.C;
  const float lowest = -std::numeric_limits<float>::infinity();
  if (g.num_spatial_dims() == 2 && layout.order == StorageOrder::NCHW) {
    // Planes are independent: split them over the threads. 16-bit planes are converted one at a
    // time (FloatIn / FloatOut), not as tensor-sized float copies.
    const int64_t H = g.in[0], W = g.in[1], OH = g.out[0], OW = g.out[1];
    const FloatIn xin(X);
    const FloatOut yout(Y, X.dtype());
    const double work = static_cast<double>(OH * OW) * g.kernel_size();
    ParallelFor(g.N * C, work, [&](int64_t nc0, int64_t nc1) {
      for (int64_t nc = nc0; nc < nc1; ++nc) {
        const float* xp = xin.Read(nc * H * W, H * W, 0);
        float* yp = yout.Begin(nc * OH * OW, OH * OW, 1);
        for (int64_t oh = 0; oh < OH; ++oh) {
          for (int64_t ow = 0; ow < OW; ++ow) {
            const Window win = WindowAt(g, oh, ow);
            float acc = kType == PoolType::kMax ? lowest : 0.f;
            for (int64_t h = win.h0; h < win.h1; h += win.dh) {
              for (int64_t w = win.w0; w < win.w1; w += win.dw) {
                const float v = xp[h * W + w];
                acc = kType == PoolType::kMax ? MaxNaN(acc, v) : acc + v;
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
        yout.End(nc * OH * OW, OH * OW, yp);
      }
    });
    return;
  }
  const float* x = ReadAsFloat(X, &x_);
  FloatWriter yw(Y, X.dtype(), &y_);
  float* y = yw.data();
  if (g.num_spatial_dims() != 2) {  // N-d: NCHW only (CheckPoolLayout)
    PoolForwardNd<kType>(g, x, y);
    yw.Commit();
    return;
  }
  const int64_t H = g.in[0], W = g.in[1], OH = g.out[0], OW = g.out[1];
  {
    // NHWC. Output rows are independent: split (image, output row) pairs over the threads.
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
          for (int64_t h = win.h0; h < win.h1; h += win.dh) {
            for (int64_t w = win.w0; w < win.w1; w += win.dw) {
              const float* xs = ximg + (h * W + w) * C;
              if (kType == PoolType::kMax) {
                // MaxNaN written so that it vectorizes: NaN wins, then the larger value.
                for (int64_t c = 0; c < C; ++c) {
                  const float v = xs[c], best = yo[c];
                  yo[c] = (v > best || v != v) ? v : best;
                }
              } else {
                for (int64_t c = 0; c < C; ++c) yo[c] += xs[c];
              }
            }
          }
          const int64_t count = win.count();
          if (count == 0) {
            std::fill_n(yo, C, 0.f);
          } else if (kType == PoolType::kAverage) {
            // Divided, as the NCHW loop does (so a channel-blocked pool is the NCHW one bit for
            // bit).
            const float n = static_cast<float>(count);
            for (int64_t c = 0; c < C; ++c) yo[c] /= n;
          }
        }
      }
    });
  }
  yw.Commit();
}

template <PoolType kType>
PoolGradientOp<kType>::PoolGradientOp(const OperatorDef& def, Workspace* ws)
    : ConvPoolOpBase(def, ws, ConvPoolKind::kPool), block_(ReadPoolChannelBlock(*this, cp_)) {
  CheckPoolLayout(cp_);
}

template <PoolType kType>
void PoolGradientOp<kType>::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& Yt = Input(1);
  const Tensor& dY = Input(2);
  EnforceFloatType(X, "pooling gradient input X");
  EnforceFloatType(Yt, "pooling gradient input Y");
  EnforceFloatType(dY, "pooling gradient input dY");
  const PoolLayout layout = PoolLayoutOf(cp_, block_, X.dims());
  const ConvPoolGeometry& g = layout.g;
  const std::vector<int64_t>& y_dims = layout.y_dims;
  HALFCAF_ENFORCE(Yt.dims() == y_dims && dY.dims() == y_dims, cp_.op_label,
                  ": Y and dY must have the pooled shape ", DimsString(y_dims), " of X ",
                  DimsString(X.dims()), ", got Y ", DimsString(Yt.dims()), " and dY ",
                  DimsString(dY.dims()));
  const int64_t C = g.C;
  if (g.num_spatial_dims() == 2 && layout.order == StorageOrder::NCHW) {
    // A plane at a time, as in the forward pass.
    const int64_t H = g.in[0], W = g.in[1], OH = g.out[0], OW = g.out[1];
    const FloatIn xin(X), dyin(dY);
    const FloatOut dxout(Output(0, X.dims()), X.dtype());
    const double work = static_cast<double>(OH * OW) * g.kernel_size();
    ParallelFor(g.N * C, work, [&](int64_t nc0, int64_t nc1) {
      for (int64_t nc = nc0; nc < nc1; ++nc) {
        const float* xp = xin.Read(nc * H * W, H * W, 0);
        const float* dyp = dyin.Read(nc * OH * OW, OH * OW, 1);
        float* dxp = dxout.Begin(nc * H * W, H * W, 2);
        std::fill_n(dxp, H * W, 0.f);
        for (int64_t oh = 0; oh < OH; ++oh) {
          for (int64_t ow = 0; ow < OW; ++ow) {
            const Window win = WindowAt(g, oh, ow);
            const int64_t count = win.count();
            if (count == 0) continue;
            const float d = dyp[oh * OW + ow];
            if (kType == PoolType::kMax) {
              int64_t best = win.h0 * W + win.w0;
              for (int64_t h = win.h0; h < win.h1; h += win.dh) {
                for (int64_t w = win.w0; w < win.w1; w += win.dw) {
                  if (BeatsMax(xp[h * W + w], xp[best])) best = h * W + w;
                }
              }
              dxp[best] += d;
            } else {
              const float share = d / static_cast<float>(count);
              for (int64_t h = win.h0; h < win.h1; h += win.dh) {
                for (int64_t w = win.w0; w < win.w1; w += win.dw) dxp[h * W + w] += share;
              }
            }
          }
        }
        dxout.End(nc * H * W, H * W, dxp);
      }
    });
    return;
  }
  if (g.num_spatial_dims() != 2) {  // N-d: NCHW only (CheckPoolLayout)
    const float* x = ReadAsFloat(X, &x_);
    const float* dy = ReadAsFloat(dY, &dy_);
    FloatWriter dxw(Output(0, X.dims()), X.dtype(), &dx_);
    std::fill_n(dxw.data(), X.numel(), 0.f);
    PoolBackwardNd<kType>(g, x, dy, dxw.data());
    dxw.Commit();
    return;
  }
  const int64_t H = g.in[0], W = g.in[1], OH = g.out[0], OW = g.out[1];
  // NHWC. Windows overlap within an image, so images (not rows) are split over the threads; an
  // image at a time, 16-bit images converted into thread buffers.
  HALFCAF_ENFORCE(H * W <= std::numeric_limits<int32_t>::max(), cp_.op_label,
                  ": an image of more than 2^31 pixels");
  const FloatIn xin(X), dyin(dY);
  const FloatOut dxout(Output(0, X.dims()), X.dtype());
  const int64_t image = H * W * C, out_image = OH * OW * C;
  const double work = static_cast<double>(out_image) * g.kernel_size();
  // bfloat16 max pooling: X's windows read as stored, on vectors (bf16_vector_loops.h).
  const uint16_t* xbits = kType == PoolType::kMax && X.dtype() == DataType::BFLOAT16 &&
                                  image <= std::numeric_limits<int32_t>::max() &&
                                  MaxPoolBFloat16VectorsRun(C)
                              ? static_cast<const uint16_t*>(xin.raw())
                              : nullptr;
  ParallelFor(g.N, work, [&](int64_t n0, int64_t n1) {
    std::vector<float> share(kType == PoolType::kAverage ? C : 0);
    for (int64_t n = n0; n < n1; ++n) {
      const float* ximg = xbits != nullptr ? nullptr : xin.Read(n * image, image, 0);
      const float* dyimg = dyin.Read(n * out_image, out_image, 1);
      float* dximg = dxout.Begin(n * image, image, 2);
      std::fill_n(dximg, image, 0.f);
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          const Window win = WindowAt(g, oh, ow);
          const int64_t count = win.count();
          if (count == 0) continue;
          const float* dyo = dyimg + (oh * OW + ow) * C;
          if (xbits != nullptr) {
            MaxPoolWindowGradientBFloat16(xbits + n * image, W, C, win.h0, win.h1, win.dh, win.w0,
                                          win.w1, win.dw, dyo, dximg);
          } else if (kType == PoolType::kMax) {
            for (int64_t c0 = 0; c0 < C; c0 += kArgMaxLanes) {
              const int64_t lanes = std::min(kArgMaxLanes, C - c0);
              int32_t at[kArgMaxLanes];
              if (lanes == kArgMaxLanes) {
                WindowArgMax<kArgMaxLanes>(ximg, W, C, win, c0, kArgMaxLanes, at);
              } else {
                WindowArgMax<1>(ximg, W, C, win, c0, lanes, at);
              }
              for (int64_t k = 0; k < lanes; ++k) dximg[at[k] * C + c0 + k] += dyo[c0 + k];
            }
          } else {
            // Each window's share dY / count, as the NCHW loop computes it.
            const float taps = static_cast<float>(count);
            for (int64_t c = 0; c < C; ++c) share[c] = dyo[c] / taps;
            for (int64_t h = win.h0; h < win.h1; h += win.dh) {
              for (int64_t w = win.w0; w < win.w1; w += win.dw) {
                float* dxs = dximg + (h * W + w) * C;
                for (int64_t c = 0; c < C; ++c) dxs[c] += share[c];
              }
            }
          }
        }
      }
      dxout.End(n * image, image, dximg);
    }
  });
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
              " Over 1, 2, 3 or more spatial dims (the length of 'kernels'; the kernel and "
              "kernel_h/kernel_w forms mean 2-D): NCHW (N, C, spatial...), or NHWC (N, H, W, C) "
              "for 2-D only; channels are unchanged, output sizes follow the kernel/stride/pad/"
              "legacy_pad arguments as for Conv. global_pooling=1 pools the whole image "
              "(output 1 per spatial dim, no kernel needed, any rank of X in NCHW). Pads must be "
              "smaller than the kernel. Dilations space a window's taps (taps in the padding are "
              "left out, of the divisor too), as Conv's; cuDNN has no dilated pooling, so on "
              "CUDA dilated windows run on halfcaf's own kernels. "
              "The 1D/2D/3D aliases take the same arguments and do not check the window's rank. "
              "Float, float16 and bfloat16 (output dtype of X).")
      .Arg("kernels / kernel / kernel_h, kernel_w",
           "ints: window size per spatial dim (unless global_pooling)")
      .Arg("strides / stride / stride_h, stride_w", "ints, default 1")
      .Arg("dilations / dilation / dilation_h, dilation_w",
           "ints, default 1: the distance between a window's taps")
      .Arg("pads / pad / pad_t, pad_l, pad_b, pad_r",
           "ints, default 0; all head pads then all tail pads, each smaller than the kernel")
      .Arg("legacy_pad", "int, default 0: 0 NOTSET, 1 VALID, 2 SAME, 3 CAFFE_LEGACY_POOLING")
      .Arg("global_pooling", "int, default 0: pool over the whole image")
      .Arg("order", "string, default \"NCHW\": \"NCHW\" or \"NHWC\" (any case)")
      .Arg("channel_block",
           "int, default 0 (halfcaf): B > 0 means X and Y are channel-blocked, (N, C / B, H, W, "
           "B) (2-D windows, order NCHW; CPU)")
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
REGISTER_CPU_OPERATOR(AveragePool, AveragePoolOp);
REGISTER_CPU_OPERATOR(MaxPool1D, MaxPoolOp);
REGISTER_CPU_OPERATOR(AveragePool1D, AveragePoolOp);
REGISTER_CPU_OPERATOR(MaxPool2D, MaxPoolOp);
REGISTER_CPU_OPERATOR(AveragePool2D, AveragePoolOp);
REGISTER_CPU_OPERATOR(MaxPool3D, MaxPoolOp);
REGISTER_CPU_OPERATOR(AveragePool3D, AveragePoolOp);
REGISTER_CPU_OPERATOR(MaxPoolGradient, MaxPoolGradientOp);
REGISTER_CPU_OPERATOR(AveragePoolGradient, AveragePoolGradientOp);
REGISTER_CPU_OPERATOR(MaxPool1DGradient, MaxPoolGradientOp);
REGISTER_CPU_OPERATOR(AveragePool1DGradient, AveragePoolGradientOp);
REGISTER_CPU_OPERATOR(MaxPool2DGradient, MaxPoolGradientOp);
REGISTER_CPU_OPERATOR(AveragePool2DGradient, AveragePoolGradientOp);
REGISTER_CPU_OPERATOR(MaxPool3DGradient, MaxPoolGradientOp);
REGISTER_CPU_OPERATOR(AveragePool3DGradient, AveragePoolGradientOp);
REGISTER_GRADIENT(MaxPool, GetPoolGradient);
REGISTER_GRADIENT(AveragePool, GetPoolGradient);
REGISTER_GRADIENT(MaxPool1D, GetPoolGradient);
REGISTER_GRADIENT(AveragePool1D, GetPoolGradient);
REGISTER_GRADIENT(MaxPool2D, GetPoolGradient);
REGISTER_GRADIENT(AveragePool2D, GetPoolGradient);
REGISTER_GRADIENT(MaxPool3D, GetPoolGradient);
REGISTER_GRADIENT(AveragePool3D, GetPoolGradient);

#define HALFCAF_POOL_SCHEMA(type, describe, kind)     \
  [[maybe_unused]] static OpSchema& g_schema_##type = \
      describe(OpSchemaRegistry::NewSchema(#type, __FILE__, __LINE__), PoolType::kind)
HALFCAF_POOL_SCHEMA(MaxPool, DescribePool, kMax);
HALFCAF_POOL_SCHEMA(AveragePool, DescribePool, kAverage);
HALFCAF_POOL_SCHEMA(MaxPool1D, DescribePool, kMax);
HALFCAF_POOL_SCHEMA(AveragePool1D, DescribePool, kAverage);
HALFCAF_POOL_SCHEMA(MaxPool2D, DescribePool, kMax);
HALFCAF_POOL_SCHEMA(AveragePool2D, DescribePool, kAverage);
HALFCAF_POOL_SCHEMA(MaxPool3D, DescribePool, kMax);
HALFCAF_POOL_SCHEMA(AveragePool3D, DescribePool, kAverage);
HALFCAF_POOL_SCHEMA(MaxPoolGradient, DescribePoolGradient, kMax);
HALFCAF_POOL_SCHEMA(AveragePoolGradient, DescribePoolGradient, kAverage);
HALFCAF_POOL_SCHEMA(MaxPool1DGradient, DescribePoolGradient, kMax);
HALFCAF_POOL_SCHEMA(AveragePool1DGradient, DescribePoolGradient, kAverage);
HALFCAF_POOL_SCHEMA(MaxPool2DGradient, DescribePoolGradient, kMax);
HALFCAF_POOL_SCHEMA(AveragePool2DGradient, DescribePoolGradient, kAverage);
HALFCAF_POOL_SCHEMA(MaxPool3DGradient, DescribePoolGradient, kMax);
HALFCAF_POOL_SCHEMA(AveragePool3DGradient, DescribePoolGradient, kAverage);
#undef HALFCAF_POOL_SCHEMA

}  // namespace halfcaf
