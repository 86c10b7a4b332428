// Allgather (engine GLOO): every rank's tensors, concatenated, on every rank.
#include "core/gradient.h"
#include "distributed/collective_op.h"

namespace halfcaf {
namespace {

class AllgatherOp final : public Operator<CPUContext> {
 public:
  AllgatherOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), support_(*this) {}

  void RunOnDevice() override {
    auto world = support_.World(0);
    std::vector<const void*> inputs;
    const Tensor& first = Input(1);
    for (int i = 1; i < InputSize(); ++i) {
      const Tensor& x = Input(i);
      HALFCAF_ENFORCE(x.numel() == first.numel() && x.dtype() == first.dtype(),
                      "Allgather: every input must have the same size and dtype, got '",
                      input_name(1), "' ", first.DebugString(), " and '", input_name(i), "' ",
                      x.DebugString());
      inputs.push_back(x.raw_data());
    }
    Tensor* y = Output(0, {world->size() * (InputSize() - 1) * first.numel()});
    void* out = y->raw_mutable_data(first.dtype());
    Allgatherer& gatherer = CollectiveFor(gatherer_, world);
    support_.Run([&] { gatherer.Run(inputs, first.nbytes(), out); });
  }

 private:
  CollectiveOpSupport support_;
  std::unique_ptr<Allgatherer> gatherer_;
};

}  // namespace

HALFCAF_REGISTER_DISTRIBUTED_OP(Allgather, AllgatherOp, false);
NO_GRADIENT(Allgather);

OPERATOR_SCHEMA(Allgather)
    .NumInputs(2, 1 << 20)
    .NumOutputs(1)
    .SetDoc("Gathers X1..Xn of every rank into one flat tensor on every rank (engine GLOO; "
            "Gloo's ring all-gather): rank 0's X1..Xn, then rank 1's, and so on, size * n * "
            "numel elements of the inputs' dtype, as in Caffe2. The inputs must have one size "
            "and dtype. Failure handling as Allreduce.")
    .Arg("status_blob", "blob recording a communication failure instead of throwing")
    .Input(0, "comm_world", "common world from CreateCommonWorld")
    .Input(1, "X1", "first tensor (more may follow: X2..Xn)")
    .Output(0, "Y", "1-D, world size * n * numel(X1) elements");

}  // namespace halfcaf
