// The CUDA caching allocator: freed blocks go back to a cache keyed by (device, stream, rounded
// size), so steady-state training does no cudaMalloc/cudaFree. Registered with core at load time,
// with the cross-device copy function.
//
// Streams: a block belongs to the stream it was allocated on (the stream of the op the calling
// thread runs or ran last on that device, CurrentCudaStream; the legacy default stream for
// threads that ran none). Freed, it goes back to that stream's free list and is handed out again
// only to allocations on the same stream: kernels queued there before the free may still use it,
// and the stream runs the new owner's work after them. A block freed on one stream is never
// handed to another while work on the first may still use it (per-stream lists need no events
// or synchronisation; the cost is that one stream's cached blocks cannot serve another's
// allocations until EmptyCache, which the out-of-memory retry calls). A tensor that a second
// stream also uses must stay alive until that stream's work on it is done (or is synchronised
// with the first stream) before it is freed, as the block records one stream only.
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "core/allocator.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_context.h"

namespace halfcaf {

namespace {

size_t RoundSize(size_t n) {
  if (n <= 512) return 512;
  if (n <= (1u << 20)) return (n + 511) / 512 * 512;  // 512-byte steps up to 1 MiB
  return (n + (1u << 20) - 1) / (1u << 20) * (1u << 20);  // then 1 MiB steps
}

class CudaCachingAllocator : public Allocator {
 public:
  std::shared_ptr<void> Allocate(size_t nbytes, Device device) override {
    const size_t size = RoundSize(nbytes);
    const int dev = device.id;
    const cudaStream_t stream = CurrentCudaStream(dev);
    void* ptr = nullptr;
    {
      std::lock_guard<std::mutex> lk(mu_);
      auto& cache = free_[{dev, stream}][size];
      if (!cache.empty()) {
        ptr = cache.back();
        cache.pop_back();
      }
    }
    if (!ptr) {
      cudaError_t err;
      {
        CudaDeviceGuard on(dev);
        err = cudaMalloc(&ptr, size);
        if (err == cudaErrorMemoryAllocation) {  // give cached blocks back and retry once
          (void)cudaGetLastError();
          EmptyCache();
          err = cudaMalloc(&ptr, size);
        }
      }
      if (err != cudaSuccess) {
        (void)cudaGetLastError();
        HALFCAF_THROW("out of memory on CUDA:", dev, " allocating ", nbytes, " bytes (",
                      cudaGetErrorString(err), ")");
      }
      std::lock_guard<std::mutex> lk(mu_);
      held_[dev] += size;
      peak_[dev] = std::max(peak_[dev], held_[dev]);
    }
    return std::shared_ptr<void>(ptr, [this, dev, stream, size](void* p) {
      std::lock_guard<std::mutex> lk(mu_);
      free_[{dev, stream}][size].push_back(p);
    });
  }

  // cudaFree of every cached block, each with its own device current (cudaFree of another
  // device's block is an error on some drivers) and the caller's device restored after.
  void EmptyCache() {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& list : free_) {
      const int dev = list.first.first;
      CudaDeviceGuard on(dev);
      for (auto& bucket : list.second) {
        while (!bucket.second.empty()) {
          void* p = bucket.second.back();
          bucket.second.pop_back();
          held_[dev] -= bucket.first;
          HALFCAF_CUDA_CHECK(cudaFree(p));
        }
      }
    }
  }

  size_t Peak(int dev) {
    std::lock_guard<std::mutex> lk(mu_);
    return peak_[dev];
  }

 private:
  std::mutex mu_;
  // (device, stream) -> rounded size -> free blocks.
  std::map<std::pair<int, cudaStream_t>, std::map<size_t, std::vector<void*>>> free_;
  std::map<int, size_t> held_, peak_;
};

CudaCachingAllocator* TheAllocator() {
  static auto* a = new CudaCachingAllocator();  // never destroyed: blocks outlive static dtors
  return a;
}

void CudaCopyBytes(size_t nbytes, const void* src, Device src_device, void* dst,
                   Device dst_device) {
  if (src_device.type == DeviceType::CUDA && dst_device.type == DeviceType::CUDA &&
      src_device.id != dst_device.id) {
    HALFCAF_CUDA_CHECK(cudaMemcpyPeer(dst, dst_device.id, src, src_device.id, nbytes));
    return;
  }
  // cudaMemcpy is ordered after the work already queued on the blocking op streams of the
  // *current* device (through its legacy default stream), so make the tensor's device current:
  // the calling thread (a tool's main thread, a DAG worker) may have another one, or none yet.
  const int dev = src_device.type == DeviceType::CUDA ? src_device.id : dst_device.id;
  CudaDeviceGuard on(dev);
  HALFCAF_CUDA_CHECK(cudaMemcpy(dst, src, nbytes, cudaMemcpyDefault));
}

[[maybe_unused]] const bool g_registered = [] {
  RegisterAllocator(DeviceType::CUDA, TheAllocator());
  RegisterDeviceCopy(CudaCopyBytes);
  return true;
}();

}  // namespace

size_t CudaPeakMemory(int device) { return TheAllocator()->Peak(device); }
void CudaEmptyCache() { TheAllocator()->EmptyCache(); }

}  // namespace halfcaf
