#include "operators/nn/conv_op.h"

#include <algorithm>
#include <optional>

#include "core/checked_math.h"
#include "core/float_io.h"
#include "core/gradient.h"
#include "core/math.h"
#include "operators/nn/channel_block.h"
#include "operators/tensor/transpose_op.h"

namespace halfcaf {

int64_t CheckConvFilter(const ConvPoolArgs& a, const ConvPoolGeometry& g,
                        const std::vector<int64_t>& w) {
  const bool nchw = a.filter_order == StorageOrder::NCHW;
  const int nd = g.num_spatial_dims();
  const char* layout = nd != 2 ? (nchw ? "(M, C/group, kernel...)" : "(M, kernel..., C/group)")
                       : nchw  ? "(M, C/group, kH, kW)"
                               : "(M, kH, kW, C/group)";
  HALFCAF_ENFORCE(static_cast<int>(w.size()) == nd + 2, a.op_label, ": filter must have ", nd + 2,
                  " dims ", layout, " in ", StorageOrderName(a.filter_order), " order, got ",
                  DimsString(w));
  HALFCAF_ENFORCE(g.C % a.group == 0, a.op_label, ": X has C = ", g.C,
                  " channels, which is not divisible by group ", a.group);
  const int64_t M = w[0];
  HALFCAF_ENFORCE(M % a.group == 0, a.op_label, ": filter ", DimsString(w), " has M = ", M,
                  " output channels, which is not divisible by group ", a.group);
  const int64_t cg = nchw ? w[1] : w.back();
  HALFCAF_ENFORCE(cg * a.group == g.C, a.op_label, ": filter ", DimsString(w), " ", layout, " has ",
                  cg, " input channels per group, but X has C = ", g.C, " and group ", a.group,
                  " (expected ", g.C / a.group, ")");
  for (int d = 0; d < nd; ++d) {
    const int64_t fk = w[(nchw ? 2 : 1) + d];
    HALFCAF_ENFORCE(fk == g.kernel[d], a.op_label, ": filter ", DimsString(w), " ", layout,
                    " does not match the kernel ", DimsString(g.kernel),
                    " given by the arguments (spatial dim ", d, ": ", fk, " vs ", g.kernel[d], ")");
  }
  return M;
}

void CheckConvBias(const ConvPoolArgs& a, const std::vector<int64_t>& b, int64_t M,
                   const std::vector<int64_t>& w) {
  HALFCAF_ENFORCE(b.size() == 1 && b[0] == M, a.op_label, ": bias must have dims [", M,
                  "] (one per output channel of filter ", DimsString(w), "), got ", DimsString(b));
}

void CheckConvGradientDY(const ConvPoolArgs& a, const std::vector<int64_t>& dy,
                         const std::vector<int64_t>& y, const std::vector<int64_t>& x,
                         const std::vector<int64_t>& w) {
  HALFCAF_ENFORCE(dy == y, a.op_label, ": dY has dims ", DimsString(dy),
                  " but the convolution of X ", DimsString(x), " with filter ", DimsString(w),
                  " gives ", DimsString(y));
}

void CheckConvGradientOutputs(const ConvPoolArgs& a, bool no_bias, int n) {
  if (no_bias) {
    HALFCAF_ENFORCE(n <= 2, a.op_label, ": with no_bias=1 the outputs are (dfilter[, dX]), got ", n,
                    " outputs");
  } else {
    HALFCAF_ENFORCE(n >= 2, a.op_label,
                    ": without no_bias the outputs are (dfilter, dbias[, dX]), got ", n,
                    " output(s); set no_bias=1 for a convolution without bias");
  }
}

void CheckConvLayout(const ConvPoolArgs& a) {
  HALFCAF_ENFORCE(a.order == StorageOrder::NCHW || a.num_spatial_dims() == 2, a.op_label,
                  ": NHWC order supports only 2-D convolution, got a ", a.num_spatial_dims(),
                  "-D kernel ", DimsString(a.kernel), "; use order NCHW");
}

namespace {

Im2ColShape MakeIm2ColShape(const ConvPoolGeometry& g) {
  return Im2ColShape{g.in[0],       g.in[1],       g.kernel[0],   g.kernel[1],
                     g.dilation[0], g.dilation[1], g.pad_head(0), g.pad_head(1),
                     g.stride[0],   g.stride[1],   g.out[0],      g.out[1]};
}

// A 1x1 kernel with unit stride and no padding: the image itself is the column matrix.
bool IsPointwise(const ConvPoolGeometry& g) {
  for (int d = 0; d < g.num_spatial_dims(); ++d) {
    if (g.kernel[d] != 1 || g.stride[d] != 1 || g.pad_head(d) != 0 || g.pad_tail(d) != 0) {
      return false;
    }
  }
  return true;
}

// im2col / col2im of one group's channels of an NCHW image: the fast 2-D functions for 2-D
// convolutions, the generic N-d ones for the others (1-D, 3-D, ...).
class NchwColumns {
 public:
  explicit NchwColumns(const ConvPoolGeometry& g) : two_d_(g.num_spatial_dims() == 2) {
    if (two_d_) {
      s2_ = MakeIm2ColShape(g);
    } else {
      sn_ = Im2ColNdShape{g.in,       g.kernel, g.dilation,
                          std::vector<int64_t>(g.pads.begin(), g.pads.begin() + g.in.size()),
                          g.stride,   g.out};
    }
  }
  void Im2Col(int64_t channels, const float* image, float* col) const {
    if (two_d_) {
      Im2ColNCHW(s2_, channels, image, col);
    } else {
      Im2ColNdNCHW(sn_, channels, image, col);
    }
  }
  void Col2Im(int64_t channels, const float* col, float* image) const {
    if (two_d_) {
      Col2ImNCHW(s2_, channels, col, image);
    } else {
      Col2ImNdNCHW(sn_, channels, col, image);
    }
  }

