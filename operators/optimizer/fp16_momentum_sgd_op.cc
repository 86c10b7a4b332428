#include "operators/optimizer/fp16_momentum_sgd_op.h"

#include "core/float_io.h"
#include "core/gradient.h"
#include "operators/cpu_parallel.h"

namespace halfcaf {

FusedMomentumArgs::FusedMomentumArgs(const OperatorBase& op)
    : MomentumUpdateArgs(op), fp32_update(op.GetSingleArgument<bool>("fp32_update", false)) {}

DataType FusedMomentumDataType(const std::string& op_type) {
  return op_type == "FP16MomentumSGDUpdate" ? DataType::FLOAT16 : DataType::FLOAT;
}

void CheckFusedMomentumInputs(const std::string& op_type, DataType dtype, const Tensor& grad,
                              const Tensor& moment, const Tensor& lr, const Tensor& param) {
  const char* names[] = {"grad", "moment", "param"};
  const Tensor* tensors[] = {&grad, &moment, &param};
  const int index[] = {0, 1, 3};
  for (int k = 0; k < 3; ++k) {
    HALFCAF_ENFORCE(tensors[k]->dtype() == dtype, op_type, " input ", index[k], " (", names[k],
                    ") must be a ", DataTypeName(dtype), " tensor, got ",
                    tensors[k]->DebugString(),
                    dtype == DataType::FLOAT16 ? " (FP32MomentumSGDUpdate takes float tensors)"
                                               : " (FP16MomentumSGDUpdate takes float16 tensors)");
  }
  HALFCAF_ENFORCE(lr.dtype() == DataType::FLOAT && lr.numel() == 1, op_type,
                  " input 2 (lr) must be a float tensor with one element, got ", lr.DebugString());
  HALFCAF_ENFORCE(grad.dims() == moment.dims() && grad.dims() == param.dims(), op_type,
                  ": grad ", DimsString(grad.dims()), ", moment ", DimsString(moment.dims()),
                  " and param ", DimsString(param.dims()), " must have the same shape");
}

void FusedMomentumStepFloat(int64_t n, const float* g, const float* m, const float* p, float lr,
                            const MomentumUpdateArgs& args, float* g_out, float* m_out,
                            float* p_out) {
  const float mu = args.momentum, wd = args.weight_decay, one_mu = 1.f + args.momentum;
  const bool nesterov = args.nesterov;
  // Each element is read before any output is written, so in-place pairs are safe.
  ParallelFor(n, 6.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float pi = p[i], mi = m[i];
      const float gi = g[i] + wd * pi;
      float step;
      if (nesterov) {
        const float m_new = mu * mi + lr * gi;
        step = one_mu * m_new - mu * mi;
        m_out[i] = m_new;
      } else {
        step = lr * gi + mu * mi;
        m_out[i] = step;
      }
      g_out[i] = step;
      p_out[i] = pi - step;
    }
  });
}

namespace {

// float16 arithmetic emulated in float: the float result of one operation on float16 values,
// rounded to float16 (see the header for why this is the IEEE float16 result).
inline float R(float x) { return static_cast<float>(Half(x)); }

}  // namespace

void FusedMomentumStepHalfMath(int64_t n, const Half* g, const Half* m, const Half* p, float lr,
                               const MomentumUpdateArgs& args, Half* g_out, Half* m_out,
                               Half* p_out) {
  const float lr_h = R(lr), mu = R(args.momentum), wd = R(args.weight_decay);
  const float one_mu = R(1.f + mu);
  const bool nesterov = args.nesterov;
  ParallelFor(n, 20.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float pi = p[i], mi = m[i];
      const float gi = R(static_cast<float>(g[i]) + R(wd * pi));
      float step, m_new;
      if (nesterov) {
        m_new = R(R(mu * mi) + R(lr_h * gi));
        step = R(R(one_mu * m_new) - R(mu * mi));
      } else {
        step = m_new = R(R(lr_h * gi) + R(mu * mi));
      }
      m_out[i] = Half(m_new);  // exact: already a float16 value
      g_out[i] = Half(step);   // exact
      p_out[i] = Half(pi - step);
    }
  });
}

FusedMomentumSGDUpdateOp::FusedMomentumSGDUpdateOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), args_(*this), dtype_(FusedMomentumDataType(def.type())) {}

void FusedMomentumSGDUpdateOp::RunOnDevice() {
  const Tensor& G = Input(0);
  const Tensor& M = Input(1);
  const Tensor& LR = Input(2);
  const Tensor& P = Input(3);
  CheckFusedMomentumInputs(type(), dtype_, G, M, LR, P);
  const float lr = LR.data<float>()[0];
  const std::vector<int64_t> dims = G.dims();
  const int64_t n = G.numel();
  if (dtype_ == DataType::FLOAT) {
    const float* g = G.data<float>();
    const float* m = M.data<float>();
    const float* p = P.data<float>();
    FusedMomentumStepFloat(n, g, m, p, lr, args_, Output(0, dims)->mutable_data<float>(),
                           Output(1, dims)->mutable_data<float>(),
                           Output(2, dims)->mutable_data<float>());
  } else if (!args_.fp32_update) {
    const Half* g = G.data<Half>();
    const Half* m = M.data<Half>();
    const Half* p = P.data<Half>();
    FusedMomentumStepHalfMath(n, g, m, p, lr, args_, Output(0, dims)->mutable_data<Half>(),
                              Output(1, dims)->mutable_data<Half>(),
                              Output(2, dims)->mutable_data<Half>());
  } else {
    // Float copies of the inputs are taken before any output is written (in-place safe).
    const float* g = ReadAsFloat(G, &g_);
    const float* m = ReadAsFloat(M, &m_);
    const float* p = ReadAsFloat(P, &p_);
    FloatWriter g_out(Output(0, dims), DataType::FLOAT16, &go_);
    FloatWriter m_out(Output(1, dims), DataType::FLOAT16, &mo_);
    FloatWriter p_out(Output(2, dims), DataType::FLOAT16, &po_);
    FusedMomentumStepFloat(n, g, m, p, lr, args_, g_out.data(), m_out.data(), p_out.data());
    g_out.Commit();
    m_out.Commit();
    p_out.Commit();
  }
}

