#include "operators/nn/spatial_bn_nhwc.h"

#include <algorithm>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/bfloat16_avx512.h"
#include "core/enforce.h"
#include "operators/cpu_parallel.h"
#include "operators/nn/spatial_bn_wide.h"
#ifdef HALFCAF_BF16_AVX512
#define HALFCAF_NHWC_AVX512 1
#endif

namespace halfcaf {

namespace {

using bn_wide::AffineOf;
using bn_wide::GatedDyOf;
using bn_wide::RunWide;
using bn_wide::WithFlag;

// Channels one summing task covers: its float sums (two per channel at most) stay in L1.
constexpr int64_t kGroup = 512;
// The element-wise loops go along a row this many channels at a time, every value of a group read
// before any is written, so that they vectorize whether or not the output aliases an input.
constexpr int kLanes = 16;

// Elements: float as stored; bfloat16 as its bits, widened exactly and stored rounded to nearest
// even (core/bfloat16.h).
HALFCAF_BN_INLINE float Load(const float* p, int64_t i) { return p[i]; }
HALFCAF_BN_INLINE float Load(const uint16_t* p, int64_t i) { return BFloat16BitsToFloat(p[i]); }
HALFCAF_BN_INLINE void Store(float* p, int64_t i, float v) { p[i] = v; }
HALFCAF_BN_INLINE void Store(uint16_t* p, int64_t i, float v) { p[i] = FloatToBFloat16Bits(v); }

// v as a T output stores it.
template <typename T>
HALFCAF_BN_INLINE float Stored(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    return BFloat16BitsToFloat(FloatToBFloat16Bits(v));
  }
}

// The gradient's g at one element: dy, or with kGate dy gated by the fused ReLU whose output the
// forward stored as Stored<T>(ReluNaN(x * alpha + beta)); that is positive, or NaN, exactly where
// Stored<T>(x * alpha + beta) is, and then the same value.
template <typename T, bool kGate>
HALFCAF_BN_INLINE float GOf(float x, float dy, const float* alpha, const float* beta, int64_t c) {
  if constexpr (kGate) {
    return GatedDyOf(Stored<T>(x * alpha[c] + beta[c]), dy);
  } else {
    return dy;
  }
}

// ---- tasks, each inlined into copies for wider vectors (RunWide) ------------------------------

// Rows [r0, r1), channels [c0, c1): out[c] = the sum of x (kDeviation: of (x - m[c])^2), in float
// in row order.
template <typename T, bool kDeviation>
HALFCAF_BN_INLINE void SumTask(const T* x, int64_t C, int64_t r0, int64_t r1, int64_t c0,
                               int64_t c1, const float* m, double* out) {
  float acc[kGroup];
  const int64_t w = c1 - c0;
  for (int64_t j = 0; j < w; ++j) acc[j] = 0.f;
  for (int64_t r = r0; r < r1; ++r) {
    const T* row = x + r * C + c0;
    if constexpr (kDeviation) {
      for (int64_t j = 0; j < w; ++j) {
        const float d = Load(row, j) - m[c0 + j];
        acc[j] += d * d;
      }
    } else {
      for (int64_t j = 0; j < w; ++j) acc[j] += Load(row, j);
    }
  }
  for (int64_t j = 0; j < w; ++j) out[c0 + j] = acc[j];
}

// One row's terms of channels c0 + [j0, j1) added into sg (g) and sgx (g * (x - mean[c])).
template <typename T, bool kGate>
HALFCAF_BN_INLINE void AddGradTerms(const T* xr, const T* dyr, int64_t c0, int64_t j0, int64_t j1,
                                    const float* mean, const float* alpha, const float* beta,
                                    float* sg, float* sgx) {
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t c = c0 + j;
    const float xv = Load(xr, c);
    const float g = GOf<T, kGate>(xv, Load(dyr, c), alpha, beta, c);
    sg[j] += g;
    sgx[j] += g * (xv - mean[c]);
  }
}

// out[c] = the sum of g, out[C + c] the sum of g * (x - mean[c]).
template <typename T, bool kGate>
HALFCAF_BN_INLINE void GradSumTask(const T* x, const T* dy, int64_t C, int64_t r0, int64_t r1,
                                   int64_t c0, int64_t c1, const float* mean, const float* alpha,
                                   const float* beta, double* out) {
  float sg[kGroup], sgx[kGroup];
  const int64_t w = c1 - c0;
  for (int64_t j = 0; j < w; ++j) sg[j] = sgx[j] = 0.f;
  for (int64_t r = r0; r < r1; ++r) {
    AddGradTerms<T, kGate>(x + r * C, dy + r * C, c0, 0, w, mean, alpha, beta, sg, sgx);
  }
  std::copy(sg, sg + w, out + c0);
  std::copy(sgx, sgx + w, out + C + c0);
}

