// CUDA side of GradientExchange (gradient_staging_gpu.cc, CUDA builds only): the copies between a
// bucket's device tensors and its pinned host buffer, ordered after the compute stream's work.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace halfcaf {
namespace gradient_staging {

// An event recorded now on the compute stream (CudaStream(device)): the point after which the
// tensors the caller hands over are final.
std::shared_ptr<void> MarkReady(int device);
// Page-locked host memory (freed by the deleter).
std::shared_ptr<void> AllocatePinned(size_t nbytes);
// Waits for `ready`, copies the tensors back to back into `host` on a staging stream of their
// device and waits for the copies.
void ToHost(const std::shared_ptr<void>& ready, const std::vector<Tensor*>& tensors, void* host);
// Copies back into the tensors and waits for the copies.
void ToDevice(const void* host, const std::vector<Tensor*>& tensors);

}  // namespace gradient_staging
}  // namespace halfcaf
