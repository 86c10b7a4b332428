// CPUContext: where a CPU operator runs: its device, random generator (seeded from the
// DeviceOption's random_seed when given) and copies. CUDAContext (gpu/) has the same interface.
#pragma once

#include <cstdint>
#include <mutex>
#include <random>

#include "core/allocator.h"
#include "core/types.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

class CPUContext {
 public:
  static constexpr DeviceType kDeviceType = DeviceType::CPU;

  CPUContext() : CPUContext(DeviceOption()) {}
  explicit CPUContext(const DeviceOption& option);

  Device device() const { return Device{DeviceType::CPU, 0}; }
  void SwitchToDevice(int /*stream_id*/) {}
  // What an operator holds while it runs so that ops sharing per-stream state never overlap;
  // CPU ops share none: an empty lock.
  std::unique_lock<std::mutex> ExclusiveStream() { return {}; }
  // Waits for queued work; CPU work is synchronous.
  void FinishDevice() {}
  std::mt19937& RandGenerator() { return rng_; }

  template <typename T>
  void Copy(int64_t n, const T* src, T* dst) {
    CopyBytes(static_cast<size_t>(n) * sizeof(T), src, device(), dst, device());
  }

 private:
  std::mt19937 rng_;
};

// Seeds: a DeviceOption random_seed if given, otherwise a process-wide seed (settable, so tools can
// make whole runs repeatable with --seed).
void SetGlobalSeed(uint32_t seed);
uint32_t NextSeed();

}  // namespace halfcaf