// Rows [r0, r1): y = x * a[c] + b[c] (ReluNaN'd with kRelu).
template <typename T, bool kRelu>
HALFCAF_BN_INLINE void AffineRows(const T* x, T* y, int64_t C, int64_t r0, int64_t r1,
                                  const float* a, const float* b) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* xr = x + r * C;
    T* yr = y + r * C;
    int64_t c = 0;
    for (; c + kLanes <= C; c += kLanes) {
      float v[kLanes];
      for (int l = 0; l < kLanes; ++l) v[l] = AffineOf<kRelu>(Load(xr, c + l), a[c + l], b[c + l]);
      for (int l = 0; l < kLanes; ++l) Store(yr, c + l, v[l]);
    }
    for (; c < C; ++c) Store(yr, c, AffineOf<kRelu>(Load(xr, c), a[c], b[c]));
  }
}

// Rows [r0, r1): dx = g * a[c] + (x - mean[c]) * b[c] + k[c].
template <typename T, bool kGate>
HALFCAF_BN_INLINE void BackwardRows(const T* dy, const T* x, T* dx, int64_t C, int64_t r0,
                                    int64_t r1, const float* mean, const float* a, const float* b,
                                    const float* k, const float* alpha, const float* beta) {
  const auto at = [&](const T* xr, const T* dyr, int64_t c) {
    const float xv = Load(xr, c);
    const float g = GOf<T, kGate>(xv, Load(dyr, c), alpha, beta, c);
    return g * a[c] + (xv - mean[c]) * b[c] + k[c];
  };
  for (int64_t r = r0; r < r1; ++r) {
    const T* xr = x + r * C;
    const T* dyr = dy + r * C;
    T* dxr = dx + r * C;
    int64_t c = 0;
    for (; c + kLanes <= C; c += kLanes) {
      float v[kLanes];
      for (int l = 0; l < kLanes; ++l) v[l] = at(xr, dyr, c + l);
      for (int l = 0; l < kLanes; ++l) Store(dxr, c + l, v[l]);
    }
    for (; c < C; ++c) Store(dxr, c, at(xr, dyr, c));
  }
}

// ---- bfloat16 on AVX-512F: the same loops with explicit vectors ---------------------------------
//
// The compiler's vectors for bfloat16 rounding are narrow and long; these do 16 channels at once,
// in the arithmetic and order of the loops above (the same results bit for bit: tests compare the
// widths), the last C % 16 channels through those loops' element code.

#ifdef HALFCAF_NHWC_AVX512

using bf16_avx512::Load;
using bf16_avx512::Store;

// GOf<uint16_t, true> lane by lane, from v = x * alpha + beta: the stored ReLU output is positive
// exactly where v's bits, as a signed integer, exceed 0x8000 (smaller positive values round to
// zero); where v is NaN the gradient is v as stored (quiet, its low 16 bits cleared), where dY is
// NaN it is dY.
HALFCAF_AVX512_INLINE __m512 GatedBf16(__m512 v, __m512 dy) {
  const __m512i u = _mm512_castps_si512(v);
  const __mmask16 pass = _mm512_cmpgt_epi32_mask(u, _mm512_set1_epi32(0x8000)) |
                         _mm512_cmp_ps_mask(dy, dy, _CMP_UNORD_Q);
  const __m512i stored_nan = _mm512_or_si512(_mm512_and_si512(u, _mm512_set1_epi32(-65536)),
                                             _mm512_set1_epi32(0x00400000));
  return _mm512_mask_mov_ps(_mm512_maskz_mov_ps(pass, dy), _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q),
                            _mm512_castsi512_ps(stored_nan));
}

template <bool kGate>
HALFCAF_AVX512_INLINE __m512 GV(__m512 x, __m512 dy, const float* alpha, const float* beta,
                                int64_t c) {
  if constexpr (kGate) {
    const __m512 v =
        _mm512_add_ps(_mm512_mul_ps(x, _mm512_loadu_ps(alpha + c)), _mm512_loadu_ps(beta + c));
    return GatedBf16(v, dy);
  } else {
    return dy;
  }
}