namespace {

std::vector<TensorShape> FusedMomentumShapes(const OperatorDef& def,
                                             const std::vector<TensorShape>& in) {
  TensorShape s = in[0];
  s.dtype = FusedMomentumDataType(def.type());
  return {s, s, s};
}

OpCost FusedMomentumCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  const double n = static_cast<double>(in[0].numel());
  const double item = DataTypeSize(FusedMomentumDataType(def.type()));
  OpCost c;
  c.flops = 7 * n;  // weight decay (2), momentum (3), parameter (1), nesterov's extra ignored
  c.bytes_read = 3 * n * item + 4;
  c.bytes_written = 3 * n * item;
  return c;
}

const char kRule[] =
    "Per element, with g1 = grad + weight_decay*param: plain: v = lr*g1 + momentum*moment, "
    "moment_out = grad_out = v, param_out = param - v. Nesterov: moment_out = momentum*moment + "
    "lr*g1, grad_out = (1 + momentum)*moment_out - momentum*moment, param_out = param - "
    "grad_out. lr is positive by convention (the step is subtracted); it is not checked, since "
    "on CUDA it lives on the device. Usually run in place on grad, moment and param. Caffe2 "
    "has this op on CUDA only; halfcaf also runs it on the CPU (the reference).";

}  // namespace

REGISTER_CPU_OPERATOR(FP16MomentumSGDUpdate, FusedMomentumSGDUpdateOp);
REGISTER_CPU_OPERATOR(FP32MomentumSGDUpdate, FusedMomentumSGDUpdateOp);
SHOULD_NOT_DO_GRADIENT(FP16MomentumSGDUpdate);
SHOULD_NOT_DO_GRADIENT(FP32MomentumSGDUpdate);

OPERATOR_SCHEMA(FP16MomentumSGDUpdate)
    .NumInputs(4)
    .NumOutputs(3)
    .AllowInplace({{0, 0}, {1, 1}, {3, 2}})
    .TensorInferenceFunction(FusedMomentumShapes)
    .CostInferenceFunction(FusedMomentumCost)
    .SetDoc(std::string("Momentum SGD step with weight decay on float16 grad, moment and param "
                        "(lr float). ") +
            kRule +
            " With fp32_update=1 the step is computed in float and each output is rounded "
            "once to float16. With fp32_update=0 (the default) it uses float16 arithmetic: lr, "
            "momentum, weight_decay and 1 + momentum are rounded to float16, and every "
            "product, sum and difference (weight_decay*param, g1, lr*g1, momentum*moment, v or "
            "moment_out, (1 + momentum)*moment_out, grad_out, param_out) is rounded to float16 "
            "(each equals the IEEE float16 operation; no fused multiply-add), identically on "
            "CPU and CUDA.")
    .Arg("momentum", "float, default 0: momentum coefficient")
    .Arg("nesterov", "int, default 0: use Nesterov's accelerated gradient")
    .Arg("weight_decay", "float, default 0: L2 coefficient added to the gradient")
    .Arg("fp32_update", "int, default 0: 1 computes the step in float (more accurate)")
    .Input(0, "grad", "gradient, float16")
    .Input(1, "moment", "momentum history, float16, grad's shape")
    .Input(2, "lr", "float tensor with one element: the learning rate")
    .Input(3, "param", "parameter, float16, grad's shape")
    .Output(0, "grad_out", "float16: the applied step (may be grad)")
    .Output(1, "moment_out", "float16: new momentum history (may be moment)")
    .Output(2, "param_out", "float16: updated parameter (may be param)");

OPERATOR_SCHEMA(FP32MomentumSGDUpdate)
    .NumInputs(4)
    .NumOutputs(3)
    .AllowInplace({{0, 0}, {1, 1}, {3, 2}})
    .TensorInferenceFunction(FusedMomentumShapes)
    .CostInferenceFunction(FusedMomentumCost)
    .SetDoc(std::string("Momentum SGD step with weight decay on float tensors, in float. ") +
            kRule + " Same results as MomentumSGDUpdate when weight_decay is 0.")
    .Arg("momentum", "float, default 0: momentum coefficient")
    .Arg("nesterov", "int, default 0: use Nesterov's accelerated gradient")
    .Arg("weight_decay", "float, default 0: L2 coefficient added to the gradient")
    .Input(0, "grad", "gradient, float")
    .Input(1, "moment", "momentum history, float, grad's shape")
    .Input(2, "lr", "float tensor with one element: the learning rate")
    .Input(3, "param", "parameter, float, grad's shape")
    .Output(0, "grad_out", "float: the applied step (may be grad)")
    .Output(1, "moment_out", "float: new momentum history (may be moment)")
    .Output(2, "param_out", "float: updated parameter (may be param)");

}  // namespace halfcaf