 private:
  bool two_d_;
  Im2ColShape s2_{};
  Im2ColNdShape sn_;
};

}  // namespace

const float* FilterInOpOrder(const ConvPoolArgs& a, const std::vector<int64_t>& w_dims,
                             const float* w, std::vector<float>* buf) {
  if (a.filter_order == a.order) return w;
  const std::vector<int> axes =
      OrderSwitchAxes(static_cast<int>(w_dims.size()), a.order == StorageOrder::NHWC);
  buf->resize(static_cast<size_t>(CheckedNumel(w_dims, "filter")));
  TransposeBytes(w_dims, axes, sizeof(float), w, buf->data());
  return buf->data();
}

void FilterToItsOrder(const ConvPoolArgs& a, const std::vector<int64_t>& w_dims,
                      const float* op_order, float* out) {
  const std::vector<int> to_op =
      OrderSwitchAxes(static_cast<int>(w_dims.size()), a.order == StorageOrder::NHWC);
  TransposeBytes(TransposeDims(w_dims, to_op),
                 OrderSwitchAxes(static_cast<int>(w_dims.size()), a.order != StorageOrder::NHWC),
                 sizeof(float), op_order, out);
}

ConvOp::ConvOp(const OperatorDef& def, Workspace* ws)
    : ConvPoolOpBase(def, ws, ConvPoolKind::kConv) {
  CheckConvLayout(cp_);
  RefuseChannelBlock(*this);
}

void ConvOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& W = Input(1);
  EnforceFloatType(X, "Conv input X");
  EnforceFloatType(W, "Conv filter");
  const ConvPoolGeometry g = Geometry(X.dims());
  const int64_t M = CheckConvFilter(cp_, g, W.dims());
  const bool has_bias = InputSize() == 3;
  const float* b = nullptr;
  if (has_bias) {
    const Tensor& B = Input(2);
    EnforceFloatType(B, "Conv bias");
    CheckConvBias(cp_, B.dims(), M, W.dims());
    b = ReadAsFloat(B, &b_);
  }
  Tensor* Y = Output(0, g.OutputDims(M, cp_.order));
  const float* x = ReadAsFloat(X, &x_);
  const float* w = FilterInOpOrder(cp_, W.dims(), ReadAsFloat(W, &w_), &w_op_);
  FloatWriter yw(Y, X.dtype(), &y_);
  float* y = yw.data();