template <bool kDeviation>
__attribute__((target("avx512f"))) void SumBf16(const uint16_t* x, int64_t C, int64_t r0,
                                                int64_t r1, int64_t c0, int64_t c1, const float* m,
                                                double* out) {
  alignas(64) float acc[kGroup];
  const int64_t w = c1 - c0, wv = w / 16 * 16;
  for (int64_t j = 0; j < w; ++j) acc[j] = 0.f;
  for (int64_t r = r0; r < r1; ++r) {
    const uint16_t* row = x + r * C + c0;
    for (int64_t j = 0; j < wv; j += 16) {
      __m512 v = Load(row + j);
      if constexpr (kDeviation) {
        const __m512 d = _mm512_sub_ps(v, _mm512_loadu_ps(m + c0 + j));
        v = _mm512_mul_ps(d, d);
      }
      _mm512_store_ps(acc + j, _mm512_add_ps(_mm512_load_ps(acc + j), v));
    }
    for (int64_t j = wv; j < w; ++j) {
      const float v = Load(row, j);
      const float d = kDeviation ? v - m[c0 + j] : v;
      acc[j] += kDeviation ? d * d : v;
    }
  }
  for (int64_t j = 0; j < w; ++j) out[c0 + j] = acc[j];
}

template <bool kGate>
__attribute__((target("avx512f"))) void GradSumBf16(const uint16_t* x, const uint16_t* dy,
                                                    int64_t C, int64_t r0, int64_t r1, int64_t c0,
                                                    int64_t c1, const float* mean,
                                                    const float* alpha, const float* beta,
                                                    double* out) {
  alignas(64) float sg[kGroup];
  alignas(64) float sgx[kGroup];
  const int64_t w = c1 - c0, wv = w / 16 * 16;
  for (int64_t j = 0; j < w; ++j) sg[j] = sgx[j] = 0.f;
  for (int64_t r = r0; r < r1; ++r) {
    const uint16_t* xr = x + r * C;
    const uint16_t* dyr = dy + r * C;
    for (int64_t j = 0; j < wv; j += 16) {
      const int64_t c = c0 + j;
      const __m512 xv = Load(xr + c);
      const __m512 g = GV<kGate>(xv, Load(dyr + c), alpha, beta, c);
      _mm512_store_ps(sg + j, _mm512_add_ps(_mm512_load_ps(sg + j), g));
      const __m512 gx = _mm512_mul_ps(g, _mm512_sub_ps(xv, _mm512_loadu_ps(mean + c)));
      _mm512_store_ps(sgx + j, _mm512_add_ps(_mm512_load_ps(sgx + j), gx));
    }
    AddGradTerms<uint16_t, kGate>(xr, dyr, c0, wv, w, mean, alpha, beta, sg, sgx);
  }
  std::copy(sg, sg + w, out + c0);
  std::copy(sgx, sgx + w, out + C + c0);
}

template <bool kRelu>
__attribute__((target("avx512f"))) void AffineBf16(const uint16_t* x, uint16_t* y, int64_t C,
                                                   int64_t r0, int64_t r1, const float* a,
                                                   const float* b) {
  const int64_t cv = C / 16 * 16;
  for (int64_t r = r0; r < r1; ++r) {
    const uint16_t* xr = x + r * C;
    uint16_t* yr = y + r * C;
    for (int64_t c = 0; c < cv; c += 16) {
      __m512 v = _mm512_add_ps(_mm512_mul_ps(Load(xr + c), _mm512_loadu_ps(a + c)),
                               _mm512_loadu_ps(b + c));
      if constexpr (kRelu) {
        v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LE_OQ),
                               _mm512_setzero_ps());
      }
      Store(yr + c, v);
    }
    for (int64_t c = cv; c < C; ++c) Store(yr, c, AffineOf<kRelu>(Load(xr, c), a[c], b[c]));
  }
}

