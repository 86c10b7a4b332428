// benchmark's memory measure: the peak memory of one configuration, on the CPU or the GPU.
#pragma once

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/enforce.h"
#include "core/scratch.h"
#ifdef HALFCAF_WITH_CUDA
#include <cuda_runtime.h>

#include "gpu/cuda_context.h"
#endif

namespace halfcaf {

// A field of /proc/self/status in kB (-1 when absent).
inline int64_t ProcStatusKb(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size() + 1, key + ":") == 0)
      return std::atoll(line.c_str() + key.size() + 1);
  }
  return -1;
}

// Peak memory of one configuration. CPU: the peak resident set (VmHWM, reset through
// /proc/self/clear_refs) minus the resident set before it (taken after the previous
// configuration's scratch and freed heap went back to the system); where the reset is not possible, the
// process's lifetime peak (getrusage) minus that baseline. CUDA: device memory in use
// (cudaMemGetInfo) after the run minus before it, with the allocator's cache emptied first; the
// caching allocator keeps every block it took during the run, so this is its peak.
class PeakMemory {
 public:
  explicit PeakMemory(bool cuda) : cuda_(cuda) {}
  void Start() {
#ifdef HALFCAF_WITH_CUDA
    if (cuda_) {
      CudaEmptyCache();
      base_ = CudaUsed();
      return;
    }
#endif
    // What the previous configuration left: its operator scratch, and freed heap the allocator
    // still holds (which would otherwise count in the baseline, not in this configuration).
    ReleaseScratch();
    malloc_trim(0);
    std::ofstream f("/proc/self/clear_refs");
    f << "5" << std::flush;
    hwm_reset_ = f.good();
    base_ = ProcStatusKb("VmRSS") * 1024;
  }
  double PeakMb() const {
#ifdef HALFCAF_WITH_CUDA
    if (cuda_) return static_cast<double>(CudaUsed() - base_) / (1 << 20);
#endif
    int64_t peak = -1;
    if (hwm_reset_) peak = ProcStatusKb("VmHWM") * 1024;
    if (peak < 0) {
      struct rusage ru;
      getrusage(RUSAGE_SELF, &ru);
      peak = static_cast<int64_t>(ru.ru_maxrss) * 1024;
    }
    return static_cast<double>(std::max<int64_t>(peak - base_, 0)) / (1 << 20);
  }
  static std::string Kind(bool cuda, bool replicas) {
    if (cuda) {
      return std::string("CUDA device memory in use after the run minus before") +
             (replicas ? " (replica 0's GPU)" : "");
    }
    return "peak resident set size (VmHWM) minus the resident set before the configuration";
  }

 private:
#ifdef HALFCAF_WITH_CUDA
  static int64_t CudaUsed() {
    size_t free_b = 0, total_b = 0;
    cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
    HALFCAF_ENFORCE(e == cudaSuccess, "cudaMemGetInfo: ", cudaGetErrorString(e));
    return static_cast<int64_t>(total_b - free_b);
  }
#endif
  bool cuda_ = false;
  int64_t base_ = 0;
  bool hwm_reset_ = false;
};

}  // namespace halfcaf
