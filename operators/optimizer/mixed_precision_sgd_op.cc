// MixedPrecisionMomentumSGDUpdate (halfcaf extension): the fused update of the mixed-precision
// recipe, one per parameter. With g the gradient (float16 or float) divided by loss_scale:
//   g' = g / loss_scale + weight_decay * master
//   plain:    v = lr * g' + momentum * m;  m = v;  master -= v
//   nesterov: m_new = momentum * m + lr * g';  master -= (1 + momentum) * m_new - momentum * m
// then the float16 (or, with copy_dtype bfloat16, bfloat16) copy is refreshed from the new master
// (when a third output is given).
// When found_inf is given and non-zero, nothing changes (the step is skipped).
// Inputs:  grad, moment (float), lr (1-element float), master (float),
//          [loss_scale (1-element float), [found_inf (1-element float)]]
// Outputs: moment (in place), master (in place), [copy (copy_dtype, shape of master)]
#include "operators/optimizer/mixed_precision_sgd_op.h"

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/operator.h"
#include "operators/cpu_parallel.h"

namespace halfcaf {

MomentumUpdateArgs::MomentumUpdateArgs(const OperatorBase& op)
    : momentum(op.GetSingleArgument<float>("momentum", 0.f)),
      weight_decay(op.GetSingleArgument<float>("weight_decay", 0.f)),
      nesterov(op.GetSingleArgument<bool>("nesterov", false)),
      copy_dtype(DataType::FLOAT16) {
  if (op.HasSingleArgumentOfType<std::string>("copy_dtype")) {
    copy_dtype = DataTypeFromName(op.GetSingleArgument<std::string>("copy_dtype", "float16"));
  } else if (op.HasArgument("copy_dtype")) {
    copy_dtype = DataTypeFromInt(op.GetSingleArgument<int64_t>("copy_dtype", 0));
  }
  HALFCAF_ENFORCE(copy_dtype == DataType::FLOAT16 || copy_dtype == DataType::BFLOAT16,
                  "copy_dtype must be float16 or bfloat16, got ", DataTypeName(copy_dtype));
}

void CheckMixedPrecisionUpdateInputs(const Tensor& grad, const Tensor& moment,
                                     const Tensor& master) {
  EnforceFloatType(grad, "grad", true);  // bfloat16 on CUDA too
  HALFCAF_ENFORCE(master.dtype() == DataType::FLOAT && moment.dtype() == DataType::FLOAT,
                  "master parameter and moment must be float, got ", master.DebugString(),
                  " and ", moment.DebugString());
  HALFCAF_ENFORCE(grad.dims() == master.dims() && moment.dims() == master.dims(), "grad ",
                  DimsString(grad.dims()), ", moment ", DimsString(moment.dims()),
                  " and parameter ", DimsString(master.dims()), " must have the same shape");
}

LowPrecisionCopy::LowPrecisionCopy(DataType type, Tensor* copy) : type_(type) {
  if (copy == nullptr) return;
  data_ = type == DataType::FLOAT16 ? static_cast<void*>(copy->mutable_data<Half>())
                                    : static_cast<void*>(copy->mutable_data<BFloat16>());
}

void LowPrecisionCopy::Write(const float* master, int64_t off, int64_t n) const {
  if (data_ == nullptr) return;
  if (type_ == DataType::FLOAT16) {
    FloatToHalfArray(master + off, static_cast<Half*>(data_) + off, static_cast<size_t>(n));
  } else {
    FloatToBFloat16Array(master + off, static_cast<BFloat16*>(data_) + off, static_cast<size_t>(n));
  }
}

float UpdateScalar(const Tensor& t, const char* what) {
  HALFCAF_ENFORCE(t.numel() == 1 && t.dtype() == DataType::FLOAT, what,
                  " must be a 1-element float tensor, got ", t.DebugString());
  return t.data<float>()[0];
}

namespace {

class MixedPrecisionMomentumSGDUpdateOp final : public Operator<CPUContext> {
 public:
  MixedPrecisionMomentumSGDUpdateOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), args_(*this) {}

