#include "operators/nn/dropout_op.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/vector_width.h"
#include "operators/cpu_parallel.h"
#include "operators/nn/channel_block.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HALFCAF_DROPOUT_AVX512 1
#endif

namespace halfcaf {

namespace {

// Where a piece's elements draw from. Plain: element i draws DropoutDraw(key, i). Channel-blocked
// (channel_block B: X is (N, C / B, H, W, B), operators/nn/channel_block.h): each element draws
// with its index in the NCHW tensor, so the blocked op keeps and drops what the NCHW op does.
// Pieces then cover whole pixels (B elements, one per channel of a block); pixel p of the blocked
// tensor is (nc, hw) = (p / plane, p % plane) (nc = n * C / B + channel block), and its element b
// has NCHW index (nc * B + b) * plane + hw.
struct DrawIndex {
  int64_t block = 0;  // 0: plain
  int64_t plane = 1;  // H x W
};

// A walk over the pixels of a blocked tensor from pixel `first`, without a division per pixel.
class PixelWalk {
 public:
  PixelWalk(const DrawIndex& index, int64_t first)
      : index_(index), nc_(first / index.plane), hw_(first % index.plane) {}
  // The NCHW index of the current pixel's element 0 (element b: + b * plane).
  uint64_t Base() const { return static_cast<uint64_t>(nc_ * index_.block * index_.plane + hw_); }
  void Next() {
    if (++hw_ == index_.plane) {
      hw_ = 0;
      ++nc_;
    }
  }

 private:
  const DrawIndex& index_;
  int64_t nc_, hw_;
};

// Elements [off, off + len) of a training run (whole pixels when blocked): mask[off + i] = the
// element's draw < threshold, y[i] = x[i] * (scale or 0) (x and y: the piece's own floats; NaN * 0
// stays NaN, as in PyTorch).
void DropoutPiece(uint64_t key, uint64_t threshold, float scale, const float* x, float* y,
                  bool* mask, int64_t off, int64_t len, const DrawIndex& index) {
  // No branch on the draw (a random one mispredicts).
  if (index.block == 0) {
    for (int64_t i = 0; i < len; ++i) {
      const bool keep = DropoutDraw(key, static_cast<uint64_t>(off + i)) < threshold;
      mask[off + i] = keep;
      y[i] = x[i] * (scale * static_cast<float>(keep));
    }
    return;
  }
  const int64_t B = index.block;
  PixelWalk walk(index, off / B);
  for (int64_t i = 0; i < len; i += B, walk.Next()) {
    const uint64_t base = walk.Base();
    for (int64_t b = 0; b < B; ++b) {
      const bool keep = DropoutDraw(key, base + static_cast<uint64_t>(b * index.plane)) < threshold;
      mask[off + i + b] = keep;
      y[i + b] = x[i + b] * (scale * static_cast<float>(keep));
    }
  }
}

#ifdef HALFCAF_DROPOUT_AVX512
// v >> bits in each 64-bit lane. The masked form with every lane set: GCC 12 warns of an
// uninitialized source in the plain shift (and narrowing, below).
__attribute__((target("avx512f"), always_inline)) inline __m512i Shr(__m512i v, unsigned bits) {
  return _mm512_maskz_srli_epi64(0xff, v, bits);
}

// The same, 16 elements at a time: DropoutDraw's splitmix64 in 64-bit lanes (AVX512DQ's 64-bit
// multiply), the same integers and so the same mask and Y bit for bit; the tail as above. Plain,
// 16 consecutive indices; channel-blocked by 16, one pixel's 16 channels, `plane` apart.
__attribute__((target("avx512f,avx512dq"))) void DropoutPieceAvx512(
    uint64_t key, uint64_t threshold, float scale, const float* x, float* y, bool* mask,
    int64_t off, int64_t len, const DrawIndex& index) {
  if (index.block != 0 && index.block != 16) {
    return DropoutPiece(key, threshold, scale, x, y, mask, off, len, index);
  }
  const __m512i gamma = _mm512_set1_epi64(static_cast<int64_t>(0x9E3779B97F4A7C15ull));
  const __m512i m1 = _mm512_set1_epi64(static_cast<int64_t>(0xBF58476D1CE4E5B9ull));
  const __m512i m2 = _mm512_set1_epi64(static_cast<int64_t>(0x94D049BB133111EBull));
  const __m512i k = _mm512_set1_epi64(static_cast<int64_t>(key));
  const __m512i t = _mm512_set1_epi64(static_cast<int64_t>(threshold));
  // Lane j's index less lane 0's, plus 1 (DropoutDraw's i + 1): j, or j * plane when blocked.
  const int64_t step = index.block == 0 ? 1 : index.plane;
  const __m512i lanes = _mm512_add_epi64(
      _mm512_mullo_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(step)),
      _mm512_set1_epi64(1));
  const __m512 s = _mm512_set1_ps(scale);
  PixelWalk walk(index, index.block == 0 ? 0 : off / 16);
  int64_t i = 0;
  for (; i + 16 <= len; i += 16) {
    uint64_t first = static_cast<uint64_t>(off + i);
    if (index.block != 0) {
      first = walk.Base();
      walk.Next();
    }
    __mmask16 keep = 0;
    for (int half = 0; half < 2; ++half) {
      const __m512i n =
          _mm512_add_epi64(_mm512_set1_epi64(static_cast<int64_t>(first + 8 * half * step)), lanes);
      __m512i z = _mm512_add_epi64(k, _mm512_mullo_epi64(n, gamma));
      z = _mm512_mullo_epi64(_mm512_xor_si512(z, Shr(z, 30)), m1);
      z = _mm512_mullo_epi64(_mm512_xor_si512(z, Shr(z, 27)), m2);
      z = Shr(_mm512_xor_si512(z, Shr(z, 31)), 32);
      keep |= static_cast<__mmask16>(_mm512_cmplt_epu64_mask(z, t) << (8 * half));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(mask + off + i),
                     _mm512_maskz_cvtepi32_epi8(0xffff, _mm512_maskz_set1_epi32(keep, 1)));
    _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), _mm512_maskz_mov_ps(keep, s)));
  }
  // The plain tail (a blocked piece is whole pixels of 16).
  DropoutPiece(key, threshold, scale, x + i, y + i, mask, off + i, len - i, index);
}

