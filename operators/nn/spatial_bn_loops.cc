#include "operators/nn/spatial_bn_loops.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/bfloat16.h"
#include "core/enforce.h"
#include "core/nan_math.h"
#include "operators/cpu_parallel.h"
#include "operators/nn/spatial_bn_nhwc.h"
#include "operators/nn/spatial_bn_wide.h"

namespace halfcaf {

namespace {

using bn_wide::AffineOf;
using bn_wide::GatedDy;
using bn_wide::RunWide;
using bn_wide::WithFlag;

// Per-channel loops, parallel over channels (each channel is summed by one thread in a fixed
// order, so results do not depend on the thread count). NCHW walks the N contiguous planes of S
// values of a channel; NHWC walks the N * S rows, a block of channels at a time.

// Sum of p[0..n) (float lanes, double total).
inline double SumOf(const float* p, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += p[i + l];
  }
  double s = 0;
  for (int l = 0; l < 8; ++l) s += acc[l];
  for (; i < n; ++i) s += p[i];
  return s;
}

// Sum of (p[i] - m)^2.
inline double SquaredDeviationOf(const float* p, int64_t n, float m) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) {
      const float d = p[i + l] - m;
      acc[l] += d * d;
    }
  }
  double s = 0;
  for (int l = 0; l < 8; ++l) s += acc[l];
  for (; i < n; ++i) s += static_cast<double>(p[i] - m) * (p[i] - m);
  return s;
}

// Sum of dy[i] * (x[i] - m).
inline double DotDeviationOf(const float* dy, const float* x, int64_t n, float m) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += dy[i + l] * (x[i + l] - m);
  }
  double s = 0;
  for (int l = 0; l < 8; ++l) s += acc[l];
  for (; i < n; ++i) s += static_cast<double>(dy[i]) * (x[i] - m);
  return s;
}

// dy gated over n values whose channels repeat every `period` values (a, b: the first one's
// coefficients), into this thread's buffer 3 (the loops read dy, x and dx through 0 to 2): NHWC
// rows (period C) and NCHW planes (GatedPlane). The blocked loops gate in place (SlabValues).
const float* GatedRows(const float* dy, const float* x, int64_t n, int64_t period, const float* a,
                       const float* b) {
  float* g = ThreadFloats(3, static_cast<size_t>(n));
  for (int64_t r = 0; r < n / period; ++r) {
    for (int64_t j = 0; j < period; ++j) {
      g[r * period + j] = GatedDy(x[r * period + j], dy[r * period + j], a[j], b[j]);
    }
  }
  return g;
}

// One channel's plane (NCHW).
const float* GatedPlane(const float* dy, const float* x, int64_t n, float a, float b) {
  float* g = ThreadFloats(3, static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) g[i] = GatedDy(x[i], dy[i], a, b);
  return g;
}

// NHWC: per-channel sums over the rows (N * S rows of C values). `add(r0, r1, acc)` adds rows
// [r0, r1) into acc (k sums per channel: k * C doubles, sum j of channel c at j * C + c). The rows
// go in fixed chunks of kBNRowChunk, summed in parallel into per-chunk sums that are then added
// in chunk order, so the result does not depend on the thread count; every access runs along
// the rows, as they are stored.
constexpr int64_t kBNRowChunk = 256;

template <typename F>
void NhwcChannelSums(int64_t rows, int64_t C, int k, F&& add, double* out) {
  const int64_t chunks = (rows + kBNRowChunk - 1) / kBNRowChunk;
  const int64_t width = k * C;
  std::vector<double> partial(static_cast<size_t>(chunks * width), 0.0);
  ParallelFor(chunks, static_cast<double>(kBNRowChunk * width), [&](int64_t c0, int64_t c1) {
    for (int64_t ch = c0; ch < c1; ++ch) {
      add(ch * kBNRowChunk, std::min(rows, (ch + 1) * kBNRowChunk), partial.data() + ch * width);
    }
  });
  std::fill(out, out + width, 0.0);
  for (int64_t ch = 0; ch < chunks; ++ch) {
    const double* p = partial.data() + ch * width;
    for (int64_t j = 0; j < width; ++j) out[j] += p[j];
  }
}

