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

void RegisterAllocator(DeviceType type, Allocator* allocator);
Allocator* GetAllocator(DeviceType type);  // throws if the backend is not built / registered
void RegisterDeviceCopy(CopyBytesFn fn);   // used for any copy that involves a non-CPU device
void CopyBytes(size_t nbytes, const void* src, Device src_device, void* dst, Device dst_device);

}  // namespace halfcaf
