// Checked CUDA, cuBLAS and cuDNN calls: a failure throws EnforceNotMet naming the call and the
// library's error string (the net adds which operator was running).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "core/enforce.h"

namespace halfcaf {
const char* CublasStatusString(cublasStatus_t status);
}  // namespace halfcaf

#define HALFCAF_CUDA_CHECK(call)                                                       \
  do {                                                                                 \
    cudaError_t hc_err_ = (call);                                                      \
    if (hc_err_ != cudaSuccess) {                                                      \
      (void)cudaGetLastError(); /* clear the sticky error for non-fatal failures */    \
      HALFCAF_THROW(#call, " failed: ", cudaGetErrorString(hc_err_));                  \
    }                                                                                  \
  } while (0)

#define HALFCAF_CUBLAS_CHECK(call)                                                     \
  do {                                                                                 \
    cublasStatus_t hc_st_ = (call);                                                    \
    if (hc_st_ != CUBLAS_STATUS_SUCCESS) {                                             \
      HALFCAF_THROW(#call, " failed: ", ::halfcaf::CublasStatusString(hc_st_));        \
    }                                                                                  \
  } while (0)

#define HALFCAF_CUDNN_CHECK(call)                                                      \
  do {                                                                                 \
    cudnnStatus_t hc_st_ = (call);                                                     \
    if (hc_st_ != CUDNN_STATUS_SUCCESS) {                                              \
      HALFCAF_THROW(#call, " failed: ", cudnnGetErrorString(hc_st_));                  \
    }                                                                                  \
  } while (0)

namespace halfcaf {

// Makes `device` current for the enclosing scope and restores the caller's current device at its
// end (a thread's current device is state that later launches and library calls depend on).
class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int device) {
    HALFCAF_CUDA_CHECK(cudaGetDevice(&saved_));
    changed_ = saved_ != device;
    if (changed_) HALFCAF_CUDA_CHECK(cudaSetDevice(device));
  }
  ~CudaDeviceGuard() {
    if (changed_) (void)cudaSetDevice(saved_);
  }
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;

 private:
  int saved_ = 0;
  bool changed_ = false;
};

}  // namespace halfcaf
