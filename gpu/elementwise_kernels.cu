#include "gpu/elementwise_kernels.h"

#include <cstring>
#include <type_traits>

#include "core/nan_math.h"
#include "gpu/kernel_util.cuh"

namespace halfcaf {
namespace gpu {

using detail::Blocks;
using detail::FloatIn;
using detail::FloatOut;
using detail::kThreads;

namespace {

// ---- binary ------------------------------------------------------------------------------------

template <typename T>
__device__ __forceinline__ T ApplyBinary(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::kAdd: return static_cast<T>(a + b);
    case BinaryOp::kSub: return static_cast<T>(a - b);
    case BinaryOp::kMul: return static_cast<T>(a * b);
    default: return static_cast<T>(a / b);
  }
}

// Where output element i reads A and B: the legacy broadcast (A at i, B at (i / post) % n).
struct LegacyIndex {
  int64_t n, post;
  __device__ __forceinline__ void operator()(int64_t i, int64_t* ia, int64_t* ib) const {
    *ia = i;
    *ib = (i / post) % n;
  }
};

constexpr int kMaxStridedDims = 8;

// Where output element i reads A and B: the output walked as dims (innermost last), each input at
// its strides (0 where it repeats).
struct StridedIndex {
  int nd;
  int64_t dims[kMaxStridedDims], a_stride[kMaxStridedDims], b_stride[kMaxStridedDims];
  __device__ __forceinline__ void operator()(int64_t i, int64_t* ia, int64_t* ib) const {
    int64_t oa = 0, ob = 0;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t k = i % dims[d];
      i /= dims[d];
      oa += k * a_stride[d];
      ob += k * b_stride[d];
    }
    *ia = oa;
    *ib = ob;
  }
};

template <BinaryOp kOp, class Index>
__global__ void BinaryFloatKernel(int64_t total, Index index, FloatIn a, FloatIn b, FloatOut c) {
  HALFCAF_KERNEL_LOOP(i, total) {
    int64_t ia, ib;
    index(i, &ia, &ib);
    c.Set(i, ApplyBinary<float>(kOp, a[ia], b[ib]));
  }
}

template <BinaryOp kOp, class Index, typename T>
__global__ void BinaryTypedKernel(int64_t total, Index index, const T* a, const T* b, T* c) {
  HALFCAF_KERNEL_LOOP(i, total) {
    int64_t ia, ib;
    index(i, &ia, &ib);
    c[i] = ApplyBinary<T>(kOp, a[ia], b[ib]);
  }
}

template <BinaryOp kOp, class Index>
void BinaryLaunch(int64_t total, const Index& index, DataType a_type, const void* a,
                  DataType b_type, const void* b, DataType c_type, void* c, cudaStream_t stream) {
  if (total == 0) return;
  auto floating = [](DataType t) {
    return t == DataType::FLOAT || t == DataType::FLOAT16 || t == DataType::BFLOAT16;
  };
  const bool float_path = floating(a_type) && floating(b_type);
  if (float_path) {
    BinaryFloatKernel<kOp, Index><<<Blocks(total), kThreads, 0, stream>>>(
        total, index, detail::In(a_type, a, "A"), detail::In(b_type, b, "B"),
        detail::Out(c_type, c, "C"));
    HALFCAF_LAUNCH_CHECK();
    return;
  }
  HALFCAF_ENFORCE(a_type == b_type && b_type == c_type, "A, B and C must share one type, got ",
                  DataTypeName(a_type), ", ", DataTypeName(b_type), " and ",
                  DataTypeName(c_type));
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    BinaryTypedKernel<kOp, Index, T><<<Blocks(total), kThreads, 0, stream>>>(
        total, index, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c));
    HALFCAF_LAUNCH_CHECK();
  };
  switch (a_type) {
    case DataType::DOUBLE: return launch(double{});
    case DataType::INT32: return launch(int32_t{});
    case DataType::INT64: return launch(int64_t{});
    default: break;
  }
  HALFCAF_THROW("binary element-wise ops on CUDA take float, float16, double, int32 or int64, got ",
                DataTypeName(a_type));
}