// ---- the channel-blocked layout: N * C / B slabs, each S rows of B channels -------------------
//
// The loops over a range of slabs (or of channel blocks) are compiled three times, for baseline
// x86-64, AVX2 and AVX-512F vectors (RunWide), with this file built without fused multiply-add
// (CMakeLists.txt: -ffp-contract=off), so every width rounds as the NCHW loops do.

// Per channel j of a slab (S rows of B values): the sum over its rows of term(e, j), e the
// element's index in the slab, as SumOf, SquaredDeviationOf and DotDeviationOf sum a plane: row r
// into float lane r % 8 while eight rows remain, the lanes added in double, then the last rows'
// terms in double (wide(e, j)).
template <int64_t B, typename Term, typename Wide>
HALFCAF_BN_INLINE void SlabSums(int64_t S, const Term& term, const Wide& wide, double* out) {
  float acc[8][B] = {};
  int64_t i = 0;
  for (; i + 8 <= S; i += 8) {
    for (int l = 0; l < 8; ++l) {
      for (int64_t j = 0; j < B; ++j) acc[l][j] += term((i + l) * B + j, j);
    }
  }
  for (int64_t j = 0; j < B; ++j) {
    double s = 0;
    for (int l = 0; l < 8; ++l) s += acc[l][j];
    for (int64_t k = i; k < S; ++k) s += wide(k * B + j, j);
    out[j] = s;
  }
}

// A slab's values (x, or dy) as the loops sum them at element e of channel j: as stored, or with
// kGate dy gated by the fused ReLU (GatedDy; x, a, b: the slab's x and the block's coefficients).
template <bool kGate>
struct SlabValues {
  const float *dy, *x, *a, *b;
  HALFCAF_BN_INLINE float operator()(int64_t e, int64_t j) const {
    if constexpr (kGate) {
      return GatedDy(x[e], dy[e], a[j], b[j]);
    } else {
      return dy[e];
    }
  }
};

// p(e, j) summed per channel.
template <int64_t B, typename P>
HALFCAF_BN_INLINE void SlabSumsOf(const P& p, int64_t S, double* out) {
  SlabSums<B>(
      S, [&](int64_t e, int64_t j) { return p(e, j); },
      [&](int64_t e, int64_t j) { return static_cast<double>(p(e, j)); }, out);
}

template <int64_t B>
HALFCAF_BN_INLINE void SlabSquaredDeviations(const float* p, int64_t S, const float* m,
                                             double* out) {
  SlabSums<B>(
      S,
      [&](int64_t e, int64_t j) {
        const float d = p[e] - m[j];
        return d * d;
      },
      [&](int64_t e, int64_t j) { return static_cast<double>(p[e] - m[j]) * (p[e] - m[j]); },
      out);
}

template <int64_t B, typename Dy>
HALFCAF_BN_INLINE void SlabDotDeviations(const Dy& dy, const float* x, int64_t S, const float* m,
                                         double* out) {
  SlabSums<B>(
      S, [&](int64_t e, int64_t j) { return dy(e, j) * (x[e] - m[j]); },
      [&](int64_t e, int64_t j) { return static_cast<double>(dy(e, j)) * (x[e] - m[j]); }, out);
}

// Channel blocks [b0, b1): one thread adds the N slabs' sums of a block in order, as the NCHW
// loops add a channel's planes.
template <int64_t B>
HALFCAF_BN_INLINE void MeanVarOfBlocks(const BNShape* s, const FloatIn* x, double* mean,
                                       double* var, int64_t b0, int64_t b1) {
  const int64_t CB = s->C / B, S = s->S, N = s->N;
  const double inv_m = 1.0 / static_cast<double>(N * S);
  double part[B];
  float m[B];
  for (int64_t cb = b0; cb < b1; ++cb) {
    double* mc = mean + cb * B;
    double* vc = var + cb * B;
    for (int64_t j = 0; j < B; ++j) mc[j] = vc[j] = 0;
    for (int64_t n = 0; n < N; ++n) {
      const float* xp = x->Read((n * CB + cb) * S * B, S * B, 0);
      SlabSumsOf<B>(SlabValues<false>{xp, nullptr, nullptr, nullptr}, S, part);
      for (int64_t j = 0; j < B; ++j) mc[j] += part[j];
    }
    for (int64_t j = 0; j < B; ++j) {
      mc[j] *= inv_m;
      m[j] = static_cast<float>(mc[j]);
    }
    for (int64_t n = 0; n < N; ++n) {
      SlabSquaredDeviations<B>(x->Read((n * CB + cb) * S * B, S * B, 0), S, m, part);
      for (int64_t j = 0; j < B; ++j) vc[j] += part[j];
    }
    for (int64_t j = 0; j < B; ++j) vc[j] *= inv_m;
  }
}

