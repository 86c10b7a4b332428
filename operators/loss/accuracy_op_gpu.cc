// Accuracy on CUDA (gpu/loss_kernels.cu): one block per sample counts the classes ranked above
// its label (ties favour the lower index, as on CPU). Same semantics, arguments and errors as the
// CPU operator in accuracy_op.cc (schema there); a label out of range is found on the device and
// reported by CheckDeferredErrors with the CPU op's message (DeviceLabelCheck: no stream
// synchronisation in the run).
#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/loss_kernels.h"
#include "operators/loss/label_util.h"
#include "operators/loss/loss_util_gpu.h"

namespace halfcaf {

namespace {

class AccuracyCUDAOp final : public Operator<CUDAContext> {
 public:
  AccuracyCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), top_k_(GetSingleArgument<int>("top_k", 1)) {
    HALFCAF_ENFORCE(top_k_ >= 1, DebugName(), ": argument top_k must be >= 1, got ", top_k_);
    count_.SetDevice(context_.device());
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& L = Input(1);
    EnforceFloatType(X, "predictions");
    HALFCAF_ENFORCE(X.ndim() == 2, DebugName(), ": predictions must be (N, D), got dims ",
                    DimsString(X.dims()));
    const int64_t N = X.dim(0), D = X.dim(1);
    CheckLabelTensor(L, N, {N}, DebugName());
    count_.Resize({1});
    auto* count = reinterpret_cast<unsigned long long*>(count_.mutable_data<int64_t>());
    float* y = Output(0, {})->mutable_data<float>();
    const int32_t* l = L.data<int32_t>();
    unsigned long long* bad = check_.Flag(&context_, N, D);
    if (X.dtype() == DataType::FLOAT) {
      gpu::Accuracy(N, D, X.data<float>(), l, top_k_, count, y, bad, context_.stream());
    } else {
      gpu::Accuracy(N, D, X.data<Half>(), l, top_k_, count, y, bad, context_.stream());
    }
  }

  void CheckDeferredErrors() override { check_.Report(&context_, DebugName()); }

 private:
  int top_k_;
  Tensor count_;  // correct samples (device scratch, kept)
  DeviceLabelCheck check_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Accuracy, AccuracyCUDAOp);

}  // namespace halfcaf
