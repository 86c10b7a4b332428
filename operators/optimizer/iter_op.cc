#include "operators/optimizer/iter_op.h"

#include <limits>

#include "core/gradient.h"

namespace halfcaf {

void IncrementIterationCounter(Blob* blob, const std::string& name) {
  // The counter always lives on the CPU, whatever device the op names.
  HALFCAF_ENFORCE(blob->empty() || blob->IsTensor(), "the iteration counter '", name,
                  "' holds a non-tensor object");
  HALFCAF_ENFORCE(blob->empty() || blob->GetTensor().device().type == DeviceType::CPU,
                  "the iteration counter '", name, "' must be a CPU tensor, got ",
                  blob->GetTensor().DebugString());
  Tensor* counter = blob->GetMutableTensor(Device());
  if (counter->dtype() == DataType::UNDEFINED) {
    counter->Resize({1});
    counter->mutable_data<int64_t>()[0] = 0;
  }
  HALFCAF_ENFORCE(counter->dtype() == DataType::INT64 && counter->numel() == 1,
                  "the iteration counter '", name,
                  "' must be an int64 tensor with one element, got ", counter->DebugString());
  int64_t* value = counter->mutable_data<int64_t>();
  HALFCAF_ENFORCE(*value < std::numeric_limits<int64_t>::max(), "the iteration counter '", name,
                  "' would overflow");
  ++*value;
}

void IterOp::RunOnDevice() { IncrementIterationCounter(OutputBlob(0), output_name(0)); }

void CreateMutexOp::RunOnDevice() {
  // A blob that already holds a mutex keeps it (nothing can be waiting on it between runs, so a
  // fresh one would behave the same); anything else is replaced.
  OutputBlob(0)->GetMutable<BlobMutex>();
}

void AtomicIterOp::RunOnDevice() {
  const Blob& m = InputBlob(0);
  HALFCAF_ENFORCE(m.IsType<BlobMutex>(), "input 0 '", input_name(0),
                  "' must hold a mutex made by CreateMutex, got ",
                  m.IsTensor() ? "a tensor " + m.GetTensor().DebugString()
                               : std::string(m.empty() ? "an empty blob" : m.TypeName()));
  std::lock_guard<std::mutex> lock(m.Get<BlobMutex>().mutex);
  IncrementIterationCounter(OutputBlob(0), output_name(0));
}

namespace {

std::vector<TensorShape> CounterShape(const OperatorDef&, const std::vector<TensorShape>&) {
  return {TensorShape{{1}, DataType::INT64}};
}

}  // namespace

REGISTER_CPU_OPERATOR(Iter, IterOp);
REGISTER_CPU_OPERATOR(CreateMutex, CreateMutexOp);
REGISTER_CPU_OPERATOR(AtomicIter, AtomicIterOp);
NO_GRADIENT(Iter);
NO_GRADIENT(CreateMutex);
NO_GRADIENT(AtomicIter);

OPERATOR_SCHEMA(Iter)
    .NumInputs(0, 1)
    .NumOutputs(1)
    .EnforceInplace({{0, 0}})
    .TensorInferenceFunction(CounterShape)
    .SetDoc("Training-loop counter: adds 1 to an int64 CPU tensor of one element, in place. A "
            "counter blob that holds no data yet starts from 0 (so it holds 1 after the first "
            "run). The form without an input is deprecated in Caffe2 and kept for old nets. "
            "CPU-only: LearningRate on any device reads the counter from the host.")
    .Input(0, "counter", "optional: the counter blob, which must also be the output")
    .Output(0, "counter", "int64 tensor [1], incremented by one");

OPERATOR_SCHEMA(CreateMutex)
    .NumInputs(0)
    .NumOutputs(1)
    .SetDoc("Stores a mutex (not a tensor) in its output blob, for AtomicIter. Caffe2's Python "
            "optimizers create one in the init net, next to the optimizer_iteration counter. "
            "Running it again on a blob that already holds a mutex keeps that mutex. CPU-only.")
    .Output(0, "mutex", "the mutex blob (a non-tensor blob)");

OPERATOR_SCHEMA(AtomicIter)
    .NumInputs(2)
    .NumOutputs(1)
    .EnforceInplace({{1, 0}})
    .TensorInferenceFunction(CounterShape)
    .SetDoc("Iter under a lock: adds 1 to an int64 CPU tensor of one element while holding the "
            "mutex of input 0, so that nets run concurrently (or several ops on the same blobs "
            "in different threads) never lose a count. A counter blob that holds no data yet "
            "starts from 0. CPU-only, like Iter.")
    .Input(0, "mutex", "blob made by CreateMutex")
    .Input(1, "counter", "the counter blob, which must also be the output")
    .Output(0, "counter", "int64 tensor [1], incremented by one");

}  // namespace halfcaf
