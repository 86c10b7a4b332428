#include "operators/tensor/transpose_op.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/gradient.h"
#include "operators/cpu_parallel.h"

namespace halfcaf {

namespace {

// When the permutation, with runs of adjacent axes merged, swaps two blocks — (B, R, C) ->
// (B, C, R), as NCHW <-> NHWC do — sets *b, *r, *c and returns true.
bool AsBatchedMatrixTranspose(const std::vector<int64_t>& x_dims, const std::vector<int>& axes,
                              int64_t* b, int64_t* r, int64_t* c) {
  // Merged groups of the output, each a run of consecutive input axes.
  std::vector<std::pair<int, int>> runs;  // [first input axis, last input axis]
  for (int a : axes) {
    if (!runs.empty() && runs.back().second + 1 == a) {
      runs.back().second = a;
    } else {
      runs.emplace_back(a, a);
    }
  }
  auto size = [&](const std::pair<int, int>& run) {
    int64_t n = 1;
    for (int a = run.first; a <= run.second; ++a) n *= x_dims[a];
    return n;
  };
  if (runs.size() == 2 && runs[0].first > runs[1].first) {
    *b = 1;
    *r = size(runs[1]);
    *c = size(runs[0]);
    return true;
  }
  if (runs.size() == 3 && runs[0].first == 0 && runs[1].first > runs[2].first) {
    *b = size(runs[0]);
    *r = size(runs[2]);
    *c = size(runs[1]);
    return true;
  }
  return false;
}

// y (b, c, r) = x (b, r, c) transposed per batch, in cache-sized tiles, over the threads.
template <typename T>
void BatchedMatrixTranspose(int64_t b, int64_t r, int64_t c, const T* x, T* y) {
  constexpr int64_t kTile = 32;
  const int64_t rt = (r + kTile - 1) / kTile, ct = (c + kTile - 1) / kTile;
  ParallelFor(b * rt * ct, kTile * kTile, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / (rt * ct), i0 = (t / ct) % rt * kTile, j0 = t % ct * kTile;
      const T* xb = x + n * r * c;
      T* yb = y + n * r * c;
      const int64_t i1 = std::min(i0 + kTile, r), j1 = std::min(j0 + kTile, c);
      for (int64_t j = j0; j < j1; ++j) {
        for (int64_t i = i0; i < i1; ++i) yb[j * r + i] = xb[i * c + j];
      }
    }
  });
}

template <typename T>
void TransposeTyped(const std::vector<int64_t>& x_dims, const std::vector<int>& axes,
                    const T* x, T* y) {
  const int nd = static_cast<int>(x_dims.size());
  int64_t n = 1;
  for (int64_t d : x_dims) n *= d;
  if (n == 0) return;
  if (nd == 0) {
    y[0] = x[0];
    return;
  }
  int64_t mb = 0, mr = 0, mc = 0;
  if (n >= 4096 && AsBatchedMatrixTranspose(x_dims, axes, &mb, &mr, &mc)) {
    if (mr == 1 || mc == 1) {
      // Only axes of size 1 move (a 1x1 filter between NCHW and NHWC): the bytes stay in order.
      std::memcpy(y, x, static_cast<size_t>(n) * sizeof(T));
    } else {
      BatchedMatrixTranspose(mb, mr, mc, x, y);
    }
    return;
  }
  std::vector<int64_t> x_stride(nd, 1);
  for (int i = nd - 2; i >= 0; --i) x_stride[i] = x_stride[i + 1] * x_dims[i + 1];
  // For each output dim: its size and the matching stride in X.
  std::vector<int64_t> y_dims(nd), src_stride(nd);
  for (int i = 0; i < nd; ++i) {
    y_dims[i] = x_dims[axes[i]];
    src_stride[i] = x_stride[axes[i]];
  }
  const int64_t inner = y_dims[nd - 1];
  const int64_t inner_stride = src_stride[nd - 1];
  std::vector<int64_t> index(nd, 0);  // over output dims 0..nd-2
  int64_t src = 0;
  for (int64_t out = 0; out < n; out += inner) {
    const T* xs = x + src;
    T* yd = y + out;
    for (int64_t j = 0; j < inner; ++j) yd[j] = xs[j * inner_stride];
    // Advance the odometer over the outer output dims.
    for (int d = nd - 2; d >= 0; --d) {
      if (++index[d] < y_dims[d]) {
        src += src_stride[d];
        break;
      }
      src -= src_stride[d] * (y_dims[d] - 1);
      index[d] = 0;
    }
  }
}

}  // namespace

