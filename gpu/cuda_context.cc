#include "gpu/cuda_context.h"

#include <map>
#include <mutex>
#include <tuple>

#include "core/context.h"
#include "gpu/cuda_check.h"

namespace halfcaf {

const char* CublasStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "unknown cuBLAS status";
  }
}

namespace {

struct DeviceCount {
  int count = 0;
  std::string error;
};

const DeviceCount& QueryDeviceCount() {
  static const DeviceCount result = [] {
    DeviceCount r;
    const cudaError_t e = cudaGetDeviceCount(&r.count);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      r.count = 0;
      r.error = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    } else if (r.count == 0) {
      r.error = "no CUDA device";
    }
    return r;
  }();
  return result;
}

}  // namespace

int NumCudaDevices() { return QueryDeviceCount().count; }

const std::string& CudaDeviceError() { return QueryDeviceCount().error; }

CudaDeviceInfo GetCudaDeviceInfo(int device) {
  HALFCAF_ENFORCE(device >= 0 && device < NumCudaDevices(), "CUDA device ", device,
                  " does not exist (", NumCudaDevices(), " device(s) found)");
  cudaDeviceProp prop;
  HALFCAF_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  CudaDeviceInfo info;
  info.id = device;
  info.name = prop.name;
  info.major = prop.major;
  info.minor = prop.minor;
  info.total_memory = prop.totalGlobalMem;
  info.multiprocessors = prop.multiProcessorCount;
  return info;
}

void EnforceBFloat16Device(int device, const char* what) {
  static std::mutex mu;
  static std::map<int, CudaDeviceInfo> known;  // cudaGetDeviceProperties is slow
  CudaDeviceInfo info;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = known.find(device);
    if (it == known.end()) it = known.emplace(device, GetCudaDeviceInfo(device)).first;
    info = it->second;
  }
  HALFCAF_ENFORCE(info.major >= 8, what, " in bfloat16 needs a GPU of compute capability 8.0 "
                  "(Ampere) or newer for BF16 tensor ops; CUDA device ", device, " (", info.name,
                  ") is ", info.major, ".", info.minor, ": use float16 or float there");
}

namespace {

// Streams and handles live for the process, one set per (device, stream id) and thread-safe to
// create.
struct StreamResources {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  std::mutex run_mu;  // held by the op running on this stream (CUDAContext::ExclusiveStream)
};

std::mutex g_res_mu;
std::map<std::pair<int, int>, StreamResources>& Resources() {
  static auto* m = new std::map<std::pair<int, int>, StreamResources>();  // never destroyed
  return *m;
}

StreamResources& GetResources(int device, int stream_id) {
  std::lock_guard<std::mutex> lk(g_res_mu);
  auto& r = Resources()[{device, stream_id}];
  if (!r.stream) {
    // On `device`, restoring the caller's: CudaStream(other device) is called in the middle of
    // an op (peer copies), whose later launches must still go to the op's device.
    CudaDeviceGuard on(device);
    // Blocking streams: synchronous copies (cudaMemcpy on the legacy stream) are ordered with
    // the kernels queued on them.
    HALFCAF_CUDA_CHECK(cudaStreamCreateWithFlags(&r.stream, cudaStreamDefault));
  }
  return r;
}

}  // namespace

CUDAContext::CUDAContext(const DeviceOption& option)
    : device_id_(option.device_id()),
      rng_(option.has_random_seed() ? option.random_seed() : NextSeed()) {
  const int n = NumCudaDevices();
  HALFCAF_ENFORCE(n > 0, "a CUDA operator was requested but no CUDA device is available");
  HALFCAF_ENFORCE(device_id_ >= 0 && device_id_ < n, "CUDA device ", device_id_,
                  " does not exist (", n, " device(s) found)");
}

namespace {
// Per thread: device -> the stream of the op it runs or ran last on that device.
thread_local std::map<int, cudaStream_t> t_current_stream;
}  // namespace

void CUDAContext::SwitchToDevice(int stream_id) {
  stream_id_ = stream_id;
  HALFCAF_CUDA_CHECK(cudaSetDevice(device_id_));
  t_current_stream[device_id_] = stream();
}

cudaStream_t CurrentCudaStream(int device) {
  auto it = t_current_stream.find(device);
  return it == t_current_stream.end() ? nullptr : it->second;
}

std::unique_lock<std::mutex> CUDAContext::ExclusiveStream() {
  return std::unique_lock<std::mutex>(GetResources(device_id_, stream_id_).run_mu);
}

void CUDAContext::FinishDevice() { HALFCAF_CUDA_CHECK(cudaStreamSynchronize(stream())); }

cudaStream_t CUDAContext::stream() const { return GetResources(device_id_, stream_id_).stream; }

cudaStream_t CudaStream(int device, int stream_id) { return GetResources(device, stream_id).stream; }

cublasHandle_t CUDAContext::cublas_handle() {
  StreamResources& r = GetResources(device_id_, stream_id_);
  std::lock_guard<std::mutex> lk(g_res_mu);
  if (!r.cublas) {
    CudaDeviceGuard on(device_id_);
    HALFCAF_CUBLAS_CHECK(cublasCreate(&r.cublas));
    HALFCAF_CUBLAS_CHECK(cublasSetStream(r.cublas, r.stream));
    HALFCAF_CUBLAS_CHECK(cublasSetPointerMode(r.cublas, CUBLAS_POINTER_MODE_HOST));
  }
  return r.cublas;
}

cudnnHandle_t CUDAContext::cudnn_handle() {
  StreamResources& r = GetResources(device_id_, stream_id_);
  std::lock_guard<std::mutex> lk(g_res_mu);
  if (!r.cudnn) {
    CudaDeviceGuard on(device_id_);
    HALFCAF_CUDNN_CHECK(cudnnCreate(&r.cudnn));
    HALFCAF_CUDNN_CHECK(cudnnSetStream(r.cudnn, r.stream));
  }
  return r.cudnn;
}

}  // namespace halfcaf