template <int64_t B, bool kGate>
HALFCAF_BN_INLINE void GradSumsOfBlocks(const BNShape* s, const FloatIn* x, const FloatIn* dy,
                                        const float* mean, double* sum_dy, double* sum_dy_xc,
                                        const BNReluGate* gate, int64_t b0, int64_t b1) {
  const int64_t CB = s->C / B, S = s->S, N = s->N;
  double part[B];
  for (int64_t cb = b0; cb < b1; ++cb) {
    double* a = sum_dy + cb * B;
    double* d = sum_dy_xc + cb * B;
    for (int64_t j = 0; j < B; ++j) a[j] = d[j] = 0;
    for (int64_t n = 0; n < N; ++n) {
      const int64_t off = (n * CB + cb) * S * B;
      const float* xp = x->Read(off, S * B, 1);
      const SlabValues<kGate> g{dy->Read(off, S * B, 0), xp, kGate ? gate->alpha + cb * B : nullptr,
                                kGate ? gate->beta + cb * B : nullptr};
      SlabSumsOf<B>(g, S, part);
      for (int64_t j = 0; j < B; ++j) a[j] += part[j];
      SlabDotDeviations<B>(g, xp, S, mean + cb * B, part);
      for (int64_t j = 0; j < B; ++j) d[j] += part[j];
    }
  }
}

// Slabs [p0, p1): y = x * a[c] + b[c] (then the ReLU with kRelu).
template <int64_t B, bool kRelu>
HALFCAF_BN_INLINE void AffineOfSlabs(const BNShape* s, const FloatIn* x, const float* a,
                                     const float* b, const FloatOut* y, int64_t p0, int64_t p1) {
  const int64_t CB = s->C / B, n = s->S * B;
  for (int64_t p = p0; p < p1; ++p) {
    const float* av = a + (p % CB) * B;
    const float* bv = b + (p % CB) * B;
    const float* xp = x->Read(p * n, n, 0);
    float* yp = y->Begin(p * n, n, 1);
    for (int64_t r = 0; r < s->S; ++r) {
      for (int64_t j = 0; j < B; ++j) yp[r * B + j] = AffineOf<kRelu>(xp[r * B + j], av[j], bv[j]);
    }
    y->End(p * n, n, yp);
  }
}

// Slabs [p0, p1): dx = dy * a[c] + (x - mean[c]) * b[c] + k[c].
template <int64_t B, bool kGate>
HALFCAF_BN_INLINE void BackwardOfSlabs(const BNShape* s, const FloatIn* dy, const FloatIn* x,
                                       const float* mean, const float* a, const float* b,
                                       const float* k, const BNReluGate* gate, const FloatOut* dx,
                                       int64_t p0, int64_t p1) {
  const int64_t CB = s->C / B, n = s->S * B;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t c0 = (p % CB) * B;
    const float *mv = mean + c0, *av = a + c0, *bv = b + c0, *kv = k + c0;
    const float* xp = x->Read(p * n, n, 1);
    const SlabValues<kGate> g{dy->Read(p * n, n, 0), xp, kGate ? gate->alpha + c0 : nullptr,
                              kGate ? gate->beta + c0 : nullptr};
    float* dxp = dx->Begin(p * n, n, 2);
    for (int64_t r = 0; r < s->S; ++r) {
      for (int64_t j = 0; j < B; ++j) {
        const int64_t e = r * B + j;
        dxp[e] = g(e, j) * av[j] + (xp[e] - mv[j]) * bv[j] + kv[j];
      }
    }
    dx->End(p * n, n, dxp);
  }
}

// f(std::integral_constant<int64_t, B>{}) for the block B (4, 8 or 16).
template <typename F>
void WithBlock(int64_t block, F&& f) {
  switch (block) {
    case 4:
      return f(std::integral_constant<int64_t, 4>{});
    case 8:
      return f(std::integral_constant<int64_t, 8>{});
    case 16:
      return f(std::integral_constant<int64_t, 16>{});
    default:
      HALFCAF_THROW("SpatialBN: channel block ", block, " is not 4, 8 or 16");
  }
}