std::vector<int> ReverseAxes(int nd) {
  std::vector<int> axes(nd);
  for (int i = 0; i < nd; ++i) axes[i] = nd - 1 - i;
  return axes;
}

std::vector<int> OrderSwitchAxes(int nd, bool to_channels_last) {
  HALFCAF_ENFORCE(nd >= 3, to_channels_last ? "NCHW2NHWC" : "NHWC2NCHW",
                  " needs an input with at least 3 dims (N, C, spatial...), got ", nd);
  std::vector<int> axes{0};
  if (to_channels_last) {
    for (int i = 2; i < nd; ++i) axes.push_back(i);
    axes.push_back(1);
  } else {
    axes.push_back(nd - 1);
    for (int i = 1; i < nd - 1; ++i) axes.push_back(i);
  }
  return axes;
}

void CheckPermutation(const std::vector<int>& axes) {
  std::vector<bool> seen(axes.size(), false);
  for (int a : axes) {
    HALFCAF_ENFORCE(a >= 0 && a < static_cast<int>(axes.size()) && !seen[a], "axes ",
                    DimsString(axes), " is not a permutation of 0..", axes.size() - 1);
    seen[a] = true;
  }
}

std::vector<int64_t> TransposeDims(const std::vector<int64_t>& dims, const std::vector<int>& axes) {
  HALFCAF_ENFORCE(axes.size() == dims.size(), "axes ", DimsString(axes), " has ", axes.size(),
                  " entries but the input ", DimsString(dims), " has ", dims.size(), " dims");
  std::vector<int64_t> out(dims.size());
  for (size_t i = 0; i < axes.size(); ++i) out[i] = dims[axes[i]];
  return out;
}

void TransposeBytes(const std::vector<int64_t>& x_dims, const std::vector<int>& axes,
                    size_t item_size, const void* x, void* y) {
  switch (item_size) {
    case 1:
      TransposeTyped(x_dims, axes, static_cast<const uint8_t*>(x), static_cast<uint8_t*>(y));
      return;
    case 2:
      TransposeTyped(x_dims, axes, static_cast<const uint16_t*>(x), static_cast<uint16_t*>(y));
      return;
    case 4:
      TransposeTyped(x_dims, axes, static_cast<const uint32_t*>(x), static_cast<uint32_t*>(y));
      return;
    case 8:
      TransposeTyped(x_dims, axes, static_cast<const uint64_t*>(x), static_cast<uint64_t*>(y));
      return;
    default:
      HALFCAF_THROW("transpose of ", item_size, "-byte elements is not supported");
  }
}

OpCost ElementMoveCost(const OperatorDef&, const std::vector<TensorShape>& in) {
  OpCost c;
  c.bytes_read = static_cast<double>(in.at(0).numel()) * DataTypeSize(in[0].dtype);
  c.bytes_written = c.bytes_read;
  return c;
}

TransposeOp::TransposeOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), axes_(GetRepeatedArgument<int>("axes")) {
  CheckPermutation(axes_);
}

void TransposeOp::RunOnDevice() {
  const Tensor& X = Input(0);
  run_axes_ = axes_.empty() ? ReverseAxes(X.ndim()) : axes_;
  Tensor* Y = Output(0, TransposeDims(X.dims(), run_axes_));
  void* y = Y->raw_mutable_data(X.dtype());
  TransposeBytes(X.dims(), run_axes_, DataTypeSize(X.dtype()), X.raw_data(), y);
}