template <class Index>
void BinaryDispatch(BinaryOp op, int64_t total, const Index& index, DataType a_type,
                    const void* a, DataType b_type, const void* b, DataType c_type, void* c,
                    cudaStream_t stream) {
  switch (op) {
    case BinaryOp::kAdd:
      return BinaryLaunch<BinaryOp::kAdd>(total, index, a_type, a, b_type, b, c_type, c, stream);
    case BinaryOp::kSub:
      return BinaryLaunch<BinaryOp::kSub>(total, index, a_type, a, b_type, b, c_type, c, stream);
    case BinaryOp::kMul:
      return BinaryLaunch<BinaryOp::kMul>(total, index, a_type, a, b_type, b, c_type, c, stream);
    case BinaryOp::kDiv:
      return BinaryLaunch<BinaryOp::kDiv>(total, index, a_type, a, b_type, b, c_type, c, stream);
  }
}

// ---- DivGradient -------------------------------------------------------------------------------

__global__ void DivGradientKernel(int64_t n, FloatIn b, FloatIn c, FloatIn dc, FloatOut da,
                                  FloatOut db) {
  HALFCAF_KERNEL_LOOP(i, n) {
    const float g = dc[i] / b[i];
    da.Set(i, g);
    db.Set(i, -g * c[i]);
  }
}

__global__ void DivGradientDoubleKernel(int64_t n, const double* b, const double* c,
                                        const double* dc, double* da, double* db) {
  HALFCAF_KERNEL_LOOP(i, n) {
    const double g = dc[i] / b[i];
    const double ci = c[i];
    da[i] = g;
    db[i] = -g * ci;
  }
}

// ---- unary -------------------------------------------------------------------------------------

template <typename T>
__global__ void NegativeKernel(int64_t n, const T* x, T* y) {
  HALFCAF_KERNEL_LOOP(i, n) { y[i] = static_cast<T>(-x[i]); }
}

__global__ void NegativeHalfKernel(int64_t n, const uint16_t* x, uint16_t* y) {
  HALFCAF_KERNEL_LOOP(i, n) { y[i] = static_cast<uint16_t>(x[i] ^ 0x8000u); }
}

template <UnaryOp kOp>
__global__ void UnaryKernel(int64_t n, FloatIn x, FloatOut y, float p0, float p1) {
  HALFCAF_KERNEL_LOOP(i, n) {
    const float v = x[i];
    float r;
    switch (kOp) {
      case UnaryOp::kSigmoid: r = 1.f / (1.f + expf(-v)); break;
      case UnaryOp::kTanh: r = tanhf(v); break;
      case UnaryOp::kSqr: r = v * v; break;
      case UnaryOp::kScale: r = p0 * v; break;
      case UnaryOp::kClip: {  // std::min(std::max(v, lo), hi), NaN kept as on the CPU
        const float lo = v < p0 ? p0 : v;
        r = p1 < lo ? p1 : lo;
        break;
      }
      case UnaryOp::kExp: r = expf(v); break;
      case UnaryOp::kLog: r = logf(v); break;
      case UnaryOp::kSqrt: r = sqrtf(v); break;
      case UnaryOp::kAbs: r = fabsf(v); break;
      case UnaryOp::kReciprocal: r = 1.f / v; break;
      case UnaryOp::kPow: r = powf(v, p0); break;
      case UnaryOp::kLeakyRelu: r = v > 0.f ? v : p0 * v; break;
      case UnaryOp::kHardSigmoid: {  // as the CPU functor: NaN fails both comparisons
        const float t = p0 * v + p1;
        const float lo = t < 0.f ? 0.f : t;
        r = 1.f < lo ? 1.f : lo;
        break;
      }
      case UnaryOp::kFloor: r = floorf(v); break;
      case UnaryOp::kCeil: r = ceilf(v); break;
      default: r = v < 0.f ? p0 * expm1f(v) : v; break;  // kElu
    }
    y.Set(i, r);
  }
}

