// The geometry of one convolution test case (shapes of X, W and Y, the output size, flat
// indices), shared by the convolution tests of every engine: ConvShape for 2-D in NCHW or NHWC,
// ConvNdShape for any number of spatial dims in NCHW (1-D, 3-D, ...).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/argument.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {

struct ConvShape {
  int64_t N, C, H, W, M, kh, kw;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t group = 1;
  bool nhwc = false;
  bool bias = true;

  int64_t OutH() const { return (H + pt + pb - (dh * (kh - 1) + 1)) / sh + 1; }
  int64_t OutW() const { return (W + pl + pr - (dw * (kw - 1) + 1)) / sw + 1; }
  std::vector<int64_t> XDims() const {
    return nhwc ? std::vector<int64_t>{N, H, W, C} : std::vector<int64_t>{N, C, H, W};
  }
  std::vector<int64_t> WDims() const {
    return nhwc ? std::vector<int64_t>{M, kh, kw, C / group}
                : std::vector<int64_t>{M, C / group, kh, kw};
  }
  std::vector<int64_t> YDims() const {
    return nhwc ? std::vector<int64_t>{N, OutH(), OutW(), M}
                : std::vector<int64_t>{N, M, OutH(), OutW()};
  }
  // kernels / strides / dilations / pads lists, group and order.
  std::vector<Argument> Args() const {
    return {MakeArgument("kernels", std::vector<int64_t>{kh, kw}),
            MakeArgument("strides", std::vector<int64_t>{sh, sw}),
            MakeArgument("dilations", std::vector<int64_t>{dh, dw}),
            MakeArgument("pads", std::vector<int64_t>{pt, pl, pb, pr}),
            MakeArgument("group", static_cast<int>(group)),
            MakeArgument("order", std::string(nhwc ? "NHWC" : "NCHW"))};
  }
};

// Row-major (last dim fastest) multi-index <-> flat index over a grid of `sizes`.
inline std::vector<int64_t> Unravel(int64_t i, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> idx(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    idx[d] = i % sizes[d];
    i /= sizes[d];
  }
  return idx;
}
inline int64_t Ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& sizes) {
  int64_t i = 0;
  for (size_t d = 0; d < sizes.size(); ++d) i = i * sizes[d] + idx[d];
  return i;
}
inline int64_t Product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t x : v) n *= x;
  return n;
}

// An NCHW convolution over in.size() spatial dims. Empty stride / dilation / pads mean the
// defaults (1, 1, 0); pads lists all heads, then all tails.
struct ConvNdShape {
  int64_t N, C, M;
  std::vector<int64_t> in, kernel;
  std::vector<int64_t> stride = {}, dilation = {}, pads = {};
  int64_t group = 1;
  bool bias = true;

  int nd() const { return static_cast<int>(in.size()); }
  int64_t Stride(int d) const { return stride.empty() ? 1 : stride[d]; }
  int64_t Dilation(int d) const { return dilation.empty() ? 1 : dilation[d]; }
  int64_t PadHead(int d) const { return pads.empty() ? 0 : pads[d]; }
  int64_t PadTail(int d) const { return pads.empty() ? 0 : pads[nd() + d]; }
  int64_t Out(int d) const {
    return (in[d] + PadHead(d) + PadTail(d) - (Dilation(d) * (kernel[d] - 1) + 1)) / Stride(d) + 1;
  }
  std::vector<int64_t> OutSizes() const {
    std::vector<int64_t> o;
    for (int d = 0; d < nd(); ++d) o.push_back(Out(d));
    return o;
  }
  std::vector<int64_t> XDims() const { return Cat({N, C}, in); }
  std::vector<int64_t> WDims() const { return Cat({M, C / group}, kernel); }
  std::vector<int64_t> YDims() const { return Cat({N, M}, OutSizes()); }

  // kernels / strides / dilations / pads lists (the forms that carry the rank), group, NCHW.
  std::vector<Argument> Args() const {
    std::vector<Argument> args{MakeArgument("kernels", kernel)};
    if (!stride.empty()) args.push_back(MakeArgument("strides", stride));
    if (!dilation.empty()) args.push_back(MakeArgument("dilations", dilation));
    if (!pads.empty()) args.push_back(MakeArgument("pads", pads));
    args.push_back(MakeArgument("group", static_cast<int>(group)));
    args.push_back(MakeArgument("order", std::string("NCHW")));
    return args;
  }