void BlockedAffine(const BNShape& s, int64_t block, const FloatIn& x, const float* a,
                   const float* b, const FloatOut& y, bool relu) {
  WithBlock(block, [&](auto bc) {
    WithFlag(relu, [&](auto rc) {
      constexpr int64_t B = decltype(bc)::value;
      constexpr bool R = decltype(rc)::value;
      ParallelFor(s.N * (s.C / B), 2.0 * s.S * B, [&](int64_t p0, int64_t p1) {
        RunWide<AffineOfSlabs<B, R>>(&s, &x, a, b, &y, p0, p1);
      });
    });
  });
}

// The training forward on the channel-blocked layout, one channel block at a time (parallel over
// the blocks): its mean and variance, finish() for its channels, then its affine map, while the
// block's N slabs are still in cache.
void BlockedTrainingForward(const BNShape& s, int64_t block, const FloatIn& x, double* mean,
                            double* var, const BNChannelFn& finish, const float* a, const float* b,
                            const FloatOut& y, bool relu) {
  WithBlock(block, [&](auto bc) {
    WithFlag(relu, [&](auto rc) {
      constexpr int64_t B = decltype(bc)::value;
      constexpr bool R = decltype(rc)::value;
      const int64_t CB = s.C / B;
      ParallelFor(CB, 4.0 * s.N * s.S * B, [&](int64_t b0, int64_t b1) {
        for (int64_t cb = b0; cb < b1; ++cb) {
          RunWide<MeanVarOfBlocks<B>>(&s, &x, mean, var, cb, cb + 1);
          finish(cb * B, (cb + 1) * B);
          for (int64_t n = 0; n < s.N; ++n) {
            RunWide<AffineOfSlabs<B, R>>(&s, &x, a, b, &y, n * CB + cb, n * CB + cb + 1);
          }
        }
      });
    });
  });
}

// The gradient on the channel-blocked layout, a block at a time: its sums, finish() for its
// channels, then its dx.
void BlockedGradient(const BNShape& s, int64_t block, const FloatIn& x, const FloatIn& dy,
                     const float* mean, double* sum_dy, double* sum_dy_xc,
                     const BNChannelFn& finish, const float* a, const float* b, const float* k,
                     const BNReluGate* gate, const FloatOut& dx) {
  WithBlock(block, [&](auto bc) {
    constexpr int64_t B = decltype(bc)::value;
    WithFlag(gate != nullptr, [&](auto gc) {
      constexpr bool G = decltype(gc)::value;
      const int64_t CB = s.C / B;
      ParallelFor(CB, 7.0 * s.N * s.S * B, [&](int64_t b0, int64_t b1) {
        for (int64_t cb = b0; cb < b1; ++cb) {
          RunWide<GradSumsOfBlocks<B, G>>(&s, &x, &dy, mean, sum_dy, sum_dy_xc, gate, cb, cb + 1);
          finish(cb * B, (cb + 1) * B);
          for (int64_t n = 0; n < s.N; ++n) {
            RunWide<BackwardOfSlabs<B, G>>(&s, &dy, &x, mean, a, b, k, gate, &dx, n * CB + cb,
                                           n * CB + cb + 1);
          }
        }
      });
    });
  });
}

}  // namespace

// The loops below read float16 / bfloat16 data a plane (NCHW) or a chunk of rows (NHWC) at a time,
// converted into per-thread buffers (core/float_io.h); float data is read in place, so FP32
// results are those of plain pointer loops. NHWC tensors all float or all bfloat16 go to the
// loops of spatial_bn_nhwc.h (the rest: float16, mixed types).