template <UnaryGradientOp kOp>
__global__ void UnaryGradientKernel(int64_t n, FloatIn y, FloatIn dy, FloatOut dx, float p0,
                                    float p1) {
  HALFCAF_KERNEL_LOOP(i, n) {
    const float yv = y[i];
    const float g = dy[i];
    float r;
    switch (kOp) {
      case UnaryGradientOp::kSigmoid: r = g * yv * (1.f - yv); break;
      case UnaryGradientOp::kTanh: r = g * (1.f - yv * yv); break;
      case UnaryGradientOp::kClip: r = GatedGradient(yv > p0 && yv < p1, yv, g); break;
      case UnaryGradientOp::kAbs:  // yv is the forward input here
        r = yv > 0.f ? g : yv < 0.f ? -g : GatedGradient(false, yv, g);
        break;
      case UnaryGradientOp::kReciprocal: r = -g * yv * yv; break;
      case UnaryGradientOp::kLeakyRelu: r = yv > 0.f ? g : IsNaN(yv) ? yv : p0 * g; break;
      case UnaryGradientOp::kHardSigmoid:
        r = GatedGradient(yv > 0.f && yv < 1.f, yv, p0 * g);
        break;
      default: r = yv < 0.f ? g * (yv + p0) : IsNaN(yv) ? yv : g; break;  // kElu
    }
    dx.Set(i, r);
  }
}

// ---- Pow (two inputs), Max / Min and their gradient --------------------------------------------

__global__ void PowKernel(int64_t n, FloatIn x, FloatIn e, FloatOut y) {
  HALFCAF_KERNEL_LOOP(i, n) { y.Set(i, powf(x[i], e[i])); }
}

template <bool kMax>
__global__ void SelectIntoKernel(int64_t n, FloatIn x, FloatOut y) {
  const FloatIn yin{y.p, y.kind};
  HALFCAF_KERNEL_LOOP(i, n) {
    const float a = yin[i], b = x[i];
    y.Set(i, kMax ? MaxNaN(a, b) : -MaxNaN(-a, -b));  // min(a, b) = -max(-a, -b) exactly
  }
}

__global__ void SelectGradientKernel(int64_t n, FloatIn y, FloatIn dy, FloatIn x, FloatOut dx) {
  HALFCAF_KERNEL_LOOP(i, n) {
    const float yv = y[i];
    dx.Set(i, GatedGradient(x[i] == yv, yv, dy[i]));
  }
}

// ---- accumulation ------------------------------------------------------------------------------

template <typename T>
__global__ void AddToKernel(int64_t n, const T* x, T* y) {
  HALFCAF_KERNEL_LOOP(i, n) { y[i] = static_cast<T>(y[i] + x[i]); }
}

// y (float) += x (float16 or bfloat16).
__global__ void AddSixteenToFloatKernel(int64_t n, FloatIn x, float* y) {
  HALFCAF_KERNEL_LOOP(i, n) { y[i] += x[i]; }
}

__global__ void ScaleByDeviceScalarKernel(int64_t n, FloatIn w, FloatIn x, FloatOut y,
                                          bool accumulate) {
  const float wv = w[0];
  HALFCAF_KERNEL_LOOP(i, n) {
    const float v = wv * x[i];
    if (accumulate) {
      const FloatIn yin{y.p, y.kind};
      y.Set(i, yin[i] + v);
    } else {
      y.Set(i, v);
    }
  }
}

__global__ void RowScaledDifferenceKernel(int64_t n, int64_t cols, FloatIn x, FloatIn y,
                                          FloatIn dd, FloatOut dx, FloatOut dy) {
  HALFCAF_KERNEL_LOOP(k, n) {
    const float g = dd[k / cols] * (x[k] - y[k]);
    dx.Set(k, g);
    dy.Set(k, -g);
  }
}

// ---- conversion and fill -----------------------------------------------------------------------

template <typename D, typename S>
__global__ void ConvertKernel(int64_t n, const S* x, D* y) {
  HALFCAF_KERNEL_LOOP(i, n) { y[i] = detail::Converter<D, S>::Apply(x[i]); }
}

template <typename U>
__global__ void FillKernel(int64_t n, U value, U* y) {
  HALFCAF_KERNEL_LOOP(i, n) { y[i] = value; }
}

// ---- transpose ---------------------------------------------------------------------------------

constexpr int kMaxTransposeDims = 8;