template <bool to_channels_last>
void OrderSwitchOp<to_channels_last>::RunOnDevice() {
  const Tensor& X = Input(0);
  axes_ = OrderSwitchAxes(X.ndim(), to_channels_last);
  Tensor* Y = Output(0, TransposeDims(X.dims(), axes_));
  void* y = Y->raw_mutable_data(X.dtype());
  TransposeBytes(X.dims(), axes_, DataTypeSize(X.dtype()), X.raw_data(), y);
}

namespace {

class GetTransposeGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<int> axes = args().GetRepeatedArgument<int>("axes");
    std::vector<Argument> margs;
    if (!axes.empty()) {
      // The inverse permutation; reversing all dims (empty axes) is its own inverse.
      std::vector<int> inverse(axes.size());
      for (size_t i = 0; i < axes.size(); ++i) inverse[axes[i]] = static_cast<int>(i);
      margs.push_back(MakeArgument("axes", inverse));
    }
    return SingleGradientDef("Transpose", {GO(0)}, {GI(0)}, margs);
  }
};

template <bool to_channels_last>
class GetOrderSwitchGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef(to_channels_last ? "NHWC2NCHW" : "NCHW2NHWC", {GO(0)}, {GI(0)});
  }
};

template <bool to_channels_last>
std::vector<TensorShape> OrderSwitchShape(const OperatorDef&, const std::vector<TensorShape>& in) {
  const int nd = static_cast<int>(in[0].dims.size());
  return {TensorShape{TransposeDims(in[0].dims, OrderSwitchAxes(nd, to_channels_last)),
                      in[0].dtype}};
}

}  // namespace

REGISTER_CPU_OPERATOR(Transpose, TransposeOp);
REGISTER_CPU_OPERATOR(NCHW2NHWC, OrderSwitchOp<true>);
REGISTER_CPU_OPERATOR(NHWC2NCHW, OrderSwitchOp<false>);
REGISTER_GRADIENT(Transpose, GetTransposeGradient);
REGISTER_GRADIENT(NCHW2NHWC, GetOrderSwitchGradient<true>);
REGISTER_GRADIENT(NHWC2NCHW, GetOrderSwitchGradient<false>);

OPERATOR_SCHEMA(Transpose)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      std::vector<int> axes = ArgumentHelper(def).GetRepeatedArgument<int>("axes");
      if (axes.empty()) axes = ReverseAxes(static_cast<int>(in[0].dims.size()));
      CheckPermutation(axes);
      return std::vector<TensorShape>{{TransposeDims(in[0].dims, axes), in[0].dtype}};
    })
    .CostInferenceFunction(ElementMoveCost)
    .SetDoc("Permutes the dims of X: Y.dims[i] = X.dims[axes[i]]. Without `axes` the dims are "
            "reversed. Any data type. Gradient: Transpose with the inverse permutation.")
    .Arg("axes", "ints: a permutation of 0..ndim-1; empty or absent reverses the dims")
    .Input(0, "X", "tensor of any shape")
    .Output(0, "Y", "permuted X");

OPERATOR_SCHEMA(NCHW2NHWC)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction(OrderSwitchShape<true>)
    .CostInferenceFunction(ElementMoveCost)
    .SetDoc("Moves the channel dim last: (N, C, H, W) -> (N, H, W, C). Inputs with other numbers "
            "of spatial dims (ndim >= 3) work the same way. Any data type.")
    .Input(0, "X", "(N, C, H, W)")
    .Output(0, "Y", "(N, H, W, C)");

OPERATOR_SCHEMA(NHWC2NCHW)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction(OrderSwitchShape<false>)
    .CostInferenceFunction(ElementMoveCost)
    .SetDoc("Moves the channel dim to position 1: (N, H, W, C) -> (N, C, H, W). Inputs with "
            "other numbers of spatial dims (ndim >= 3) work the same way. Any data type.")
    .Input(0, "X", "(N, H, W, C)")
    .Output(0, "Y", "(N, C, H, W)");

}  // namespace halfcaf
