// CUDAContext: where a CUDA operator runs. One stream per (device, stream id), with cuBLAS and
// cuDNN handles bound to it, created on first use. Same interface as CPUContext.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <mutex>
#include <random>
#include <string>

#include "core/allocator.h"
#include "core/types.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

// Number of usable CUDA devices; 0 when there is no driver or no device (never throws).
int NumCudaDevices();
// Why NumCudaDevices() is 0: the error cudaGetDeviceCount returned (e.g. "cudaErrorNoDevice: no
// CUDA-capable device is detected", or a driver older than the runtime), "no CUDA device" when it
// succeeded with a count of 0, "" when devices exist. For callers that must report, not skip.
const std::string& CudaDeviceError();

struct CudaDeviceInfo {
  int id = 0;
  std::string name;
  int major = 0, minor = 0;  // compute capability
  size_t total_memory = 0;
  int multiprocessors = 0;
  bool tensor_cores() const { return major >= 7; }
};
CudaDeviceInfo GetCudaDeviceInfo(int device);
// Throws, naming `what` and the device, unless CUDA device `device` runs bfloat16 tensor ops
// (compute capability 8.0, Ampere, or newer).
void EnforceBFloat16Device(int device, const char* what);

class CUDAContext {
 public:
  static constexpr DeviceType kDeviceType = DeviceType::CUDA;

  CUDAContext() : CUDAContext(DeviceOption()) {}
  explicit CUDAContext(const DeviceOption& option);

  Device device() const { return Device{DeviceType::CUDA, device_id_}; }
  void SwitchToDevice(int stream_id);
  // Held by an operator while it runs: ops on one (device, stream) share its cuBLAS / cuDNN
  // handles, which must not be used by two threads at once, so a dag net's workers run them one
  // at a time (ops on other devices or streams, and CPU ops, still overlap). Their kernels are
  // queued on that one stream in dependency order, so the device sees them in a valid order.
  std::unique_lock<std::mutex> ExclusiveStream();
  // Blocks until the current stream's work is done; errors from kernels surface here.
  void FinishDevice();
  cudaStream_t stream() const;
  cublasHandle_t cublas_handle();
  cudnnHandle_t cudnn_handle();
  std::mt19937& RandGenerator() { return rng_; }
  int device_id() const { return device_id_; }

  template <typename T>
  void Copy(int64_t n, const T* src, T* dst) {
    CopyBytes(static_cast<size_t>(n) * sizeof(T), src, device(), dst, device());
  }

 private:
  int device_id_;
  int stream_id_ = 0;
  std::mt19937 rng_;
};

// The stream of (device, stream id) that CUDAContext uses (created on first use).
cudaStream_t CudaStream(int device, int stream_id = 0);

// The stream the calling thread's CUDA work on `device` goes to: that of the op it runs or ran
// last there (CUDAContext::SwitchToDevice sets it), nullptr (the legacy default stream) on a
// thread that ran no op on the device. The caching allocator files blocks under it.
cudaStream_t CurrentCudaStream(int device);

// Peak bytes the caching allocator has held on a device (for the benchmark's memory column).
size_t CudaPeakMemory(int device);
// Frees cached (unused) device blocks.
void CudaEmptyCache();

}  // namespace halfcaf