bool DropoutOnAvx512() {
  static const bool dq = __builtin_cpu_supports("avx512dq");
  return dq && LoopVectorWidth() == VectorWidth::kAvx512;
}
#endif

}  // namespace

float ReadDropoutRatio(const OperatorBase& op) {
  const float ratio = op.GetSingleArgument<float>("ratio", 0.5f);
  HALFCAF_ENFORCE(ratio >= 0.f && ratio < 1.f, op.type(),
                  ": argument 'ratio' must be in [0, 1), got ", ratio);
  return ratio;
}

DropoutOp::DropoutOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      ratio_(ReadDropoutRatio(*this)),
      is_test_(GetSingleArgument<int>("is_test", 0) != 0),
      block_(ReadChannelBlock(*this)) {
  HALFCAF_ENFORCE(is_test_ || OutputSize() == 2,
                  "Dropout in training mode (is_test=0) needs 2 outputs (Y, mask), got ",
                  OutputSize());
}

void DropoutOp::RunOnDevice() {
  const Tensor& X = Input(0);
  EnforceFloatType(X, "X");
  const std::vector<int64_t> dims = X.dims();
  const DataType dtype = X.dtype();
  const int64_t n = X.numel();
  if (is_test_) {
    if (OutputSize() == 2) {
      bool* mask = Output(1, dims)->mutable_data<bool>();
      std::fill_n(mask, n, true);
    }
    if (!IsInputOutputAlias(0, 0)) Output(0)->CopyFrom(X);
    return;
  }
  const FloatIn x(X);  // before Output: Y may be X
  bool* mask = Output(1, dims)->mutable_data<bool>();
  const FloatOut y(Output(0, dims), dtype);
  const float scale = 1.f / (1.f - ratio_);
  // Element i is kept when its 32-bit draw is below (1 - ratio) * 2^32 (the keep probability is
  // exact to 2^-32). The draws are counter-based: one 64-bit key per run from the operator's
  // generator, then draw i = DropoutDraw(key, i), so the pieces run in parallel and the mask does
  // not depend on the thread count.
  const uint64_t threshold = static_cast<uint64_t>(
      std::llround((1.0 - static_cast<double>(ratio_)) * 4294967296.0));
  auto& rng = context_.RandGenerator();
  const uint64_t hi = rng(), lo = rng();
  const uint64_t key = (hi << 32) | lo;
  DrawIndex index;
  if (block_ != 0) {
    const std::vector<int64_t> nchw = UnblockedDims(dims, block_, DebugName(), "X");
    index = DrawIndex{block_, nchw[2] * nchw[3]};
  }
  auto piece = DropoutPiece;
#ifdef HALFCAF_DROPOUT_AVX512
  if (DropoutOnAvx512()) piece = DropoutPieceAvx512;
#endif
  // Pieces of whole pixels when blocked (the vector loop's groups of 16), at most
  // kElementwisePiece elements each (FloatIn's buffers).
  const int64_t unit = std::max<int64_t>(block_, 1), per_piece = kElementwisePiece / unit;
  ParallelFor(n / unit, 8.0 * static_cast<double>(unit), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; p += per_piece) {
      const int64_t off = p * unit, len = std::min(per_piece, e - p) * unit;
      const float* xp = x.Read(off, len, 0);
      float* yp = y.Begin(off, len, 1);
      piece(key, threshold, scale, xp, yp, mask, off, len, index);
      y.End(off, len, yp);
    }
  });
}

