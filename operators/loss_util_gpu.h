// Helpers for the CUDA loss and metric operators (CUDA builds only):
// - DeviceLabelCheck: kernels record the first sample whose label is out of range in a device
//   counter; after them the operator reads it back (one stream synchronisation) and throws the
//   CPU operators' error (CheckLabelValue: op name, sample, label, number of classes).
// - DeviceFloat: a float view of a float or float16 device tensor (converted into a scratch
//   tensor for float16), for small inputs (weights, label distributions, a loss gradient) that the
//   kernels read as float.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/float_io.h"
#include "core/tensor.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_context.h"
#include "gpu/math_gpu.h"
#include "gpu/softmax_kernels.h"
#include "operators/label_util.h"

namespace halfcaf {

class DeviceLabelCheck {
 public:
  // Resets the counter (on ctx's stream) and returns it for the kernels.
  unsigned long long* Reset(CUDAContext* ctx) {
    flag_.SetDevice(ctx->device());
    flag_.Resize({1});
    auto* p = reinterpret_cast<unsigned long long*>(flag_.mutable_data<int64_t>());
    gpu::ResetBadRow(p, ctx->stream());
    return p;
  }

  // Waits for ctx's stream; throws when a kernel recorded a bad label in `labels` (int32, on the
  // device) for `num_classes` classes.
  void Check(CUDAContext* ctx, const int32_t* labels, int64_t num_classes, const std::string& op) {
    unsigned long long bad = 0;
    HALFCAF_CUDA_CHECK(cudaMemcpyAsync(&bad, flag_.data<int64_t>(), sizeof(bad),
                                       cudaMemcpyDeviceToHost, ctx->stream()));
    ctx->FinishDevice();
    if (bad == ~0ull) return;
    int32_t label = 0;
    HALFCAF_CUDA_CHECK(cudaMemcpyAsync(&label, labels + bad, sizeof(label), cudaMemcpyDeviceToHost,
                                       ctx->stream()));
    ctx->FinishDevice();
    CheckLabelValue(label, static_cast<int64_t>(bad), num_classes, op);
    HALFCAF_THROW(op, ": label ", label, " of sample ", bad, " is out of range");  // not reached
  }

 private:
  Tensor flag_;
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
