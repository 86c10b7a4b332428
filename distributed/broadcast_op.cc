// Broadcast (engine GLOO): copies the root's tensors to every process of a common world.
#include "core/gradient.h"
#include "distributed/collective_op.h"

namespace halfcaf {
namespace {

class BroadcastOp final : public Operator<CPUContext> {
 public:
  BroadcastOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), support_(*this), root_(GetSingleArgument<int>("root", 0)) {}

  void RunOnDevice() override {
    auto world = support_.World(0);
    std::vector<Tensor*> tensors = support_.InPlaceTensors(context_.device());
    Broadcaster& broadcaster = CollectiveFor(broadcaster_, world);
    support_.Run([&] { broadcaster.Run(tensors, root_); });
  }

 private:
  CollectiveOpSupport support_;
  int root_;
  std::unique_ptr<Broadcaster> broadcaster_;
};

}  // namespace

HALFCAF_REGISTER_DISTRIBUTED_OP(Broadcast, BroadcastOp, false);
NO_GRADIENT(Broadcast);

OPERATOR_SCHEMA(Broadcast)
    .NumInputs(2, 1 << 20)
    .NumOutputs(1, 1 << 20)
    .AllowInplace([](int in, int out) { return in == out + 1; })
    .SetDoc("Copies the root rank's X1 into X1..Xn of every rank of the common world (engine "
            "GLOO; Gloo's one-to-all broadcast). In place like Allreduce: output i-1 is input i; "
            "all Xi have one size and dtype (any dtype; bytes are copied, so float16 stays "
            "float16). Same algorithm caching, CUDA staging and failure handling as Allreduce.")
    .Arg("root", "the rank whose X1 is sent (default 0)")
    .Arg("status_blob", "blob recording a communication failure instead of throwing")
    .Input(0, "comm_world", "common world from CreateCommonWorld")
    .Input(1, "X1", "first tensor (more may follow: X2..Xn)")
    .Output(0, "X1", "the root's X1, in place (one output per input tensor)");

}  // namespace halfcaf