namespace {

// NCHW and NHWC (the blocked layout's loops are above).

// Per-channel mean and (biased) variance of x, two passes.
void ChannelMeanVar(const BNShape& s, const BNLayout& l, const FloatIn& x, double* mean,
                    double* var) {
  const int64_t C = s.C, S = s.S, N = s.N;
  const double inv_m = 1.0 / static_cast<double>(N * S);
  if (l.order == BNOrder::NCHW) {
    ParallelFor(C, 2.0 * N * S, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double sum = 0;
        for (int64_t n = 0; n < N; ++n) sum += SumOf(x.Read((n * C + c) * S, S, 0), S);
        mean[c] = sum * inv_m;
        const float m = static_cast<float>(mean[c]);
        double sq = 0;
        for (int64_t n = 0; n < N; ++n) {
          sq += SquaredDeviationOf(x.Read((n * C + c) * S, S, 0), S, m);
        }
        var[c] = sq * inv_m;
      }
    });
  } else if (NhwcBNLoopsTake(x.dtype())) {
    NhwcMeanVar({N * S, C, x.dtype()}, x.raw(), mean, var);
  } else {  // NHWC float16
    const int64_t rows = N * S;
    NhwcChannelSums(
        rows, C, 1,
        [&](int64_t r0, int64_t r1, double* acc) {
          const float* xr = x.Read(r0 * C, (r1 - r0) * C, 0);
          for (int64_t r = 0; r < r1 - r0; ++r) {
            for (int64_t c = 0; c < C; ++c) acc[c] += xr[r * C + c];
          }
        },
        mean);
    for (int64_t c = 0; c < C; ++c) mean[c] *= inv_m;
    NhwcChannelSums(
        rows, C, 1,
        [&](int64_t r0, int64_t r1, double* acc) {
          const float* xr = x.Read(r0 * C, (r1 - r0) * C, 0);
          for (int64_t r = 0; r < r1 - r0; ++r) {
            for (int64_t c = 0; c < C; ++c) {
              const double d = xr[r * C + c] - mean[c];
              acc[c] += d * d;
            }
          }
        },
        var);
    for (int64_t c = 0; c < C; ++c) var[c] *= inv_m;
  }
}

// dx = dy * a[c] + (x - mean[c]) * b[c] + k[c]; dx may alias dy.
void ChannelBackward(const BNShape& s, const BNLayout& l, const FloatIn& dy, const FloatIn& x,
                     const float* mean, const float* a, const float* b, const float* k,
                     const FloatOut& dx, const BNReluGate* gate) {
  const int64_t C = s.C, S = s.S, N = s.N;
  if (l.order == BNOrder::NCHW) {
    ParallelFor(N * C, 4.0 * S, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t c = p % C;
        const float av = a[c], bv = b[c], kv = k[c], mv = mean[c];
        const float* dyp = dy.Read(p * S, S, 0);
        const float* xp = x.Read(p * S, S, 1);
        if (gate != nullptr) dyp = GatedPlane(dyp, xp, S, gate->alpha[c], gate->beta[c]);
        float* dxp = dx.Begin(p * S, S, 2);
        for (int64_t i = 0; i < S; ++i) dxp[i] = dyp[i] * av + (xp[i] - mv) * bv + kv;
        dx.End(p * S, S, dxp);
      }
    });
  } else if (NhwcBNLoopsTake(x.dtype()) && dy.dtype() == x.dtype() && dx.dtype() == x.dtype()) {
    NhwcBackward({N * S, C, x.dtype()}, dy.raw(), x.raw(), mean, a, b, k, gate, dx.raw());
  } else {  // NHWC, float16 or mixed types
    ParallelFor(N * S, 4.0 * C, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* dyr = dy.Read(r * C, C, 0);
        const float* xr = x.Read(r * C, C, 1);
        if (gate != nullptr) dyr = GatedRows(dyr, xr, C, C, gate->alpha, gate->beta);
        float* dxr = dx.Begin(r * C, C, 2);
        for (int64_t c = 0; c < C; ++c) dxr[c] = dyr[c] * a[c] + (xr[c] - mean[c]) * b[c] + k[c];
        dx.End(r * C, C, dxr);
      }
    });
  }
}

