// Training-loop counters (CPU-only by design, as in Caffe2: LearningRate reads the counter on the
// host whatever its own device).
//
// Iter: its single output is an int64 CPU tensor of size 1 that is incremented by one per run.
// With one input the input and output must be the same blob (the usual form,
// `Iter(optimizer_iteration) -> optimizer_iteration`); with no input (deprecated in Caffe2) the
// output blob is the counter. A blob without data starts from 0, so the first run leaves 1 in it.
//
// CreateMutex: no input; its output blob holds a mutex (a BlobMutex, not a tensor).
// AtomicIter: (mutex, counter) -> counter, in place (input 1 is output 0): Iter's increment done
// while holding the mutex, so several nets or threads may share one counter.
#pragma once

#include <mutex>
#include <string>

#include "core/operator.h"

namespace halfcaf {

// What a CreateMutex blob holds. The mutex is mutable so that ops that only read the blob (it is
// an input of AtomicIter) can lock it.
struct BlobMutex {
  mutable std::mutex mutex;
};

// Adds one to the counter in `blob` (named `name` in errors): an int64 CPU tensor with one
// element, created as 0 when the blob holds no data. Throws for any other content and before an
// overflow.
void IncrementIterationCounter(Blob* blob, const std::string& name);

class IterOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;
};

class CreateMutexOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;
};

class AtomicIterOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;
};

}  // namespace halfcaf