DropoutGradOp::DropoutGradOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      ratio_(ReadDropoutRatio(*this)),
      is_test_(GetSingleArgument<int>("is_test", 0) != 0) {
  HALFCAF_ENFORCE(is_test_ || InputSize() == 2,
                  "DropoutGrad in training mode (is_test=0) needs 2 inputs (dY, mask), got ",
                  InputSize());
}

void DropoutGradOp::RunOnDevice() {
  const Tensor& dY = Input(0);
  EnforceFloatType(dY, "dY");
  if (is_test_) {
    if (!IsInputOutputAlias(0, 0)) Output(0)->CopyFrom(dY);
    return;
  }
  const Tensor& mask_t = Input(1);
  HALFCAF_ENFORCE(mask_t.dtype() == DataType::BOOL, "mask must be bool, got ",
                  mask_t.DebugString());
  HALFCAF_ENFORCE(mask_t.dims() == dY.dims(), "mask and dY must have the same shape, got ",
                  DimsString(mask_t.dims()), " and ", DimsString(dY.dims()));
  const std::vector<int64_t> dims = dY.dims();
  const DataType dtype = dY.dtype();
  const int64_t n = dY.numel();
  const bool* mask = mask_t.data<bool>();
  const FloatIn dy(dY);  // before Output: dX may be dY
  const FloatOut dx(Output(0, dims), dtype);
  const float scale = 1.f / (1.f - ratio_);
  ForEachPiece(n, 1.0, [&](int64_t off, int64_t len) {
    const float* dyp = dy.Read(off, len, 0);
    float* dxp = dx.Begin(off, len, 1);
    const bool* m = mask + off;
    for (int64_t i = 0; i < len; ++i) dxp[i] = dyp[i] * (scale * static_cast<float>(m[i]));
    dx.End(off, len, dxp);
  });
}

namespace {

class GetDropoutGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    if (args().GetSingleArgument<int>("is_test", 0) != 0) {
      return SingleGradientDef("DropoutGrad", {GO(0)}, {GI(0)});
    }
    return SingleGradientDef("DropoutGrad", {GO(0), O(1)}, {GI(0)});
  }
};

std::vector<TensorShape> DropoutShapes(const OperatorDef& def, const std::vector<TensorShape>& in) {
  std::vector<TensorShape> out{in.at(0)};
  if (def.output_size() == 2) out.push_back(TensorShape{in[0].dims, DataType::BOOL});
  return out;
}

}  // namespace

REGISTER_CPU_OPERATOR(Dropout, DropoutOp);
REGISTER_CPU_OPERATOR(DropoutGrad, DropoutGradOp);
REGISTER_GRADIENT(Dropout, GetDropoutGradient);

OPERATOR_SCHEMA(Dropout)
    .NumInputs(1)
    .NumOutputs(1, 2)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(DropoutShapes)
    .PointwiseCost(1)
    .SetDoc(
        "Dropout. Training (is_test=0): every element is kept with probability 1 - ratio, "
        "Y = X * mask / (1 - ratio), and the bool mask (true = kept) is output 1, which is "
        "required. Test (is_test=1): Y = X; the mask output is optional and, unlike Caffe2 "
        "(which leaves it unwritten), is filled with true when given. The random draws "
        "come from the operator's generator, seeded by device_option.random_seed when set. "
        "Float, float16 and bfloat16.")
    .Arg("ratio", "float, default 0.5: probability of dropping an element, in [0, 1)")
    .Arg("is_test", "int, default 0: 1 turns dropout off (Y is a copy of X)")
    .Arg("channel_block",
         "int, default 0 (halfcaf): B > 0 says X is channel-blocked, (N, C / B, H, W, B) "
         "(operators/nn/channel_block.h); each element is kept or dropped as the same element of "
         "the NCHW tensor would be, and the mask is blocked like X")
    .Input(0, "X", "input tensor of any shape")
    .Output(0, "Y", "output, same shape and type as X")
    .Output(1, "mask", "bool, shape of X: true where X was kept (training; optional in test)");

OPERATOR_SCHEMA(DropoutGrad)
    .NumInputs(1, 2)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .PointwiseCost(1)
    .SetDoc(
        "Gradient of Dropout. Training: dX = dY * mask / (1 - ratio). Test (is_test=1): "
        "dX = dY (a mask input, if given, is ignored). Takes the forward op's ratio and "
        "is_test.")
    .Arg("ratio", "float, default 0.5: the forward op's ratio")
    .Arg("is_test", "int, default 0: the forward op's is_test")
    .Input(0, "dY", "gradient of Y")
    .Input(1, "mask", "bool mask from Dropout (training only)")
    .Output(0, "dX", "gradient of X, same shape and type as dY");

}  // namespace halfcaf