  // Y computed directly: for every output, the sum over the group's channels and the kernel's
  // taps that fall inside X.
  std::vector<float> Direct(const float* x, const float* w, const float* b) const {
    const int64_t P = Product(OutSizes());
    std::vector<double> y(static_cast<size_t>(N * M * P), 0.0);
    ForEachTap([&](int64_t n, int64_t m, int64_t p, int64_t xi, int64_t wi) {
      y[(n * M + m) * P + p] += static_cast<double>(x[xi]) * w[wi];
    });
    if (b) {
      for (int64_t i = 0; i < N * M * P; ++i) y[i] += b[(i / P) % M];
    }
    return std::vector<float>(y.begin(), y.end());
  }

  // The gradients of sum(Y * dy), computed directly tap by tap: dw (W's shape), db (M), dx
  // (X's shape).
  void DirectGradients(const float* x, const float* w, const float* dy, std::vector<float>* dw,
                       std::vector<float>* db, std::vector<float>* dx) const {
    const int64_t P = Product(OutSizes());
    std::vector<double> gw(static_cast<size_t>(Product(WDims())), 0.0),
        gx(static_cast<size_t>(Product(XDims())), 0.0), gb(static_cast<size_t>(M), 0.0);
    ForEachTap([&](int64_t n, int64_t m, int64_t p, int64_t xi, int64_t wi) {
      const double g = dy[(n * M + m) * P + p];
      gw[wi] += g * x[xi];
      gx[xi] += g * w[wi];
    });
    for (int64_t i = 0; i < N * M * P; ++i) gb[(i / P) % M] += dy[i];
    dw->assign(gw.begin(), gw.end());
    db->assign(gb.begin(), gb.end());
    dx->assign(gx.begin(), gx.end());
  }

  // Calls f(n, m, flat output position, flat X index, flat W index) for every kernel tap that
  // falls inside X.
  template <typename F>
  void ForEachTap(F&& f) const {
    const std::vector<int64_t> out = OutSizes();
    const int64_t P = Product(out), K = Product(kernel), I = Product(in);
    const int64_t cg = C / group, mg = M / group;
    std::vector<int64_t> pos(in.size());
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t m = 0; m < M; ++m) {
        const int64_t g = m / mg;
        for (int64_t p = 0; p < P; ++p) {
          const std::vector<int64_t> o = Unravel(p, out);
          for (int64_t c = 0; c < cg; ++c) {
            for (int64_t k = 0; k < K; ++k) {
              const std::vector<int64_t> t = Unravel(k, kernel);
              bool inside = true;
              for (int d = 0; d < nd(); ++d) {
                pos[d] = o[d] * Stride(d) - PadHead(d) + t[d] * Dilation(d);
                inside = inside && pos[d] >= 0 && pos[d] < in[d];
              }
              if (inside) f(n, m, p, (n * C + g * cg + c) * I + Ravel(pos, in), (m * cg + c) * K + k);
            }
          }
        }
      }
    }
  }

 private:
  static std::vector<int64_t> Cat(std::vector<int64_t> head, const std::vector<int64_t>& tail) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  }
};

// The conv op `type` (Conv, Conv1D, ...) reading X, W and, with `bias`, b.
inline OperatorDef ConvOpDef(const std::string& type, bool bias, std::vector<Argument> args) {
  std::vector<std::string> inputs{"X", "W"};
  if (bias) inputs.push_back("b");
  return MakeOperatorDef(type, "conv", inputs, {"Y"}, std::move(args));
}

// Its gradient op: outputs dW, then db (or no_bias = 1 without a bias), then dX when `with_dx`.
inline OperatorDef ConvGradientOpDef(const std::string& type, bool bias, bool with_dx,
                                     std::vector<Argument> args) {
  std::vector<std::string> outputs{"dW"};
  if (bias) {
    outputs.push_back("db");
  } else {
    args.push_back(MakeArgument("no_bias", 1));
  }
  if (with_dx) outputs.push_back("dX");
  return MakeOperatorDef(type + "Gradient", "conv_grad", {"X", "W", "dY"}, outputs,
                         std::move(args));
}

// Random X, W, b (with `bias`, M values) and, when `y_dims` is given, dY, drawn from `seed`.
inline std::map<std::string, Tensor> ConvOpInputs(const std::vector<int64_t>& x_dims,
                                                  const std::vector<int64_t>& w_dims, int64_t M,
                                                  bool bias, uint32_t seed,
                                                  const std::vector<int64_t>& y_dims = {}) {
  std::map<std::string, Tensor> in{{"X", RandomTensor(x_dims, seed)},
                                   {"W", RandomTensor(w_dims, seed + 1)}};
  if (bias) in["b"] = RandomTensor({M}, seed + 2);
  if (!y_dims.empty()) in["dY"] = RandomTensor(y_dims, seed + 3);
  return in;
}

}  // namespace testing
}  // namespace halfcaf
