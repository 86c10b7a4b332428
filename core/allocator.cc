#include "core/allocator.h"

#include <sys/sysinfo.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/enforce.h"
#include "core/strings.h"

namespace halfcaf {

namespace {

// RAM + swap: no single allocation larger than this can ever be backed. Refusing it up front
// gives a clear error instead of an overcommitted block that gets the process OOM-killed.
uint64_t MachineMemoryBytes() {
  struct sysinfo si;
  if (sysinfo(&si) != 0) return UINT64_MAX;
  return (static_cast<uint64_t>(si.totalram) + si.totalswap) * si.mem_unit;
}

std::atomic<size_t> g_cpu_in_use{0}, g_cpu_peak{0}, g_cpu_limit{0};

class CPUAllocator : public Allocator {
 public:
  std::shared_ptr<void> Allocate(size_t nbytes, Device) override {
    static const uint64_t limit = MachineMemoryBytes();
    HALFCAF_ENFORCE(nbytes <= limit, "cannot allocate ", ByteCountString(nbytes),
                    " of CPU memory: more than this machine's RAM + swap (",
                    ByteCountString(limit), ")");
    // 64-byte alignment for SIMD and cache lines; aligned_alloc needs a multiple of the alignment.
    const size_t rounded = std::max<size_t>((nbytes + 63) / 64 * 64, 64);
    ReserveCpuBytes(rounded, "a tensor");
    void* p = std::aligned_alloc(64, rounded);
    if (p == nullptr) {
      ReleaseCpuBytes(rounded);
      HALFCAF_THROW("out of CPU memory allocating ", ByteCountString(nbytes));
    }
    return std::shared_ptr<void>(p, [rounded](void* q) {
      std::free(q);
      ReleaseCpuBytes(rounded);
    });
  }
};

Allocator* g_allocators[2] = {nullptr, nullptr};
CopyBytesFn g_device_copy = nullptr;

}  // namespace

void SetCpuMemoryLimit(size_t bytes) { g_cpu_limit = bytes; }
size_t CpuMemoryLimit() { return g_cpu_limit.load(); }
size_t CpuBytesInUse() { return g_cpu_in_use.load(); }
size_t CpuBytesPeak() { return g_cpu_peak.load(); }
void ResetCpuBytesPeak() { g_cpu_peak = g_cpu_in_use.load(); }

void ReserveCpuBytes(size_t bytes, const char* what) {
  const size_t now = g_cpu_in_use.fetch_add(bytes) + bytes;
  const size_t limit = g_cpu_limit.load();
  if (limit > 0 && now > limit) {
    g_cpu_in_use.fetch_sub(bytes);
    HALFCAF_THROW("out of memory: ", what, " of ", ByteCountString(bytes), " would bring halfcaf's "
                  "CPU memory to ", ByteCountString(now), ", over the limit of ",
                  ByteCountString(limit));
  }
  size_t peak = g_cpu_peak.load();
  while (now > peak && !g_cpu_peak.compare_exchange_weak(peak, now)) {
  }
}

void ReleaseCpuBytes(size_t bytes) { g_cpu_in_use.fetch_sub(bytes); }

void RegisterAllocator(DeviceType type, Allocator* allocator) {
  g_allocators[static_cast<int>(type)] = allocator;
}

Allocator* GetAllocator(DeviceType type) {
  static CPUAllocator cpu;
  if (type == DeviceType::CPU) return g_allocators[0] ? g_allocators[0] : &cpu;
  Allocator* a = g_allocators[static_cast<int>(type)];
  HALFCAF_ENFORCE(a != nullptr, "no allocator for device type ", DeviceTypeName(type),
                  ": this build of halfcaf has no CUDA backend");
  return a;
}

void RegisterDeviceCopy(CopyBytesFn fn) { g_device_copy = fn; }

void CopyBytes(size_t nbytes, const void* src, Device src_device, void* dst, Device dst_device) {
  if (nbytes == 0 || src == dst) return;
  if (src_device.type == DeviceType::CPU && dst_device.type == DeviceType::CPU) {
    std::memcpy(dst, src, nbytes);
    return;
  }
  HALFCAF_ENFORCE(g_device_copy != nullptr, "copy from ", src_device.ToString(), " to ",
                  dst_device.ToString(), " needs the CUDA backend, which this build lacks");
  g_device_copy(nbytes, src, src_device, dst, dst_device);
}

}  // namespace halfcaf
