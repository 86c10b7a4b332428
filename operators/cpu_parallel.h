// CPU parallelism for memory-bound operator loops: a static split of [0, n) over the OpenMP
// threads (the pool oneDNN uses too, so the two never compete), serial when the build has no
// OpenMP, when the work is small, or inside another parallel region. The thread count is
// OpenMP's (OMP_NUM_THREADS). Each index belongs to exactly one thread, so per-index results do
// not depend on the thread count.
#pragma once

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace halfcaf {

// Below this many element operations a parallel region costs more than it saves.
constexpr double kMinParallelWork = 32768;

// Calls f(begin, end) on disjoint ranges covering [0, n); `work_per_index` is a rough count of
// element operations per index. f must not throw.
template <typename F>
void ParallelFor(int64_t n, double work_per_index, F&& f) {
  if (n <= 0) return;
#ifdef _OPENMP
  const int max_threads = omp_get_max_threads();
  if (max_threads > 1 && n > 1 && static_cast<double>(n) * work_per_index >= kMinParallelWork &&
      !omp_in_parallel()) {
    const int nthr = static_cast<int>(std::min<int64_t>(max_threads, n));
#pragma omp parallel num_threads(nthr)
    {
      const int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
      const int64_t begin = n * t / T, end = n * (t + 1) / T;
      if (begin < end) f(begin, end);
    }
    return;
  }
#endif
  f(0, n);
}

// Pieces of this many elements: loops over 16-bit data convert a piece at a time, in cache
// (core/float_io.h FloatIn / FloatOut).
constexpr int64_t kElementwisePiece = 4096;

// Calls f(off, n) for pieces [off, off + n) of at most kElementwisePiece covering [0, total), in
// parallel (ParallelFor's split; `work_per_index` as there).
template <typename F>
void ForEachPiece(int64_t total, double work_per_index, F&& f) {
  ParallelFor(total, work_per_index, [&](int64_t b, int64_t e) {
    for (int64_t off = b; off < e; off += kElementwisePiece) {
      f(off, std::min(kElementwisePiece, e - off));
    }
  });
}

}  // namespace halfcaf