struct TransposePlan {
  int nd;
  int64_t y_dims[kMaxTransposeDims];
  int64_t x_stride[kMaxTransposeDims];  // stride in X of each Y dim
};

template <typename U>
__global__ void TransposeKernel(int64_t n, TransposePlan plan, const U* x, U* y) {
  HALFCAF_KERNEL_LOOP(i, n) {
    int64_t rest = i, src = 0;
    for (int d = plan.nd - 1; d >= 0; --d) {
      const int64_t idx = rest % plan.y_dims[d];
      rest /= plan.y_dims[d];
      src += idx * plan.x_stride[d];
    }
    y[i] = x[src];
  }
}

}  // namespace

void BinaryBroadcast(BinaryOp op, int64_t pre, int64_t n, int64_t post, DataType a_type,
                     const void* a, DataType b_type, const void* b, DataType c_type, void* c,
                     cudaStream_t stream) {
  BinaryDispatch(op, pre * n * post, LegacyIndex{n, post}, a_type, a, b_type, b, c_type, c,
                 stream);
}

void BinaryStrided(BinaryOp op, const std::vector<int64_t>& dims,
                   const std::vector<int64_t>& a_stride, const std::vector<int64_t>& b_stride,
                   DataType a_type, const void* a, DataType b_type, const void* b,
                   DataType c_type, void* c, cudaStream_t stream) {
  HALFCAF_ENFORCE(!dims.empty() && dims.size() <= static_cast<size_t>(kMaxStridedDims) &&
                      a_stride.size() == dims.size() && b_stride.size() == dims.size(),
                  "strided binary op: 1 to ", kMaxStridedDims, " dims with one stride each, got ",
                  DimsString(dims), ", ", DimsString(a_stride), " and ", DimsString(b_stride));
  StridedIndex index{};
  index.nd = static_cast<int>(dims.size());
  int64_t total = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    index.dims[d] = dims[d];
    index.a_stride[d] = a_stride[d];
    index.b_stride[d] = b_stride[d];
    total *= dims[d];
  }
  BinaryDispatch(op, total, index, a_type, a, b_type, b, c_type, c, stream);
}

void DivGradient(int64_t n, DataType b_type, const void* b, DataType c_type, const void* c,
                 DataType dc_type, const void* dc, DataType da_type, void* da, DataType db_type,
                 void* db, cudaStream_t stream) {
  if (n == 0) return;
  if (b_type == DataType::DOUBLE && c_type == DataType::DOUBLE && dc_type == DataType::DOUBLE) {
    HALFCAF_ENFORCE(da_type == DataType::DOUBLE && db_type == DataType::DOUBLE,
                    "DivGradient outputs must be double for double inputs");
    DivGradientDoubleKernel<<<Blocks(n), kThreads, 0, stream>>>(
        n, static_cast<const double*>(b), static_cast<const double*>(c),
        static_cast<const double*>(dc), static_cast<double*>(da), static_cast<double*>(db));
  } else {
    DivGradientKernel<<<Blocks(n), kThreads, 0, stream>>>(
        n, detail::In(b_type, b, "B"), detail::In(c_type, c, "C"), detail::In(dc_type, dc, "dC"),
        detail::Out(da_type, da, "dA"), detail::Out(db_type, db, "dB"));
  }
  HALFCAF_LAUNCH_CHECK();
}

void Negative(int64_t n, DataType type, const void* x, void* y, cudaStream_t stream) {
  if (n == 0) return;
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    NegativeKernel<T><<<Blocks(n), kThreads, 0, stream>>>(n, static_cast<const T*>(x),
                                                          static_cast<T*>(y));
    HALFCAF_LAUNCH_CHECK();
  };
  switch (type) {
    case DataType::FLOAT: return launch(float{});
    case DataType::DOUBLE: return launch(double{});
    case DataType::INT32: return launch(int32_t{});
    case DataType::INT64: return launch(int64_t{});
    case DataType::FLOAT16:
      NegativeHalfKernel<<<Blocks(n), kThreads, 0, stream>>>(
          n, static_cast<const uint16_t*>(x), static_cast<uint16_t*>(y));
      HALFCAF_LAUNCH_CHECK();
      return;
    default: break;
  }
  HALFCAF_THROW("Negative supports float, float16, double, int32 and int64 tensors, got ",
                DataTypeName(type));
}