// Per channel: sum of dy and sum of dy * (x - mean).
void ChannelGradSums(const BNShape& s, const BNLayout& l, const FloatIn& x, const FloatIn& dy,
                     const float* mean, double* sum_dy, double* sum_dy_xc, const BNReluGate* gate) {
  const int64_t C = s.C, S = s.S, N = s.N;
  if (l.order == BNOrder::NCHW) {
    ParallelFor(C, 3.0 * N * S, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double a = 0, b = 0;
        for (int64_t n = 0; n < N; ++n) {
          const int64_t off = (n * C + c) * S;
          const float* dyp = dy.Read(off, S, 0);
          const float* xp = x.Read(off, S, 1);
          if (gate != nullptr) dyp = GatedPlane(dyp, xp, S, gate->alpha[c], gate->beta[c]);
          a += SumOf(dyp, S);
          b += DotDeviationOf(dyp, xp, S, mean[c]);
        }
        sum_dy[c] = a;
        sum_dy_xc[c] = b;
      }
    });
  } else if (NhwcBNLoopsTake(x.dtype()) && dy.dtype() == x.dtype()) {
    NhwcGradSums({N * S, C, x.dtype()}, x.raw(), dy.raw(), mean, gate, sum_dy, sum_dy_xc);
  } else {  // NHWC, float16 or mixed types
    std::vector<double> sums(static_cast<size_t>(2 * C));
    NhwcChannelSums(
        N * S, C, 2,
        [&](int64_t r0, int64_t r1, double* acc) {
          const int64_t n = (r1 - r0) * C;
          const float* xr = x.Read(r0 * C, n, 0);
          const float* dyr = dy.Read(r0 * C, n, 1);
          if (gate != nullptr) dyr = GatedRows(dyr, xr, n, C, gate->alpha, gate->beta);
          for (int64_t r = 0; r < r1 - r0; ++r) {
            for (int64_t c = 0; c < C; ++c) {
              const double g = dyr[r * C + c];
              acc[c] += g;
              acc[C + c] += g * (xr[r * C + c] - mean[c]);
            }
          }
        },
        sums.data());
    std::copy(sums.begin(), sums.begin() + C, sum_dy);
    std::copy(sums.begin() + C, sums.end(), sum_dy_xc);
  }
}

}  // namespace

// y = x * a[c] + b[c] (then the ReLU with relu); y may alias x.
void ChannelAffine(const BNShape& s, const BNLayout& l, const FloatIn& x, const float* a,
                   const float* b, const FloatOut& y, bool relu) {
  const int64_t C = s.C, S = s.S, N = s.N;
  if (l.block > 0) return BlockedAffine(s, l.block, x, a, b, y, relu);
  WithFlag(relu, [&](auto rc) {
    constexpr bool R = decltype(rc)::value;
    if (l.order == BNOrder::NCHW) {
      ParallelFor(N * C, 2.0 * S, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
          const float av = a[p % C], bv = b[p % C];
          const float* xp = x.Read(p * S, S, 0);
          float* yp = y.Begin(p * S, S, 1);
          for (int64_t k = 0; k < S; ++k) yp[k] = AffineOf<R>(xp[k], av, bv);
          y.End(p * S, S, yp);
        }
      });
    } else if (NhwcBNLoopsTake(x.dtype()) && y.dtype() == x.dtype()) {
      NhwcAffine({N * S, C, x.dtype()}, x.raw(), a, b, y.raw(), R);
    } else {  // NHWC, float16 or mixed types
      ParallelFor(N * S, 2.0 * C, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const float* xr = x.Read(r * C, C, 0);
          float* yr = y.Begin(r * C, C, 1);
          for (int64_t c = 0; c < C; ++c) yr[c] = AffineOf<R>(xr[c], a[c], b[c]);
          y.End(r * C, C, yr);
        }
      });
    }
  });
}

void ChannelTrainingForward(const BNShape& s, const BNLayout& l, const FloatIn& x, double* mean,
                            double* var, const BNChannelFn& finish, const float* a, const float* b,
                            const FloatOut& y, bool relu) {
  if (l.block > 0) return BlockedTrainingForward(s, l.block, x, mean, var, finish, a, b, y, relu);
  ChannelMeanVar(s, l, x, mean, var);
  finish(0, s.C);
  ChannelAffine(s, l, x, a, b, y, relu);
}

void ChannelGradient(const BNShape& s, const BNLayout& l, const FloatIn& x, const FloatIn& dy,
                     const float* mean, double* sum_dy, double* sum_dy_xc,
                     const BNChannelFn& finish, const float* a, const float* b, const float* k,
                     const BNReluGate* gate, const FloatOut& dx) {
  if (l.block > 0) {
    return BlockedGradient(s, l.block, x, dy, mean, sum_dy, sum_dy_xc, finish, a, b, k, gate, dx);
  }
  ChannelGradSums(s, l, x, dy, mean, sum_dy, sum_dy_xc, gate);
  finish(0, s.C);
  ChannelBackward(s, l, dy, x, mean, a, b, k, dx, gate);
}

}  // namespace halfcaf
