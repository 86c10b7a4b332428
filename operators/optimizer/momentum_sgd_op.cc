#include "operators/optimizer/momentum_sgd_op.h"

#include "core/gradient.h"

namespace halfcaf {

namespace {

void EnforceFloatOnly(const Tensor& t, const char* what) {
  HALFCAF_ENFORCE(t.dtype() == DataType::FLOAT, what,
                  " must be a float tensor (the momentum SGD ops take float only; keep FP32 "
                  "master copies for float16 models), got ",
                  t.DebugString());
}

}  // namespace

MomentumSGDOp::MomentumSGDOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      momentum_(GetSingleArgument<float>("momentum", 0.f)),
      nesterov_(GetSingleArgument<bool>("nesterov", false)),
      has_param_(def.type() == "MomentumSGDUpdate") {}

void CheckMomentumSGDInputs(const Tensor& G, const Tensor& M, const Tensor& LR, const Tensor* P) {
  EnforceFloatOnly(G, "grad");
  EnforceFloatOnly(M, "moment");
  EnforceFloatOnly(LR, "lr");
  HALFCAF_ENFORCE(LR.numel() == 1, "lr must have exactly one element, got ", LR.DebugString());
  HALFCAF_ENFORCE(G.dims() == M.dims(), "grad and moment must have the same shape, got ",
                  DimsString(G.dims()), " and ", DimsString(M.dims()));
  if (P) {
    EnforceFloatOnly(*P, "param");
    HALFCAF_ENFORCE(P->dims() == G.dims(), "param and grad must have the same shape, got ",
                    DimsString(P->dims()), " and ", DimsString(G.dims()));
  }
}

void MomentumSGDOp::RunOnDevice() {
  const Tensor& G = Input(0);
  const Tensor& M = Input(1);
  const Tensor& LR = Input(2);
  const Tensor* P = has_param_ ? &Input(3) : nullptr;
  CheckMomentumSGDInputs(G, M, LR, P);
  const int64_t n = G.numel();
  const float lr = LR.data<float>()[0];
  const float mu = momentum_;
  // Each element is read before it is written, so any allowed in-place pairing is safe.
  const float* g = G.data<float>();
  const float* m = M.data<float>();
  const float* p = P ? P->data<float>() : nullptr;
  float* g_out = Output(0, G.dims())->mutable_data<float>();
  float* m_out = Output(1, G.dims())->mutable_data<float>();
  float* p_out = P ? Output(2, G.dims())->mutable_data<float>() : nullptr;
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i], mi = m[i];
    float step;
    if (nesterov_) {
      const float m_new = mu * mi + lr * gi;
      step = (1.f + mu) * m_new - mu * mi;
      m_out[i] = m_new;
    } else {
      step = lr * gi + mu * mi;
      m_out[i] = step;
    }
    g_out[i] = step;
    if (p_out) p_out[i] = p[i] - step;
  }
}

namespace {

std::vector<TensorShape> MomentumShapes(const OperatorDef& def,
                                        const std::vector<TensorShape>& in) {
  std::vector<TensorShape> out = {in[0], in[1]};
  if (def.type() == "MomentumSGDUpdate") out.push_back(in[3]);
  return out;
}

OpCost MomentumCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  const bool param = def.type() == "MomentumSGDUpdate";
  const double n = static_cast<double>(in[0].numel());
  const double item = DataTypeSize(in[0].dtype);
  OpCost c;
  c.flops = (param ? 5 : 4) * n;
  c.bytes_read = (param ? 3 : 2) * n * item;
  c.bytes_written = (param ? 3 : 2) * n * item;
  return c;
}

}  // namespace

REGISTER_CPU_OPERATOR(MomentumSGD, MomentumSGDOp);
REGISTER_CPU_OPERATOR(MomentumSGDUpdate, MomentumSGDOp);
SHOULD_NOT_DO_GRADIENT(MomentumSGD);
SHOULD_NOT_DO_GRADIENT(MomentumSGDUpdate);

OPERATOR_SCHEMA(MomentumSGD)
    .NumInputs(3)
    .NumOutputs(2)
    .AllowInplace({{0, 0}, {1, 1}})
    .TensorInferenceFunction(MomentumShapes)
    .CostInferenceFunction(MomentumCost)
    .SetDoc("Momentum SGD step without a parameter: computes the update and the new momentum. "
            "Plain: v = lr*g + momentum*m, moment_out = grad_out = v. Nesterov: moment_out = "
            "momentum*m + lr*g, grad_out = (1 + momentum)*moment_out - momentum*m. The caller "
            "subtracts grad_out from the parameter. Float tensors only.")
    .Arg("momentum", "float, default 0: momentum coefficient")
    .Arg("nesterov", "bool, default 0: use Nesterov's accelerated gradient")
    .Input(0, "grad", "gradient, float")
    .Input(1, "moment", "momentum history, float, grad's shape")
    .Input(2, "lr", "float tensor with one element: the (positive) learning rate")
    .Output(0, "grad_out", "the update to subtract from the parameter (may be grad)")
    .Output(1, "moment_out", "new momentum history (may be moment)");

OPERATOR_SCHEMA(MomentumSGDUpdate)
    .NumInputs(4)
    .NumOutputs(3)
    .AllowInplace({{0, 0}, {1, 1}, {3, 2}})
    .TensorInferenceFunction(MomentumShapes)
    .CostInferenceFunction(MomentumCost)
    .SetDoc("Momentum SGD step that also updates the parameter. Plain: v = lr*g + momentum*m, "
            "moment_out = grad_out = v, param_out = param - v. Nesterov: moment_out = "
            "momentum*m + lr*g, grad_out = (1 + momentum)*moment_out - momentum*m, param_out = "
            "param - grad_out. lr is positive (the update is subtracted). Float tensors only; "
            "usually run in place (grad, moment, param).")
    .Arg("momentum", "float, default 0: momentum coefficient")
    .Arg("nesterov", "bool, default 0: use Nesterov's accelerated gradient")
    .Input(0, "grad", "gradient, float")
    .Input(1, "moment", "momentum history, float, grad's shape")
    .Input(2, "lr", "float tensor with one element: the (positive) learning rate")
    .Input(3, "param", "parameter, float, grad's shape")
    .Output(0, "grad_out", "the applied update (may be grad)")
    .Output(1, "moment_out", "new momentum history (may be moment)")
    .Output(2, "param_out", "updated parameter (may be param)");

}  // namespace halfcaf