  const int64_t G = cp_.group, C = g.C, Cg = C / G, Mg = M / G;
  const int64_t P = g.out_size(), HW = g.in_size();
  const int64_t K = Cg * g.kernel_size();
  const size_t col_size = static_cast<size_t>(CheckedMul(K, P, "im2col buffer"));
  float* col_data = nullptr;  // operator scratch
  const bool pointwise = IsPointwise(g);

  if (cp_.order == StorageOrder::NCHW) {
    const NchwColumns cols(g);
    if (!pointwise) col_data = ScratchFloats(col_size, &col_);
    for (int64_t n = 0; n < g.N; ++n) {
      for (int64_t gr = 0; gr < G; ++gr) {
        const float* xg = x + (n * C + gr * Cg) * HW;
        const float* col = xg;
        if (!pointwise) {
          cols.Im2Col(Cg, xg, col_data);
          col = col_data;
        }
        float* yg = y + (n * M + gr * Mg) * P;
        math::Gemm(math::Trans::kNo, math::Trans::kNo, Mg, P, K, 1.f, w + gr * Mg * K, col, 0.f,
                   yg);
        if (b) {
          for (int64_t m = 0; m < Mg; ++m) {
            const float bv = b[gr * Mg + m];
            float* row = yg + m * P;
            for (int64_t p = 0; p < P; ++p) row[p] += bv;
          }
        }
      }
    }
  } else {
    const Im2ColShape s = MakeIm2ColShape(g);  // NHWC is 2-D only (CheckConvLayout)
    const bool direct = pointwise && G == 1;
    if (!direct) col_data = ScratchFloats(col_size, &col_);
    for (int64_t n = 0; n < g.N; ++n) {
      const float* ximg = x + n * HW * C;
      float* yimg = y + n * P * M;
      for (int64_t gr = 0; gr < G; ++gr) {
        const float* col = ximg;
        if (!direct) {
          Im2ColNHWC(s, C, gr * Cg, Cg, ximg, col_data);
          col = col_data;
        }
        // Y[:, group columns] (P x Mg) = col (P x K) * W_g^T (K x Mg)
        math::GemmEx(math::Trans::kNo, math::Trans::kYes, P, Mg, K, 1.f, col, K, w + gr * Mg * K, K,
                     0.f, yimg + gr * Mg, M);
      }
      if (b) {
        for (int64_t p = 0; p < P; ++p) {
          float* row = yimg + p * M;
          for (int64_t m = 0; m < M; ++m) row[m] += b[m];
        }
      }
    }
  }
  yw.Commit();
}

ConvGradientOp::ConvGradientOp(const OperatorDef& def, Workspace* ws)
    : ConvPoolOpBase(def, ws, ConvPoolKind::kConv),
      no_bias_(GetSingleArgument<int>("no_bias", 0) != 0) {
  CheckConvLayout(cp_);
  RefuseChannelBlock(*this);
  CheckConvGradientOutputs(cp_, no_bias_, OutputSize());
}

void ConvGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& W = Input(1);
  const Tensor& dY = Input(2);
  EnforceFloatType(X, "ConvGradient input X");
  EnforceFloatType(W, "ConvGradient filter");
  EnforceFloatType(dY, "ConvGradient dY");
  const ConvPoolGeometry g = Geometry(X.dims());
  const int64_t M = CheckConvFilter(cp_, g, W.dims());
  const std::vector<int64_t> y_dims = g.OutputDims(M, cp_.order);
  CheckConvGradientDY(cp_, dY.dims(), y_dims, X.dims(), W.dims());
  const bool compute_dx = OutputSize() == (no_bias_ ? 2 : 3);
  const float* x = ReadAsFloat(X, &x_);
  const float* w = FilterInOpOrder(cp_, W.dims(), ReadAsFloat(W, &w_), &w_op_);
  const float* dy = ReadAsFloat(dY, &dy_);

  // Outputs are written in float (float16 outputs through scratch) and accumulated from zero;
  // dfilter in the op's order, then in the filter's when they differ.
  FloatWriter dww(Output(0, W.dims()), W.dtype(), &dw_);
  const bool dw_reordered = cp_.filter_order != cp_.order;
  if (dw_reordered) dw_op_.resize(static_cast<size_t>(W.numel()));
  float* dw = dw_reordered ? dw_op_.data() : dww.data();
  std::fill_n(dw, W.numel(), 0.f);
  std::optional<FloatWriter> dbw, dxw;
  float* db = nullptr;
  if (!no_bias_) {
    dbw.emplace(Output(1, {M}), W.dtype(), &db_);
    db = dbw->data();
    std::fill_n(db, M, 0.f);
  }
  float* dx = nullptr;
  if (compute_dx) {
    dxw.emplace(Output(no_bias_ ? 1 : 2, X.dims()), X.dtype(), &dx_);
    dx = dxw->data();
    std::fill_n(dx, X.numel(), 0.f);
  }

  const int64_t G = cp_.group, C = g.C, Cg = C / G, Mg = M / G;
  const int64_t P = g.out_size(), HW = g.in_size();
  const int64_t K = Cg * g.kernel_size();
  const size_t col_size = static_cast<size_t>(CheckedMul(K, P, "im2col buffer"));
  float* col_data = nullptr;  // operator scratch
  float* col_grad_data = nullptr;
  const bool pointwise = IsPointwise(g);
  using math::Trans;

  if (cp_.order == StorageOrder::NCHW) {
    const NchwColumns cols(g);
    if (!pointwise) {
      col_data = ScratchFloats(col_size, &col_);
      if (dx) col_grad_data = ScratchFloats(col_size, &col_grad_);
    }
    for (int64_t n = 0; n < g.N; ++n) {
      for (int64_t gr = 0; gr < G; ++gr) {
        const float* xg = x + (n * C + gr * Cg) * HW;
        const float* col = xg;
        if (!pointwise) {
          cols.Im2Col(Cg, xg, col_data);
          col = col_data;
        }
        const float* dyg = dy + (n * M + gr * Mg) * P;
        const float* wg = w + gr * Mg * K;
        // dW_g (Mg x K) += dY_g (Mg x P) * col^T
        math::Gemm(Trans::kNo, Trans::kYes, Mg, K, P, 1.f, dyg, col, 1.f, dw + gr * Mg * K);
        if (db) {
          for (int64_t m = 0; m < Mg; ++m) {
            const float* row = dyg + m * P;
            double acc = 0;
            for (int64_t p = 0; p < P; ++p) acc += row[p];
            db[gr * Mg + m] += static_cast<float>(acc);
          }
        }
        if (dx) {
          float* dxg = dx + (n * C + gr * Cg) * HW;
          // dcol (K x P) = W_g^T (K x Mg) * dY_g
          if (pointwise) {
            math::Gemm(Trans::kYes, Trans::kNo, K, P, Mg, 1.f, wg, dyg, 0.f, dxg);
          } else {
            math::Gemm(Trans::kYes, Trans::kNo, K, P, Mg, 1.f, wg, dyg, 0.f, col_grad_data);
            cols.Col2Im(Cg, col_grad_data, dxg);
          }
        }
      }
    }
  } else {
    const Im2ColShape s = MakeIm2ColShape(g);  // NHWC is 2-D only (CheckConvLayout)
    const bool direct = pointwise && G == 1;
    if (!direct) {
      col_data = ScratchFloats(col_size, &col_);
      if (dx) col_grad_data = ScratchFloats(col_size, &col_grad_);
    }
    for (int64_t n = 0; n < g.N; ++n) {
      const float* ximg = x + n * HW * C;
      const float* dyimg = dy + n * P * M;
      for (int64_t gr = 0; gr < G; ++gr) {
        const float* col = ximg;
        if (!direct) {
          Im2ColNHWC(s, C, gr * Cg, Cg, ximg, col_data);
          col = col_data;
        }
        const float* wg = w + gr * Mg * K;
        // dW_g (Mg x K) += dY_g^T (Mg x P, leading dim M) * col (P x K)
        math::GemmEx(Trans::kYes, Trans::kNo, Mg, K, P, 1.f, dyimg + gr * Mg, M, col, K, 1.f,
                     dw + gr * Mg * K, K);
        if (dx) {
          float* dximg = dx + n * HW * C;
          // dcol (P x K) = dY_g (P x Mg) * W_g (Mg x K)
          if (direct) {
            math::GemmEx(Trans::kNo, Trans::kNo, P, K, Mg, 1.f, dyimg, M, wg, K, 0.f, dximg, K);
          } else {
            math::GemmEx(Trans::kNo, Trans::kNo, P, K, Mg, 1.f, dyimg + gr * Mg, M, wg, K, 0.f,
                         col_grad_data, K);
            Col2ImNHWC(s, C, gr * Cg, Cg, col_grad_data, dximg);
          }
        }
      }
      if (db) {
        for (int64_t p = 0; p < P; ++p) math::Axpy(M, 1.f, dyimg + p * M, db);
      }
    }
  }
  if (dw_reordered) FilterToItsOrder(cp_, W.dims(), dw, dww.data());
  dww.Commit();
  if (dbw) dbw->Commit();
  if (dxw) dxw->Commit();
}

