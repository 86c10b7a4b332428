// Helpers for the CUDA loss and metric operators (CUDA builds only):
// - DeviceLabelCheck: out-of-range labels found on the device, reported later so that the
//   operator never waits for its kernels (see the class).
// - DeviceFloat: a float view of a float or float16 device tensor (converted into a scratch
//   tensor for float16), for small inputs (weights, label distributions, a loss gradient) that the
//   kernels read as float.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <string>

#include "core/float_io.h"
#include "core/tensor.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_context.h"
#include "gpu/math_gpu.h"
#include "gpu/softmax_kernels.h"
#include "operators/loss/label_util.h"

namespace halfcaf {

// The label check of SoftmaxWithLoss(Gradient), LabelCrossEntropy(Gradient) and Accuracy on CUDA,
// without a stream synchronisation per run: the kernels record the first out-of-range label of
// the batch (smallest sample, with its value) in a device word that keeps the smallest such sample
// over runs; the operator's CheckDeferredErrors calls Report, which reads the word (one
// synchronisation) and throws the CPU op's error (LabelRangeMessage: op, sample, label, valid
// range), saying that it was found on the device. A bad label therefore stops a run at the next
// check, not in the iteration that held it: the trainer checks whenever it reads the loss (each
// log line, the end, evaluation), Workspace::RunNetOnce and run_net after their runs.
class DeviceLabelCheck {
 public:
  // The word for this run's kernels (on ctx's device and stream), for N samples of num_classes
  // classes. Cleared on first use and after a report only, so a bad label stays recorded.
  unsigned long long* Flag(CUDAContext* ctx, int64_t N, int64_t num_classes) {
    HALFCAF_ENFORCE(N < static_cast<int64_t>(std::numeric_limits<uint32_t>::max()),
                    "the CUDA label check handles fewer than 2^32 - 1 samples per batch, got ", N);
    num_classes_ = num_classes;
    if (flag_.numel() == 0) {
      flag_.SetDevice(ctx->device());
      flag_.Resize({1});
      Clear(ctx);
    }
    used_ = true;
    return Word();
  }

  // Throws (`op`: the operator's name) when a run since the last report recorded a bad label,
  // after waiting for ctx's stream; clears the word then. Does nothing (and does not wait) when
  // no run used the word since the last report.
  void Report(CUDAContext* ctx, const std::string& op) {
    if (!used_) return;
    used_ = false;
    CudaDeviceGuard on(ctx->device_id());
    unsigned long long bad = 0;
    HALFCAF_CUDA_CHECK(cudaMemcpyAsync(&bad, Word(), sizeof(bad), cudaMemcpyDeviceToHost,
                                       ctx->stream()));
    ctx->FinishDevice();
    if (bad == ~0ull) return;
    Clear(ctx);
    const auto sample = static_cast<int64_t>(bad >> 32);
    const auto label = static_cast<int32_t>(static_cast<uint32_t>(bad & 0xffffffffull));
    HALFCAF_THROW(LabelRangeMessage(label, sample, num_classes_, op),
                  "; found on the device by a run since the last check, so possibly in an "
                  "earlier batch than the current one");
  }

 private:
  unsigned long long* Word() {
    return reinterpret_cast<unsigned long long*>(flag_.mutable_data<int64_t>());
  }
  void Clear(CUDAContext* ctx) { gpu::ResetBadLabel(Word(), ctx->stream()); }

  Tensor flag_;
  int64_t num_classes_ = 0;
  bool used_ = false;
};

// Float data of `t` (float or float16, on ctx's device): t's own for float, else converted into
// `scratch`. Valid until `scratch` is next used.
inline const float* DeviceFloat(const Tensor& t, Tensor* scratch, CUDAContext* ctx) {
  if (t.dtype() == DataType::FLOAT) return t.data<float>();
  scratch->SetDevice(ctx->device());
  scratch->Resize({t.numel()});
  float* p = scratch->mutable_data<float>();
  gpu::HalfToFloat(t.numel(), t.data<Half>(), p, ctx->stream());
  return p;
}

}  // namespace halfcaf
