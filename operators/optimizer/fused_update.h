// What the adaptive fused mixed-precision updates share (MixedPrecisionAdagradUpdate,
// MixedPrecisionAdadeltaUpdate, MixedPrecisionRmsPropUpdate; the rules are in
// core/adaptive_update_rules.h). One layout, with S (1 or 2) float state tensors:
//   inputs  grad (float, float16 or bfloat16, scaled by loss_scale), state_0 [, state_1],
//           lr (1-element float, positive), master (float), [loss_scale, [found_inf]]
//   outputs state_0 [, state_1], master (in place), [copy (float16 or bfloat16, copy_dtype)]
// and one step: g' = grad / loss_scale + weight_decay master; master -= lr rule(g', states); the
// copy refreshed from the new master; nothing changes when found_inf is non-zero.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/float_io.h"
#include "core/op_schema.h"
#include "core/operator.h"
#include "operators/cpu_parallel.h"
#include "operators/optimizer/mixed_precision_sgd_op.h"

namespace halfcaf {

// The index of lr in a fused update with `states` states (master follows it).
inline int FusedLrIndex(int states) { return 1 + states; }

// Checks the layout's inputs (the CPU and CUDA operators alike): grad, states and master of one
// shape, lr (and loss_scale, found_inf when given) 1-element float tensors.
void CheckFusedUpdateInputs(const OperatorBase& op, int states,
                            const std::vector<const Tensor*>& in);

// A fused update's schema, to pass to FusedUpdateSchema.
#define NEW_FUSED_UPDATE_SCHEMA(type) \
  ::halfcaf::OpSchemaRegistry::NewSchema(#type, __FILE__, __LINE__)

// The schema's counts, in-place pairs, cost, inputs, outputs and the common arguments
// (weight_decay, copy_dtype) of a fused update with the named states.
OpSchema& FusedUpdateSchema(OpSchema& schema,
                            const std::vector<std::pair<std::string, std::string>>& states);

// One fused step on the CPU with `rule` (called as rule(g', state_0, state_1); state_1 is a dummy
// when states == 1).
template <class Rule>
void RunFusedUpdate(Operator<CPUContext>& op, int states, const Rule& rule,
                    const MomentumUpdateArgs& args) {
  const int lr_index = FusedLrIndex(states), p_index = lr_index + 1;
  std::vector<const Tensor*> in;
  for (int i = 0; i < op.InputSize(); ++i) in.push_back(&op.Input(i));
  CheckFusedUpdateInputs(op, states, in);
  const float lr = in[lr_index]->data<float>()[0];
  const float scale = op.InputSize() > p_index + 1 ? in[p_index + 1]->data<float>()[0] : 1.f;
  if (op.InputSize() > p_index + 2 && in[p_index + 2]->data<float>()[0] != 0.f) return;  // skip
  HALFCAF_ENFORCE(scale > 0.f, "loss_scale must be positive, got ", scale);
  const Tensor& P = *in[p_index];
  const FloatIn g(*in[0]);
  float* s0 = op.Output(0, P.dims())->mutable_data<float>();
  float* s1 = states > 1 ? op.Output(1, P.dims())->mutable_data<float>() : nullptr;
  float* p = op.Output(states, P.dims())->mutable_data<float>();
  const float inv = 1.f / scale, wd = args.weight_decay;
  const int64_t n = P.numel();
  const LowPrecisionCopy copy(
      args.copy_dtype, op.OutputSize() > states + 1 ? op.Output(states + 1, P.dims()) : nullptr);
  ForEachPiece(n, 12.0, [&](int64_t off, int64_t len) {
    const float* gp = g.Read(off, len, 0);
    float unused = 0.f;
    for (int64_t j = 0; j < len; ++j) {
      const int64_t i = off + j;
      const float gi = gp[j] * inv + wd * p[i];
      p[i] -= lr * rule(gi, s0[i], s1 ? s1[i] : unused);
    }
    copy.Write(p, off, len);
  });
}

}  // namespace halfcaf