template <bool kGate>
__attribute__((target("avx512f"))) void BackwardBf16(const uint16_t* dy, const uint16_t* x,
                                                     uint16_t* dx, int64_t C, int64_t r0,
                                                     int64_t r1, const float* mean, const float* a,
                                                     const float* b, const float* k,
                                                     const float* alpha, const float* beta) {
  const int64_t cv = C / 16 * 16;
  for (int64_t r = r0; r < r1; ++r) {
    const uint16_t* xr = x + r * C;
    const uint16_t* dyr = dy + r * C;
    uint16_t* dxr = dx + r * C;
    for (int64_t c = 0; c < cv; c += 16) {
      const __m512 xv = Load(xr + c);
      const __m512 g = GV<kGate>(xv, Load(dyr + c), alpha, beta, c);
      const __m512 ga = _mm512_mul_ps(g, _mm512_loadu_ps(a + c));
      const __m512 xb =
          _mm512_mul_ps(_mm512_sub_ps(xv, _mm512_loadu_ps(mean + c)), _mm512_loadu_ps(b + c));
      Store(dxr + c, _mm512_add_ps(_mm512_add_ps(ga, xb), _mm512_loadu_ps(k + c)));
    }
    for (int64_t c = cv; c < C; ++c) {
      const float xv = Load(xr, c);
      const float g = GOf<uint16_t, kGate>(xv, Load(dyr, c), alpha, beta, c);
      Store(dxr, c, g * a[c] + (xv - mean[c]) * b[c] + k[c]);
    }
  }
}

#endif  // HALFCAF_NHWC_AVX512

// True when the bfloat16 loops take their AVX-512F form (the CPU has it, the cap allows it).
bool Bf16OnAvx512() {
#ifdef HALFCAF_NHWC_AVX512
  return LoopVectorWidth() == VectorWidth::kAvx512;
#else
  return false;
#endif
}

// ---- drivers ------------------------------------------------------------------------------------

// The loops above for T, in the AVX-512F form for bfloat16 where it runs.
template <typename T, bool kDeviation>
void Sums(const T* x, int64_t C, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const float* m,
          double* out) {
#ifdef HALFCAF_NHWC_AVX512
  if constexpr (std::is_same_v<T, uint16_t>) {
    if (Bf16OnAvx512()) return SumBf16<kDeviation>(x, C, r0, r1, c0, c1, m, out);
  }
#endif
  RunWide<SumTask<T, kDeviation>>(x, C, r0, r1, c0, c1, m, out);
}

template <typename T, bool kGate>
void GradSums(const T* x, const T* dy, int64_t C, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
              const float* mean, const float* alpha, const float* beta, double* out) {
#ifdef HALFCAF_NHWC_AVX512
  if constexpr (std::is_same_v<T, uint16_t>) {
    if (Bf16OnAvx512()) return GradSumBf16<kGate>(x, dy, C, r0, r1, c0, c1, mean, alpha, beta, out);
  }
#endif
  RunWide<GradSumTask<T, kGate>>(x, dy, C, r0, r1, c0, c1, mean, alpha, beta, out);
}

template <typename T, bool kRelu>
void Affine(const T* x, T* y, int64_t C, int64_t r0, int64_t r1, const float* a, const float* b) {
#ifdef HALFCAF_NHWC_AVX512
  if constexpr (std::is_same_v<T, uint16_t>) {
    if (Bf16OnAvx512()) return AffineBf16<kRelu>(x, y, C, r0, r1, a, b);
  }
#endif
  RunWide<AffineRows<T, kRelu>>(x, y, C, r0, r1, a, b);
}

template <typename T, bool kGate>
void Backward(const T* dy, const T* x, T* dx, int64_t C, int64_t r0, int64_t r1, const float* mean,
              const float* a, const float* b, const float* k, const float* alpha,
              const float* beta) {
#ifdef HALFCAF_NHWC_AVX512
  if constexpr (std::is_same_v<T, uint16_t>) {
    if (Bf16OnAvx512())
      return BackwardBf16<kGate>(dy, x, dx, C, r0, r1, mean, a, b, k, alpha, beta);
  }
#endif
  RunWide<BackwardRows<T, kGate>>(dy, x, dx, C, r0, r1, mean, a, b, k, alpha, beta);
}

// k sums per channel over the rows, sums[j * C + c]: task(r0, r1, c0, c1, out) writes a chunk's
// sums of channels [c0, c1) into out (the chunk's k * C doubles); the chunks' are added in order.
template <typename Task>
void ChunkedSums(int64_t rows, int64_t C, int k, const Task& task, double* sums) {
  const int64_t chunks = (rows + kNhwcRowChunk - 1) / kNhwcRowChunk;
  const int64_t groups = (C + kGroup - 1) / kGroup;
  const int64_t width = k * C;
  // Every task writes all its entries: no fill.
  std::unique_ptr<double[]> partial(new double[static_cast<size_t>(chunks * width)]);
  const double work = static_cast<double>(kNhwcRowChunk * std::min(C, kGroup) * k);
  ParallelFor(chunks * groups, work, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t ch = t / groups, g = t % groups;
      task(ch * kNhwcRowChunk, std::min(rows, (ch + 1) * kNhwcRowChunk), g * kGroup,
           std::min(C, (g + 1) * kGroup), partial.get() + ch * width);
    }
  });
  std::fill(sums, sums + width, 0.0);
  for (int64_t ch = 0; ch < chunks; ++ch) {
    const double* p = partial.get() + ch * width;
    for (int64_t j = 0; j < width; ++j) sums[j] += p[j];
  }
}