void Unary(UnaryOp op, int64_t n, DataType x_type, const void* x, DataType y_type, void* y,
           float p0, float p1, cudaStream_t stream) {
  if (n == 0) return;
  const FloatIn in = detail::In(x_type, x, "X");
  const FloatOut out = detail::Out(y_type, y, "Y");
  auto launch = [&](auto op_tag) {
    UnaryKernel<decltype(op_tag)::value><<<Blocks(n), kThreads, 0, stream>>>(n, in, out, p0, p1);
  };
  using U = UnaryOp;
  switch (op) {
    case U::kSigmoid: launch(std::integral_constant<U, U::kSigmoid>{}); break;
    case U::kTanh: launch(std::integral_constant<U, U::kTanh>{}); break;
    case U::kSqr: launch(std::integral_constant<U, U::kSqr>{}); break;
    case U::kScale: launch(std::integral_constant<U, U::kScale>{}); break;
    case U::kClip: launch(std::integral_constant<U, U::kClip>{}); break;
    case U::kExp: launch(std::integral_constant<U, U::kExp>{}); break;
    case U::kLog: launch(std::integral_constant<U, U::kLog>{}); break;
    case U::kSqrt: launch(std::integral_constant<U, U::kSqrt>{}); break;
    case U::kAbs: launch(std::integral_constant<U, U::kAbs>{}); break;
    case U::kReciprocal: launch(std::integral_constant<U, U::kReciprocal>{}); break;
    case U::kPow: launch(std::integral_constant<U, U::kPow>{}); break;
    case U::kLeakyRelu: launch(std::integral_constant<U, U::kLeakyRelu>{}); break;
    case U::kElu: launch(std::integral_constant<U, U::kElu>{}); break;
    case U::kHardSigmoid: launch(std::integral_constant<U, U::kHardSigmoid>{}); break;
    case U::kFloor: launch(std::integral_constant<U, U::kFloor>{}); break;
    case U::kCeil: launch(std::integral_constant<U, U::kCeil>{}); break;
  }
  HALFCAF_LAUNCH_CHECK();
}

void UnaryGradient(UnaryGradientOp op, int64_t n, DataType y_type, const void* y,
                   DataType dy_type, const void* dy, DataType dx_type, void* dx, float p0,
                   float p1, cudaStream_t stream) {
  if (n == 0) return;
  const FloatIn yin = detail::In(y_type, y, op == UnaryGradientOp::kAbs ? "X" : "Y");
  const FloatIn dyin = detail::In(dy_type, dy, "dY");
  const FloatOut out = detail::Out(dx_type, dx, "dX");
  auto launch = [&](auto op_tag) {
    UnaryGradientKernel<decltype(op_tag)::value>
        <<<Blocks(n), kThreads, 0, stream>>>(n, yin, dyin, out, p0, p1);
  };
  using G = UnaryGradientOp;
  switch (op) {
    case G::kSigmoid: launch(std::integral_constant<G, G::kSigmoid>{}); break;
    case G::kTanh: launch(std::integral_constant<G, G::kTanh>{}); break;
    case G::kClip: launch(std::integral_constant<G, G::kClip>{}); break;
    case G::kAbs: launch(std::integral_constant<G, G::kAbs>{}); break;
    case G::kReciprocal: launch(std::integral_constant<G, G::kReciprocal>{}); break;
    case G::kLeakyRelu: launch(std::integral_constant<G, G::kLeakyRelu>{}); break;
    case G::kElu: launch(std::integral_constant<G, G::kElu>{}); break;
    case G::kHardSigmoid: launch(std::integral_constant<G, G::kHardSigmoid>{}); break;
  }
  HALFCAF_LAUNCH_CHECK();
}

void Pow(int64_t n, DataType x_type, const void* x, DataType e_type, const void* e,
         DataType y_type, void* y, cudaStream_t stream) {
  if (n == 0) return;
  PowKernel<<<Blocks(n), kThreads, 0, stream>>>(n, detail::In(x_type, x, "X"),
                                                detail::In(e_type, e, "exponent E"),
                                                detail::Out(y_type, y, "Y"));
  HALFCAF_LAUNCH_CHECK();
}

