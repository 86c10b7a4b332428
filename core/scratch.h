// Scratch memory for running operators: im2col columns, oneDNN's reordered copies, FP16 <-> FP32
// staging. An operator asks for it while it runs and gives it back when it returns, so a net
// holds the scratch of one operator at a time (per thread) instead of every operator keeping
// its own buffers. Each thread has one pool of 64-byte aligned buffers; a request takes the
// smallest free buffer that holds it, else grows the largest free one, so the pool holds about
// the most scratch any one operator uses at once.
//
//   float* col = ScratchFloats(n, &col_);  // inside Operator::Run: pooled; outside: col_
#pragma once

#include <cstddef>
#include <vector>

namespace halfcaf {

// A buffer of n floats, valid until the innermost ScratchScope of this thread closes (the
// running operator returns). Outside any scope (no operator running) it is `fallback`'s storage.
float* ScratchFloats(size_t n, std::vector<float>* fallback);
// The same for bytes (rounded up to whole floats).
void* ScratchBytes(size_t nbytes, std::vector<float>* fallback);

// Marks an operator run on this thread: scratch handed out inside it is returned to the thread's
// pool when it ends. Scopes nest (an op running another op). Operator::Run opens one.
class ScratchScope {
 public:
  ScratchScope();
  ~ScratchScope();
  ScratchScope(const ScratchScope&) = delete;
  ScratchScope& operator=(const ScratchScope&) = delete;

 private:
  size_t saved_;
};

// Frees the calling thread's pooled buffers that no running operator holds (e.g. between
// benchmark tries of different sizes).
void ReleaseScratch();

// Bytes the pools of all threads hold now, and the most they held at once since the process
// started (what memory reports count as scratch).
size_t ScratchBytesHeld();
size_t ScratchBytesPeak();

}  // namespace halfcaf
