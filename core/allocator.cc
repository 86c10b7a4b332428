#include "core/allocator.h"

#include <sys/sysinfo.h>

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

class CPUAllocator : public Allocator {
 public:
  std::shared_ptr<void> Allocate(size_t nbytes, Device) override {
    static const uint64_t limit = MachineMemoryBytes();
    HALFCAF_ENFORCE(nbytes <= limit, "cannot allocate ", ByteCountString(nbytes),
                    " of CPU memory: more than this machine's RAM + swap (",
                    ByteCountString(limit), ")");
    // 64-byte alignment for SIMD and cache lines; aligned_alloc needs a multiple of the alignment.
    size_t rounded = (nbytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded ? rounded : 64);
    HALFCAF_ENFORCE(p != nullptr, "out of CPU memory allocating ", ByteCountString(nbytes));
    return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  }
};

Allocator* g_allocators[2] = {nullptr, nullptr};
CopyBytesFn g_device_copy = nullptr;

}  // namespace

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