void SelectInto(bool max, int64_t n, DataType x_type, const void* x, DataType y_type, void* y,
                cudaStream_t stream) {
  if (n == 0) return;
  const FloatIn in = detail::In(x_type, x, "X");
  const FloatOut out = detail::Out(y_type, y, "Y");
  if (max) {
    SelectIntoKernel<true><<<Blocks(n), kThreads, 0, stream>>>(n, in, out);
  } else {
    SelectIntoKernel<false><<<Blocks(n), kThreads, 0, stream>>>(n, in, out);
  }
  HALFCAF_LAUNCH_CHECK();
}

void SelectGradient(int64_t n, DataType y_type, const void* y, DataType dy_type, const void* dy,
                    DataType x_type, const void* x, DataType dx_type, void* dx,
                    cudaStream_t stream) {
  if (n == 0) return;
  SelectGradientKernel<<<Blocks(n), kThreads, 0, stream>>>(
      n, detail::In(y_type, y, "Y"), detail::In(dy_type, dy, "dY"), detail::In(x_type, x, "X"),
      detail::Out(dx_type, dx, "dX"));
  HALFCAF_LAUNCH_CHECK();
}

void AddTo(int64_t n, DataType x_type, const void* x, DataType y_type, void* y,
           cudaStream_t stream) {
  if (n == 0) return;
  if ((x_type == DataType::FLOAT16 || x_type == DataType::BFLOAT16) && y_type == DataType::FLOAT) {
    AddSixteenToFloatKernel<<<Blocks(n), kThreads, 0, stream>>>(n, detail::In(x_type, x, "x"),
                                                                static_cast<float*>(y));
    HALFCAF_LAUNCH_CHECK();
    return;
  }
  HALFCAF_ENFORCE(x_type == y_type, "AddTo: x is ", DataTypeName(x_type), " but y is ",
                  DataTypeName(y_type));
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    AddToKernel<T><<<Blocks(n), kThreads, 0, stream>>>(n, static_cast<const T*>(x),
                                                       static_cast<T*>(y));
    HALFCAF_LAUNCH_CHECK();
  };
  switch (x_type) {
    case DataType::FLOAT: return launch(float{});
    case DataType::DOUBLE: return launch(double{});
    case DataType::INT32: return launch(int32_t{});
    case DataType::INT64: return launch(int64_t{});
    default: break;
  }
  HALFCAF_THROW("AddTo supports float, double, int32 and int64 (and float16 or bfloat16 into "
                "float), got ", DataTypeName(x_type));
}

void ScaleByDeviceScalar(int64_t n, DataType w_type, const void* w, DataType x_type, const void* x,
                         DataType y_type, void* y, bool accumulate, cudaStream_t stream) {
  if (n == 0) return;
  ScaleByDeviceScalarKernel<<<Blocks(n), kThreads, 0, stream>>>(
      n, detail::In(w_type, w, "weight"), detail::In(x_type, x, "X"), detail::Out(y_type, y, "Y"),
      accumulate);
  HALFCAF_LAUNCH_CHECK();
}

void RowScaledDifference(int64_t rows, int64_t cols, DataType x_type, const void* x,
                         DataType y_type, const void* y, DataType dd_type, const void* dd,
                         DataType dx_type, void* dx, DataType dy_type, void* dy,
                         cudaStream_t stream) {
  const int64_t n = rows * cols;
  if (n == 0) return;
  RowScaledDifferenceKernel<<<Blocks(n), kThreads, 0, stream>>>(
      n, cols, detail::In(x_type, x, "X"), detail::In(y_type, y, "Y"),
      detail::In(dd_type, dd, "dDist"), detail::Out(dx_type, dx, "dX"),
      detail::Out(dy_type, dy, "dY"));
  HALFCAF_LAUNCH_CHECK();
}

