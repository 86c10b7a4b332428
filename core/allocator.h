// Device memory allocators. core knows only the CPU one; the CUDA backend registers its caching
// allocator and copy function at load time, so core never includes a CUDA header.
#pragma once

#include <cstddef>
#include <memory>

#include "core/types.h"

namespace halfcaf {

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns memory for nbytes on `device`, freed when the last shared_ptr copy goes.
  virtual std::shared_ptr<void> Allocate(size_t nbytes, Device device) = 0;
};

// Copies nbytes between any two devices (synchronously with respect to the host).
using CopyBytesFn = void (*)(size_t nbytes, const void* src, Device src_device, void* dst,
                             Device dst_device);

// CPU memory accounting: every tensor the CPU allocator makes and the operators' scratch
// (core/scratch.h) count here. With a limit set (benchmark --mem_limit_mb), a request that would
// go over it fails with an "out of memory" EnforceNotMet naming the limit, so an over-limit
// configuration stops cleanly instead of being killed by the kernel. 0: no limit.
void SetCpuMemoryLimit(size_t bytes);
size_t CpuMemoryLimit();
size_t CpuBytesInUse();
size_t CpuBytesPeak();    // since the last ResetCpuBytesPeak (or the start)
void ResetCpuBytesPeak();  // to the bytes in use now
// What the CPU allocator and the scratch pool call around their own allocations (`what` names
// the request in the error).
void ReserveCpuBytes(size_t bytes, const char* what);
void ReleaseCpuBytes(size_t bytes);

void RegisterAllocator(DeviceType type, Allocator* allocator);
Allocator* GetAllocator(DeviceType type);  // throws if the backend is not built / registered
void RegisterDeviceCopy(CopyBytesFn fn);   // used for any copy that involves a non-CPU device
void CopyBytes(size_t nbytes, const void* src, Device src_device, void* dst, Device dst_device);

}  // namespace halfcaf
