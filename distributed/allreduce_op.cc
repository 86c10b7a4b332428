// Allreduce (engine GLOO): sums tensors over every process of a common world, in place.
#include "core/gradient.h"
#include "distributed/collective_op.h"

namespace halfcaf {
namespace {

class AllreduceOp final : public Operator<CPUContext> {
 public:
  AllreduceOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        support_(*this),
        algorithm_(ParseAllreduceAlgorithm(GetSingleArgument<std::string>("algorithm", ""))) {}

  void RunOnDevice() override {
    auto world = support_.World(0);
    std::vector<Tensor*> tensors = support_.InPlaceTensors(context_.device());
    Allreducer& reducer = CollectiveFor(reducer_, world, algorithm_);
    support_.Run([&] { reducer.Run(tensors); });
  }

 private:
  CollectiveOpSupport support_;
  AllreduceAlgorithm algorithm_;
  std::unique_ptr<Allreducer> reducer_;
};

}  // namespace

HALFCAF_REGISTER_DISTRIBUTED_OP(Allreduce, AllreduceOp, false);
NO_GRADIENT(Allreduce);

OPERATOR_SCHEMA(Allreduce)
    .NumInputs(2, 1 << 20)
    .NumOutputs(1, 1 << 20)
    .AllowInplace([](int in, int out) { return in == out + 1; })
    .SetDoc("Sums X1..Xn over every process of the common world (engine GLOO): afterwards every "
            "Xi on every rank holds the sum of all n * size tensors. In place: output i-1 must "
            "be the blob of input i. All Xi must have one size and dtype: float, or float16, "
            "which stays float16 on the wire and is added in float and rounded back to float16 "
            "after each addition (the same result on every rank). Gloo's algorithm is built on "
            "the first run and rebuilt only when the tensors' storage, size or dtype change; "
            "every rank must run its Allreduce ops in the same order. With algorithm ring, each "
            "rank adds in its own order, so rounded sums may differ between ranks in the last "
            "bit; the other algorithms give every rank the same bits. On CUDA the tensors are "
            "staged through pinned host memory on the op's stream (no NCCL, no GPUDirect). A "
            "peer that fails or stalls past the world's timeout makes the op throw naming the "
            "world, the rank and the timeout, or with `status_blob` records int32 [1] = 1 there "
            "and lets the net go on (Caffe2).")
    .Arg("algorithm", "halving_doubling (default, as in Caffe2), ring, ring_chunked, or bcube "
                      "(falls back to halving_doubling for world sizes it cannot split)")
    .Arg("status_blob", "blob recording a communication failure instead of throwing")
    .Input(0, "comm_world", "common world from CreateCommonWorld")
    .Input(1, "X1", "first tensor (more may follow: X2..Xn)")
    .Output(0, "X1", "the sum, in place (one output per input tensor)");

}  // namespace halfcaf
