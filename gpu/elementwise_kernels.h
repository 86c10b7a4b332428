// Element-wise CUDA kernels of the arithmetic, activation, conversion and layout operators. Tensors
// are passed as (DataType, pointer); float16 is computed in float and rounded once on output, as
// on the CPU. Every function queues its work on `stream` and returns at once; n == 0 is a no-op.
// A dtype a function does not take throws EnforceNotMet naming it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "core/types.h"

namespace halfcaf {
namespace gpu {

enum class BinaryOp { kAdd, kSub, kMul, kDiv };

// c[(i * n + j) * post + k] = a[(i * n + j) * post + k] (op) b[j] (Caffe2's legacy broadcast, with
// pre = post = 1 for equal shapes). A, B and C are float / float16 in any mix (computed in float),
// or all of one type among double, int32, int64. c may alias a (or b when pre = post = 1).
void BinaryBroadcast(BinaryOp op, int64_t pre, int64_t n, int64_t post, DataType a_type,
                     const void* a, DataType b_type, const void* b, DataType c_type, void* c,
                     cudaStream_t stream);

// c[i] = a[ia] (op) b[ib] over an output of dims `dims` (contiguous, innermost last, 1 to 8
// dims), where ia and ib follow the multi-index of i with a_stride and b_stride (0 along dims
// where that input repeats): NumPy broadcasting (operators/math/numpy_broadcast.h merges the dims).
// Types as BinaryBroadcast; c may alias an input whose strides are c's own.
void BinaryStrided(BinaryOp op, const std::vector<int64_t>& dims,
                   const std::vector<int64_t>& a_stride, const std::vector<int64_t>& b_stride,
                   DataType a_type, const void* a, DataType b_type, const void* b,
                   DataType c_type, void* c, cudaStream_t stream);

// da = dc / b, db = -da * c. Float / float16 in any mix, or all double.
void DivGradient(int64_t n, DataType b_type, const void* b, DataType c_type, const void* c,
                 DataType dc_type, const void* dc, DataType da_type, void* da, DataType db_type,
                 void* db, cudaStream_t stream);

// y = -x: float, float16 (sign bit flipped, exact), double, int32, int64. y may alias x.
void Negative(int64_t n, DataType type, const void* x, void* y, cudaStream_t stream);

// y = f(x) for float / float16 x and y (y may alias x):
//   kSigmoid 1 / (1 + exp(-x)); kTanh tanh(x); kSqr x * x; kScale p0 * x;
//   kClip min(max(x, p0), p1); kExp exp(x); kLog ln(x); kSqrt sqrt(x); kAbs |x|;
//   kReciprocal 1 / x; kPow x ^ p0; kLeakyRelu x > 0 ? x : p0 * x;
//   kElu x < 0 ? p0 * (exp(x) - 1) : x; kHardSigmoid p0 * x + p1 clamped to [0, 1] (NaN kept);
//   kFloor floor(x); kCeil ceil(x).
enum class UnaryOp {
  kSigmoid, kTanh, kSqr, kScale, kClip, kExp, kLog, kSqrt, kAbs, kReciprocal, kPow, kLeakyRelu,
  kElu, kHardSigmoid, kFloor, kCeil
};
void Unary(UnaryOp op, int64_t n, DataType x_type, const void* x, DataType y_type, void* y,
           float p0, float p1, cudaStream_t stream);

// dx = g(y, dy) for float / float16 (dx may alias dy), where y is the forward output, except
// for kAbs, where it is the forward input x:
//   kSigmoid dy * y * (1 - y); kTanh dy * (1 - y * y); kClip dy where p0 < y < p1, else 0;
//   kAbs sign(x) * dy (0 at x = 0); kReciprocal -dy * y * y; kLeakyRelu y > 0 ? dy : p0 * dy;
//   kElu y < 0 ? dy * (y + p0) : dy; kHardSigmoid p0 * dy where 0 < y < 1, else 0.
// Where a select drops a NaN y, the result is NaN instead (core/nan_math.h).
enum class UnaryGradientOp {
  kSigmoid, kTanh, kClip, kAbs, kReciprocal, kLeakyRelu, kElu, kHardSigmoid
};
void UnaryGradient(UnaryGradientOp op, int64_t n, DataType y_type, const void* y,
                   DataType dy_type, const void* dy, DataType dx_type, void* dx, float p0,
                   float p1, cudaStream_t stream);

// y = x ^ e element by element (Pow's two-input form); x, e, y float / float16 in any mix. y may
// alias x, or e when they have one dtype.
void Pow(int64_t n, DataType x_type, const void* x, DataType e_type, const void* e,
         DataType y_type, void* y, cudaStream_t stream);

// y = max(y, x) (with `max`) or min(y, x) element by element, NaN winning (Max / Min fold their
// inputs into y one at a time). x, y float / float16.
void SelectInto(bool max, int64_t n, DataType x_type, const void* x, DataType y_type, void* y,
                cudaStream_t stream);

// dx = dy where x == y, else 0; NaN where y or dy is NaN (MaxGradient / MinGradient, one forward
// input x at a time). All float / float16; x and y compared exactly.
void SelectGradient(int64_t n, DataType y_type, const void* y, DataType dy_type, const void* dy,
                    DataType x_type, const void* x, DataType dx_type, void* dx,
                    cudaStream_t stream);

// y += x: x and y of one type among float, double, int32, int64, or x float16 / bfloat16 and y
// float (an FP32 accumulator).
void AddTo(int64_t n, DataType x_type, const void* x, DataType y_type, void* y,
           cudaStream_t stream);

// y = w[0] * x, or y += w[0] * x with accumulate, where w is a one-element float / float16
// device tensor (read on the device, no host sync). x, y float / float16.
void ScaleByDeviceScalar(int64_t n, DataType w_type, const void* w, DataType x_type, const void* x,
                         DataType y_type, void* y, bool accumulate, cudaStream_t stream);

// dst = src converted element by element, between any numeric types (float16 and bfloat16
// through float, rounded to nearest even; float to integer truncates toward zero).
void Convert(int64_t n, DataType src_type, const void* src, DataType dst_type, void* dst,
             cudaStream_t stream);

// y[i] = value converted to `type` with the CPU's rules (static_cast; float16 and bfloat16
// rounded).
void Fill(int64_t n, DataType type, double value, void* y, cudaStream_t stream);

// SquaredL2DistanceGradient over (rows, cols): dx[r, j] = dd[r] * (x[r, j] - y[r, j]) and
// dy = -dx. x, y, dd, dx, dy float / float16.
void RowScaledDifference(int64_t rows, int64_t cols, DataType x_type, const void* x,
                         DataType y_type, const void* y, DataType dd_type, const void* dd,
                         DataType dx_type, void* dx, DataType dy_type, void* dy,
                         cudaStream_t stream);

// y = x with its dims permuted: y.dims[i] = x_dims[axes[i]]. Elements of 1, 2, 4 or 8 bytes. Dims
// that stay next to each other are merged first; at most 8 dims may remain.
void Transpose(const std::vector<int64_t>& x_dims, const std::vector<int>& axes, size_t item_size,
               const void* x, void* y, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
