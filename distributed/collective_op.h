// What the distributed operators share: reading the common-world input, checking the in-place
// tensors X1..Xn, and Caffe2's `status_blob` (a communication failure is recorded there instead
// of thrown).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/operator.h"
#include "distributed/common_world.h"

namespace halfcaf {

class CollectiveOpSupport {
 public:
  // Creates the status blob (empty) when the op names one, as Caffe2 does.
  explicit CollectiveOpSupport(OperatorBase& op);

  // The common world in input `i` (throws naming the blob if it holds something else).
  std::shared_ptr<CommonWorld> World(int i) const;

  // Inputs 1..n, which must be outputs 0..n-1 (the same blobs: the op works in place), all
  // initialized tensors of one size and dtype.
  std::vector<Tensor*> InPlaceTensors(Device device);

  // Runs fn. A CommunicationError is rethrown, or, with a status blob, logged and recorded there
  // (an int32 tensor [1] holding 1; Caffe2's signalFailure) and false is returned; the net then
  // goes on (Caffe2's op returned false and the net stopped), so the caller checks the blob.
  // Success leaves the blob as it was, as in Caffe2.
  template <typename Fn>
  bool Run(Fn&& fn) {
    try {
      fn();
      return true;
    } catch (const CommunicationError& e) {
      if (status_blob_.empty()) throw;
      RecordFailure(e);
      return false;
    }
  }

 private:
  void RecordFailure(const CommunicationError& e);

  OperatorBase& op_;
  std::string status_blob_;
};

// The op's collective (Allreducer, Broadcaster, Allgatherer) for `world`, made anew when the
// world input holds another world than last time.
template <class Collective, class... Args>
Collective& CollectiveFor(std::unique_ptr<Collective>& c,
                          const std::shared_ptr<CommonWorld>& world, Args&&... args) {
  if (!c || c->world() != world) {
    c = std::make_unique<Collective>(world, std::forward<Args>(args)...);
  }
  return *c;
}

// Registers Op for `type` on CPU under the default engine and GLOO (Caffe2's engine name; Gloo is
// the only implementation), and, with `also_cuda` in a CUDA build, the same class on CUDA (for
// ops that touch no tensor data).
template <class Op>
bool RegisterDistributedOp(const char* type, bool also_cuda) {
  auto create = [](const OperatorDef& def, Workspace* ws) {
    return std::unique_ptr<OperatorBase>(new Op(def, ws));
  };
  for (const char* engine : {"", "GLOO"}) {
    OperatorRegistry::Register(DeviceType::CPU, type, engine, create);
#if HALFCAF_WITH_CUDA
    if (also_cuda) OperatorRegistry::Register(DeviceType::CUDA, type, engine, create);
#endif
  }
  return true;
}

#define HALFCAF_REGISTER_DISTRIBUTED_OP(type, cls, also_cuda)                  \
  [[maybe_unused]] static const bool g_distributed_registered_##type =         \
      ::halfcaf::RegisterDistributedOp<cls>(#type, also_cuda)

}  // namespace halfcaf