bool IsWinogradCandidate(const OperatorDef& def) {
  if (def.type() != "Conv" && def.type() != "Conv2D" && def.type() != "ConvFusion") return false;
  if (def.has_device_option() && def.device_option().device_type() != 0) return false;
  const ConvPoolArgs a = ParseConvPoolArgs(def, ConvPoolKind::kConv);
  if (a.num_spatial_dims() != 2 || a.group != 1) return false;
  for (int d = 0; d < 2; ++d) {
    if (a.kernel[d] != 3 || a.stride[d] != 1 || a.dilation[d] != 1) return false;
  }
  return true;
}

namespace {

// Caffe2's rule: 3-input forward -> (dfilter, dbias[, dX]); 2-input -> (dfilter[, dX]) with
// no_bias=1; dX is skipped when the forward op has no_gradient_to_input=1.
class GetConvGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    HALFCAF_ENFORCE(NumInputs() == 2 || NumInputs() == 3, def_.type(), " takes 2 or 3 inputs, got ",
                    NumInputs());
    const bool to_input = args().GetSingleArgument<int>("no_gradient_to_input", 0) == 0;
    std::vector<std::string> outputs{GI(1)};
    std::vector<Argument> extra;
    if (NumInputs() == 3) {
      outputs.push_back(GI(2));
    } else {
      extra.push_back(MakeArgument("no_bias", 1));
    }
    if (to_input) outputs.push_back(GI(0));
    return SingleGradientDef(def_.type() + "Gradient", {I(0), I(1), GO(0)}, outputs, extra);
  }
};

