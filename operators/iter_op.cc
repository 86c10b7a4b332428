#include "operators/iter_op.h"

#include <limits>

#include "core/gradient.h"

namespace halfcaf {

void IterOp::RunOnDevice() {
  // The counter always lives on the CPU, whatever device the op names.
  Blob* blob = OutputBlob(0);
  HALFCAF_ENFORCE(blob->empty() || blob->IsTensor(), "the iteration counter '", output_name(0),
                  "' holds a non-tensor object");
  HALFCAF_ENFORCE(blob->empty() || blob->GetTensor().device().type == DeviceType::CPU,
                  "the iteration counter '", output_name(0), "' must be a CPU tensor, got ",
                  blob->GetTensor().DebugString());
  Tensor* counter = blob->GetMutableTensor(Device());
  if (counter->dtype() == DataType::UNDEFINED) {
    counter->Resize({1});
    counter->mutable_data<int64_t>()[0] = 0;
  }
  HALFCAF_ENFORCE(counter->dtype() == DataType::INT64 && counter->numel() == 1,
                  "the iteration counter '", output_name(0),
                  "' must be an int64 tensor with one element, got ", counter->DebugString());
  int64_t* value = counter->mutable_data<int64_t>();
  HALFCAF_ENFORCE(*value < std::numeric_limits<int64_t>::max(), "the iteration counter '",
                  output_name(0), "' would overflow");
  ++*value;
}

REGISTER_CPU_OPERATOR(Iter, IterOp);
NO_GRADIENT(Iter);

OPERATOR_SCHEMA(Iter)
    .NumInputs(0, 1)
    .NumOutputs(1)
    .EnforceInplace({{0, 0}})
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>&) {
      return std::vector<TensorShape>{TensorShape{{1}, DataType::INT64}};
    })
    .SetDoc("Training-loop counter: adds 1 to an int64 CPU tensor of one element, in place. A "
            "counter blob that holds no data yet starts from 0 (so it holds 1 after the first "
            "run). The form without an input is deprecated in Caffe2 and kept for old nets.")
    .Input(0, "counter", "optional: the counter blob, which must also be the output")
    .Output(0, "counter", "int64 tensor [1], incremented by one");

}  // namespace halfcaf
