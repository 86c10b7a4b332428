#include "operators/optimizer/fused_update.h"

#include "operators/optimizer/loss_scale_op.h"

namespace halfcaf {

void CheckFusedUpdateInputs(const OperatorBase& op, int states,
                            const std::vector<const Tensor*>& in) {
  const int lr_index = FusedLrIndex(states), p_index = lr_index + 1;
  HALFCAF_ENFORCE(static_cast<int>(in.size()) == op.InputSize() && op.InputSize() > p_index,
                  "a fused update with ", states, " states needs at least ", p_index + 1,
                  " inputs");
  for (int s = 1; s <= states; ++s) CheckMixedPrecisionUpdateInputs(*in[0], *in[s], *in[p_index]);
  EnforceFloatScalar(*in[lr_index], "lr");
  if (op.InputSize() > p_index + 1) EnforceFloatScalar(*in[p_index + 1], "loss_scale");
  if (op.InputSize() > p_index + 2) EnforceFloatScalar(*in[p_index + 2], "found_inf");
}

OpSchema& FusedUpdateSchema(OpSchema& schema,
                            const std::vector<std::pair<std::string, std::string>>& states) {
  const int s = static_cast<int>(states.size());
  const int lr_index = FusedLrIndex(s), p_index = lr_index + 1;
  std::set<std::pair<int, int>> inplace{{p_index, s}};
  for (int i = 0; i < s; ++i) inplace.insert({1 + i, i});
  schema.NumInputs(p_index + 1, p_index + 3)
      .NumOutputs(s + 1, s + 2)
      .EnforceInplace(inplace)
      .CostInferenceFunction([s, p_index](const OperatorDef&, const std::vector<TensorShape>& in) {
        OpCost c;
        const double n = static_cast<double>(in.at(p_index).numel());
        c.flops = 10.0 * n;
        c.bytes_read = n * (4.0 * (s + 1) + DataTypeSize(in.at(0).dtype));
        c.bytes_written = n * (4.0 * (s + 1) + 2.0);
        return c;
      })
      .Arg("weight_decay", "float, default 0: added to the gradient times the master (L2)")
      .Arg("copy_dtype", "type of the copy output: float16 (default) or bfloat16")
      .Input(0, "grad", "gradient (float16, bfloat16 or float), scaled by loss_scale");
  for (int i = 0; i < s; ++i) {
    schema.Input(1 + i, states[i].first, states[i].second)
        .Output(i, states[i].first, "same blob as input " + std::to_string(1 + i));
  }
  return schema.Input(lr_index, "lr", "1-element float learning rate (positive; subtracted)")
      .Input(p_index, "master", "float master parameter")
      .Input(p_index + 1, "loss_scale", "optional 1-element float (default 1)")
      .Input(p_index + 2, "found_inf", "optional 1-element float from CheckFinite: skip when set")
      .Output(s, "master", "same blob as input " + std::to_string(p_index))
      .Output(s + 1, "copy", "optional float16 (copy_dtype) copy of the new master");
}

}  // namespace halfcaf