std::vector<TensorShape> ConvGradientShapeInference(const OperatorDef& def,
                                                    const std::vector<TensorShape>& in) {
  ArgumentHelper args(def);
  const bool no_bias = args.GetSingleArgument<int>("no_bias", 0) != 0;
  const int64_t M = in.at(1).dims.empty() ? 0 : in[1].dims[0];
  std::vector<TensorShape> out{TensorShape{in[1].dims, in[1].dtype}};
  if (!no_bias) out.push_back(TensorShape{{M}, in[1].dtype});
  if (def.output_size() > static_cast<int>(out.size())) {
    out.push_back(TensorShape{in[0].dims, in[0].dtype});
  }
  return out;
}

OpCost ConvGradientCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  // dfilter and dX each cost one forward convolution.
  std::vector<TensorShape> fwd{in.at(0), in.at(1)};
  OpCost c = ConvCost(def, fwd);
  const ArgumentHelper args(def);
  const bool no_bias = args.GetSingleArgument<int>("no_bias", 0) != 0;
  const bool dx = def.output_size() == (no_bias ? 2 : 3);
  // With no_weight_gradient (and dX) only dX is made, as the DNNL op does.
  const bool dw = !(dx && args.GetSingleArgument<int>("no_weight_gradient", 0) != 0);
  c.flops *= (dx ? 1 : 0) + (dw ? 1 : 0);
  const double item = DataTypeSize(in[0].dtype);
  c.bytes_read += static_cast<double>(in.at(2).numel()) * item;
  c.bytes_written = (static_cast<double>(dw ? in[1].numel() : 0) + (dx ? in[0].numel() : 0)) * item;
  return c;
}

const char* kConvDoc =
    "Convolution over 1, 2, 3 or more spatial dims (the length of 'kernels'; the kernel and "
    "kernel_h/kernel_w forms mean 2-D): Y = X (*) filter + bias, with groups, strides, "
    "dilations and asymmetric pads. NCHW: X (N, C, spatial...), filter (M, C/group, kernel...), "
    "Y (N, M, out...). NHWC (2-D only): X (N, H, W, C), filter (M, kH, kW, C/group), Y (N, outH, "
    "outW, M); unlike Caffe2's CPU op, groups are supported in NHWC too. The bias input is "
    "optional. Output sizes follow legacy_pad (default: floor((in + pad_head + pad_tail - dk) / "
    "stride) + 1 with dk = dilation * (k - 1) + 1). Conv1D, Conv2D and Conv3D are aliases of "
    "Conv: they take the same arguments and do not check the kernel's rank. Float and float16 "
    "(float accumulation; output dtype of X). The default CPU implementation is im2col + GEMM "
    "per image and group; builds with oneDNN prefer engine DNNL (oneDNN's convolution, float "
    "only; other cases use the default).";

OpSchema& DescribeConv(OpSchema& s) {
  return s.NumInputs(2, 3)
      .NumOutputs(1)
      .TensorInferenceFunction(ConvShapeInference)
      .CostInferenceFunction(ConvCost)
      .SetDoc(kConvDoc)
      .Arg("kernels / kernel / kernel_h, kernel_w",
           "ints, required: kernel size per spatial dim (kernels sets the number of dims)")
      .Arg("strides / stride / stride_h, stride_w", "ints, default 1")
      .Arg("pads / pad / pad_t, pad_l, pad_b, pad_r",
           "ints, default 0; pads lists all head pads then all tail pads")
      .Arg("dilation / dilations / dilation_h, dilation_w",
           "ints, default 1 (must be 1 when group != 1)")
      .Arg("legacy_pad", "int, default 0: 0 NOTSET, 1 VALID, 2 SAME, 3 CAFFE_LEGACY_POOLING")
      .Arg("group", "int, default 1: C and M must be divisible by it")
      .Arg("order", "string, default \"NCHW\": \"NCHW\" or \"NHWC\" (any case)")
      .Arg("filter_order",
           "string, default: order (halfcaf's, CPU): the filter's layout, \"NCHW\" (M, C/group, "
           "kH, kW) or \"NHWC\" (M, kH, kW, C/group), 2-D; dfilter of ConvGradient is in it too")
      .Arg("no_gradient_to_input", "int, default 0: the gradient op does not compute dX")
      .Arg("conv_algorithm",
           "int, default 0 (Caffe2's ideep argument): 1 = Winograd on engine DNNL (float32, "
           "3 x 3, stride 1, outputs of 14 x 14 and more, where oneDNN has the kernels; elsewhere "
           "the direct algorithm); other engines ignore it")
      .Input(0, "X", "input images")
      .Input(1, "filter", "weights, (M, C/group, kernel...) or NHWC (M, kH, kW, C/group)")
      .Input(2, "bias", "optional, (M)")
      .Output(0, "Y", "output images with M channels");
}