  void RunOnDevice() override {
    const Tensor& G = Input(0);
    const Tensor& M = Input(1);
    const Tensor& P = Input(3);
    const float lr = UpdateScalar(Input(2), "lr");
    const float scale = InputSize() > 4 ? UpdateScalar(Input(4), "loss_scale") : 1.f;
    if (InputSize() > 5 && UpdateScalar(Input(5), "found_inf") != 0.f) return;  // skipped step
    CheckMixedPrecisionUpdateInputs(G, M, P);
    HALFCAF_ENFORCE(scale > 0.f, "loss_scale must be positive, got ", scale);
    const FloatIn g(G);
    float* m = Output(0, M.dims())->mutable_data<float>();
    float* p = Output(1, P.dims())->mutable_data<float>();
    const float inv = 1.f / scale;
    const float momentum = args_.momentum, weight_decay = args_.weight_decay;
    const bool nesterov = args_.nesterov;
    const int64_t n = P.numel();
    const LowPrecisionCopy copy(args_.copy_dtype, OutputSize() > 2 ? Output(2, P.dims()) : nullptr);
    ForEachPiece(n, 4.0, [&](int64_t off, int64_t len) {
      const float* gp = g.Read(off, len, 0);  // 16-bit gradients converted a piece at a time
      for (int64_t j = 0; j < len; ++j) {
        const int64_t i = off + j;
        const float gi = gp[j] * inv + weight_decay * p[i];
        if (nesterov) {
          const float m_old = m[i];
          const float m_new = momentum * m_old + lr * gi;
          m[i] = m_new;
          p[i] -= (1.f + momentum) * m_new - momentum * m_old;
        } else {
          const float v = lr * gi + momentum * m[i];
          m[i] = v;
          p[i] -= v;
        }
      }
      copy.Write(p, off, len);
    });
  }

 private:
  const MomentumUpdateArgs args_;
};

}  // namespace

REGISTER_CPU_OPERATOR(MixedPrecisionMomentumSGDUpdate, MixedPrecisionMomentumSGDUpdateOp);
SHOULD_NOT_DO_GRADIENT(MixedPrecisionMomentumSGDUpdate);

OPERATOR_SCHEMA(MixedPrecisionMomentumSGDUpdate)
    .NumInputs(4, 6)
    .NumOutputs(2, 3)
    .EnforceInplace({{1, 0}, {3, 1}})
    .CostInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      OpCost c;
      c.flops = 6.0 * in.at(3).numel();
      c.bytes_read = in[3].numel() * (8.0 + DataTypeSize(in[0].dtype));
      c.bytes_written = in[3].numel() * 10.0;
      return c;
    })
    .SetDoc("halfcaf extension: fused mixed-precision momentum SGD step on an FP32 master "
            "parameter. Unscales the (float16, bfloat16 or float) gradient by loss_scale, adds "
            "weight_decay * master, applies momentum (or Nesterov momentum) with learning rate "
            "lr (positive; the step is subtracted), and writes the float16 (or bfloat16) copy of "
            "the new master. A non-zero found_inf skips the step entirely.")
    .Arg("momentum", "float, default 0")
    .Arg("nesterov", "int, default 0")
    .Arg("weight_decay", "float, default 0")
    .Arg("copy_dtype", "type of the copy output: float16 (default) or bfloat16 (CPU only)")
    .Input(0, "grad", "gradient (float16, bfloat16 or float), scaled by loss_scale")
    .Input(1, "moment", "float momentum buffer")
    .Input(2, "lr", "1-element float learning rate")
    .Input(3, "master", "float master parameter")
    .Input(4, "loss_scale", "optional 1-element float (default 1)")
    .Input(5, "found_inf", "optional 1-element float from CheckFinite")
    .Output(0, "moment", "same blob as input 1")
    .Output(1, "master", "same blob as input 3")
    .Output(2, "copy", "optional float16 (copy_dtype) copy of the new master");

}  // namespace halfcaf