// f(T{}) with T float or uint16_t (bfloat16's bits) for dtype.
template <typename F>
void WithType(DataType dtype, F&& f) {
  if (dtype == DataType::FLOAT) return f(float{});
  HALFCAF_ENFORCE(dtype == DataType::BFLOAT16,
                  "SpatialBN's NHWC loops take float or bfloat16, got ", DataTypeName(dtype));
  f(uint16_t{});
}

}  // namespace

bool NhwcBNLoopsTake(DataType t) { return t == DataType::FLOAT || t == DataType::BFLOAT16; }

void NhwcMeanVar(const NhwcBNShape& s, const void* x, double* mean, double* var) {
  const int64_t C = s.C;
  const double inv_m = 1.0 / static_cast<double>(s.rows);
  WithType(s.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = static_cast<const T*>(x);
    ChunkedSums(
        s.rows, C, 1,
        [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1, double* out) {
          Sums<T, false>(xp, C, r0, r1, c0, c1, nullptr, out);
        },
        mean);
    std::vector<float> m(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      mean[c] *= inv_m;
      m[c] = static_cast<float>(mean[c]);
    }
    const float* mp = m.data();
    ChunkedSums(
        s.rows, C, 1,
        [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1, double* out) {
          Sums<T, true>(xp, C, r0, r1, c0, c1, mp, out);
        },
        var);
    for (int64_t c = 0; c < C; ++c) var[c] *= inv_m;
  });
}

void NhwcAffine(const NhwcBNShape& s, const void* x, const float* a, const float* b, void* y,
                bool relu) {
  WithType(s.dtype, [&](auto tag) {
    using T = decltype(tag);
    WithFlag(relu, [&](auto rc) {
      constexpr bool R = decltype(rc)::value;
      ParallelFor(s.rows, 2.0 * s.C, [&](int64_t r0, int64_t r1) {
        Affine<T, R>(static_cast<const T*>(x), static_cast<T*>(y), s.C, r0, r1, a, b);
      });
    });
  });
}

void NhwcGradSums(const NhwcBNShape& s, const void* x, const void* dy, const float* mean,
                  const BNReluGate* gate, double* sum_dy, double* sum_dy_xc) {
  const int64_t C = s.C;
  const float* alpha = gate != nullptr ? gate->alpha : nullptr;
  const float* beta = gate != nullptr ? gate->beta : nullptr;
  std::vector<double> sums(static_cast<size_t>(2 * C));
  WithType(s.dtype, [&](auto tag) {
    using T = decltype(tag);
    WithFlag(gate != nullptr, [&](auto gc) {
      constexpr bool G = decltype(gc)::value;
      ChunkedSums(
          s.rows, C, 2,
          [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1, double* out) {
            GradSums<T, G>(static_cast<const T*>(x), static_cast<const T*>(dy), C, r0, r1, c0, c1,
                           mean, alpha, beta, out);
          },
          sums.data());
    });
  });
  std::copy(sums.begin(), sums.begin() + C, sum_dy);
  std::copy(sums.begin() + C, sums.end(), sum_dy_xc);
}

void NhwcBackward(const NhwcBNShape& s, const void* dy, const void* x, const float* mean,
                  const float* a, const float* b, const float* k, const BNReluGate* gate,
                  void* dx) {
  const float* alpha = gate != nullptr ? gate->alpha : nullptr;
  const float* beta = gate != nullptr ? gate->beta : nullptr;
  WithType(s.dtype, [&](auto tag) {
    using T = decltype(tag);
    WithFlag(gate != nullptr, [&](auto gc) {
      constexpr bool G = decltype(gc)::value;
      ParallelFor(s.rows, 4.0 * s.C, [&](int64_t r0, int64_t r1) {
        Backward<T, G>(static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<T*>(dx),
                       s.C, r0, r1, mean, a, b, k, alpha, beta);
      });
    });
  });
}

}  // namespace halfcaf