OpSchema& DescribeConvGradient(OpSchema& s) {
  return s.NumInputs(3)
      .NumOutputs(1, 3)
      .TensorInferenceFunction(ConvGradientShapeInference)
      .CostInferenceFunction(ConvGradientCost)
      .SetDoc(
          "Gradient of Conv. Inputs (X, filter, dY). Outputs (dfilter, dbias[, dX]), or "
          "with no_bias=1 (dfilter[, dX]); dX is computed only when its slot is present. "
          "Takes the forward op's arguments.")
      .Arg("no_bias", "int, default 0: the forward op had no bias (no dbias output)")
      .Arg("no_weight_gradient",
           "int, default 0 (halfcaf's): only dX is wanted (a frozen layer's gradient, which "
           "the backward pass marks): the DNNL op then leaves dfilter and dbias unwritten; the "
           "other implementations compute them anyway")
      .Input(0, "X", "forward input")
      .Input(1, "filter", "forward filter")
      .Input(2, "dY", "gradient of Y")
      .Output(0, "dfilter", "gradient of the filter")
      .Output(1, "dbias", "gradient of the bias (or dX with no_bias=1)")
      .Output(2, "dX", "gradient of X (optional)");
}

}  // namespace

REGISTER_CPU_OPERATOR(Conv, ConvOp);
REGISTER_CPU_OPERATOR(Conv1D, ConvOp);
REGISTER_CPU_OPERATOR(Conv2D, ConvOp);
REGISTER_CPU_OPERATOR(Conv3D, ConvOp);
REGISTER_CPU_OPERATOR(ConvGradient, ConvGradientOp);
REGISTER_CPU_OPERATOR(Conv1DGradient, ConvGradientOp);
REGISTER_CPU_OPERATOR(Conv2DGradient, ConvGradientOp);
REGISTER_CPU_OPERATOR(Conv3DGradient, ConvGradientOp);
REGISTER_GRADIENT(Conv, GetConvGradient);
REGISTER_GRADIENT(Conv1D, GetConvGradient);
REGISTER_GRADIENT(Conv2D, GetConvGradient);
REGISTER_GRADIENT(Conv3D, GetConvGradient);

#define HALFCAF_CONV_SCHEMA(type, describe)           \
  [[maybe_unused]] static OpSchema& g_schema_##type = \
      describe(OpSchemaRegistry::NewSchema(#type, __FILE__, __LINE__))
HALFCAF_CONV_SCHEMA(Conv, DescribeConv);
HALFCAF_CONV_SCHEMA(Conv1D, DescribeConv);
HALFCAF_CONV_SCHEMA(Conv2D, DescribeConv);
HALFCAF_CONV_SCHEMA(Conv3D, DescribeConv);
HALFCAF_CONV_SCHEMA(ConvGradient, DescribeConvGradient);
HALFCAF_CONV_SCHEMA(Conv1DGradient, DescribeConvGradient);
HALFCAF_CONV_SCHEMA(Conv2DGradient, DescribeConvGradient);
HALFCAF_CONV_SCHEMA(Conv3DGradient, DescribeConvGradient);
#undef HALFCAF_CONV_SCHEMA

}  // namespace halfcaf
