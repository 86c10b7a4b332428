// Allreduce and Broadcast on CUDA tensors (engine GLOO): the tensors are staged through pinned
// host buffers on the op's stream and exchanged by the CPU collectives (no NCCL, no GPUDirect).
// float16 stays float16 on the wire and is summed exactly as on CPU (gloo::float16).
#include <cuda_runtime.h>

#include "distributed/collective_op.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_context.h"
#include "gpu/pinned_buffer.h"

namespace halfcaf {
namespace {

// One pinned slot per tensor, so the host-side collective sees the same n buffers as on CPU.
class StagedTensors {
 public:
  std::vector<void*> Slots(size_t n, size_t nbytes) {
    uint8_t* base = static_cast<uint8_t*>(pinned_.Reserve(n * nbytes));
    std::vector<void*> slots;
    for (size_t i = 0; i < n; ++i) slots.push_back(base + i * nbytes);
    return slots;
  }
  static void ToHost(const std::vector<Tensor*>& tensors, const std::vector<void*>& slots,
                     size_t count, cudaStream_t stream) {
    for (size_t i = 0; i < count; ++i) {
      HALFCAF_CUDA_CHECK(cudaMemcpyAsync(slots[i], tensors[i]->raw_data(), tensors[i]->nbytes(),
                                         cudaMemcpyDeviceToHost, stream));
    }
  }
  // Every tensor gets slot 0 (after the collective all slots hold the same result).
  static void ToDevice(const std::vector<Tensor*>& tensors, const void* slot0,
                       cudaStream_t stream) {
    for (Tensor* t : tensors) {
      HALFCAF_CUDA_CHECK(cudaMemcpyAsync(t->raw_mutable_data(), slot0, t->nbytes(),
                                         cudaMemcpyHostToDevice, stream));
    }
  }

 private:
  gpu::PinnedHostBuffer pinned_;
};

class AllreduceCUDAOp final : public Operator<CUDAContext> {
 public:
  AllreduceCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        support_(*this),
        algorithm_(ParseAllreduceAlgorithm(GetSingleArgument<std::string>("algorithm", ""))) {}

  void RunOnDevice() override {
    auto world = support_.World(0);
    std::vector<Tensor*> tensors = support_.InPlaceTensors(context_.device());
    Allreducer& reducer = CollectiveFor(reducer_, world, algorithm_);
    const cudaStream_t stream = context_.stream();
    const size_t nbytes = tensors[0]->nbytes();
    std::vector<void*> slots = staged_.Slots(tensors.size(), nbytes);
    // The previous run's host-to-device copies out of these slots are queued earlier on the same
    // stream, so they finish before these copies into them; the sync makes the data visible to
    // the host-side collective.
    StagedTensors::ToHost(tensors, slots, tensors.size(), stream);
    HALFCAF_CUDA_CHECK(cudaStreamSynchronize(stream));
    const bool ok = support_.Run(
        [&] { reducer.Run(slots, tensors[0]->numel(), tensors[0]->dtype()); });
    if (ok) StagedTensors::ToDevice(tensors, slots[0], stream);
  }

 private:
  CollectiveOpSupport support_;
  AllreduceAlgorithm algorithm_;
  std::unique_ptr<Allreducer> reducer_;
  StagedTensors staged_;
};

class BroadcastCUDAOp final : public Operator<CUDAContext> {
 public:
  BroadcastCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), support_(*this), root_(GetSingleArgument<int>("root", 0)) {}

  void RunOnDevice() override {
    auto world = support_.World(0);
    std::vector<Tensor*> tensors = support_.InPlaceTensors(context_.device());
    Broadcaster& broadcaster = CollectiveFor(broadcaster_, world);
    const cudaStream_t stream = context_.stream();
    std::vector<void*> slots = staged_.Slots(1, tensors[0]->nbytes());
    if (world->rank() == root_) StagedTensors::ToHost(tensors, slots, 1, stream);
    // Also on the other ranks: the previous run's copies out of the slot must be done before
    // the broadcast writes into it.
    HALFCAF_CUDA_CHECK(cudaStreamSynchronize(stream));
    const bool ok = support_.Run([&] { broadcaster.Run(slots, tensors[0]->nbytes(), root_); });
    if (ok) StagedTensors::ToDevice(tensors, slots[0], stream);
  }

 private:
  CollectiveOpSupport support_;
  int root_;
  std::unique_ptr<Broadcaster> broadcaster_;
  StagedTensors staged_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Allreduce, AllreduceCUDAOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(Allreduce, GLOO, AllreduceCUDAOp);
REGISTER_CUDA_OPERATOR(Broadcast, BroadcastCUDAOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(Broadcast, GLOO, BroadcastCUDAOp);

}  // namespace halfcaf