void Convert(int64_t n, DataType src_type, const void* src, DataType dst_type, void* dst,
             cudaStream_t stream) {
  if (n == 0) return;
  detail::DispatchDevice(src_type, [&](auto stag) {
    using S = decltype(stag);
    detail::DispatchDevice(dst_type, [&](auto dtag) {
      using D = decltype(dtag);
      ConvertKernel<D, S><<<Blocks(n), kThreads, 0, stream>>>(n, static_cast<const S*>(src),
                                                              static_cast<D*>(dst));
      HALFCAF_LAUNCH_CHECK();
    });
  });
}

void Fill(int64_t n, DataType type, double value, void* y, cudaStream_t stream) {
  if (n == 0) return;
  // The value is converted on the host with the CPU's rules, then stored as raw bits.
  DispatchAllTypes(type, [&](auto tag) {
    using T = decltype(tag);
    T v;
    if constexpr (kIsFloat16Storage<T>) {
      v = T(static_cast<float>(value));
    } else {
      v = static_cast<T>(value);
    }
    auto launch = [&](auto utag) {
      using U = decltype(utag);
      static_assert(sizeof(U) == sizeof(T), "bit pattern size");
      U bits;
      std::memcpy(&bits, &v, sizeof(U));
      FillKernel<U><<<Blocks(n), kThreads, 0, stream>>>(n, bits, static_cast<U*>(y));
      HALFCAF_LAUNCH_CHECK();
    };
    if constexpr (sizeof(T) == 1) {
      launch(uint8_t{});
    } else if constexpr (sizeof(T) == 2) {
      launch(uint16_t{});
    } else if constexpr (sizeof(T) == 4) {
      launch(uint32_t{});
    } else {
      launch(uint64_t{});
    }
  });
}

void Transpose(const std::vector<int64_t>& x_dims, const std::vector<int>& axes, size_t item_size,
               const void* x, void* y, cudaStream_t stream) {
  const int nd = static_cast<int>(x_dims.size());
  int64_t n = 1;
  for (int64_t d : x_dims) n *= d;
  if (n == 0) return;
  // Drop size-1 dims, then merge output dims whose source dims are consecutive in X.
  std::vector<int64_t> x_stride(nd, 1);
  for (int i = nd - 2; i >= 0; --i) x_stride[i] = x_stride[i + 1] * x_dims[i + 1];
  std::vector<int64_t> dims, strides;
  int prev_axis = -2;
  for (int i = 0; i < nd; ++i) {
    const int a = axes[i];
    if (x_dims[a] == 1) {
      if (a == prev_axis + 1) prev_axis = a;  // a size-1 dim does not break a run
      continue;
    }
    if (!dims.empty() && a == prev_axis + 1) {
      // Same run in X: the merged dim walks X with the inner dim's stride.
      dims.back() *= x_dims[a];
      strides.back() = x_stride[a];
    } else {
      dims.push_back(x_dims[a]);
      strides.push_back(x_stride[a]);
    }
    prev_axis = a;
  }
  if (dims.empty()) {
    dims.push_back(1);
    strides.push_back(1);
  }
  HALFCAF_ENFORCE(dims.size() <= static_cast<size_t>(kMaxTransposeDims),
                  "transpose on CUDA supports at most ", kMaxTransposeDims,
                  " non-mergeable dims, got ", dims.size(), " for X dims ", DimsString(x_dims),
                  " and axes ", DimsString(axes));
  TransposePlan plan;
  plan.nd = static_cast<int>(dims.size());
  for (int i = 0; i < plan.nd; ++i) {
    plan.y_dims[i] = dims[i];
    plan.x_stride[i] = strides[i];
  }
  auto launch = [&](auto tag) {
    using U = decltype(tag);
    TransposeKernel<U><<<Blocks(n), kThreads, 0, stream>>>(n, plan, static_cast<const U*>(x),
                                                           static_cast<U*>(y));
    HALFCAF_LAUNCH_CHECK();
  };
  switch (item_size) {
    case 1: return launch(uint8_t{});
    case 2: return launch(uint16_t{});
    case 4: return launch(uint32_t{});
    case 8: return launch(uint64_t{});
    default: break;
  }
  HALFCAF_THROW("transpose of ", item_size, "-byte elements is not supported");
}

}  // namespace gpu
}  // namespace halfcaf
