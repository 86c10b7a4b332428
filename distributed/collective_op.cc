#include "distributed/collective_op.h"

#include <glog/logging.h>

namespace halfcaf {

CollectiveOpSupport::CollectiveOpSupport(OperatorBase& op)
    : op_(op), status_blob_(op.GetSingleArgument<std::string>("status_blob", "")) {
  if (!status_blob_.empty()) op.workspace()->CreateBlob(status_blob_);
}

std::shared_ptr<CommonWorld> CollectiveOpSupport::World(int i) const {
  const Blob& blob = op_.InputBlob(i);
  HALFCAF_ENFORCE(blob.IsType<CommonWorld>(), op_.type(), ": input ", i, " ('",
                  op_.input_name(i), "') must be a common world (CreateCommonWorld), it holds ",
                  blob.TypeName());
  return blob.GetShared<CommonWorld>();
}

std::vector<Tensor*> CollectiveOpSupport::InPlaceTensors(Device device) {
  HALFCAF_ENFORCE_EQ(op_.InputSize() - 1, op_.OutputSize(), op_.type(),
                     ": expected one output per tensor input (in place)");
  std::vector<Tensor*> tensors;
  for (int i = 1; i < op_.InputSize(); ++i) {
    HALFCAF_ENFORCE(op_.IsInputOutputAlias(i, i - 1), op_.type(), ": input ", i, " ('",
                    op_.input_name(i), "') and output ", i - 1, " ('", op_.output_name(i - 1),
                    "') must be the same blob (the operator works in place)");
    const Tensor& x = op_.InputBlob(i).GetTensor();
    HALFCAF_ENFORCE(x.initialized(), op_.type(), ": input '", op_.input_name(i),
                    "' is an empty tensor");
    HALFCAF_ENFORCE(x.device() == device, op_.type(), ": input '", op_.input_name(i), "' is on ",
                    x.device().ToString(), ", the operator runs on ", device.ToString());
    if (!tensors.empty()) {
      const Tensor& first = *tensors[0];
      HALFCAF_ENFORCE(x.numel() == first.numel() && x.dtype() == first.dtype(), op_.type(),
                      ": every tensor must have the same size and dtype, got '",
                      op_.input_name(1), "' ", first.DebugString(), " and '", op_.input_name(i),
                      "' ", x.DebugString());
    }
    tensors.push_back(op_.OutputBlob(i - 1)->GetMutableTensor(device));
  }
  return tensors;
}

void CollectiveOpSupport::RecordFailure(const CommunicationError& e) {
  LOG(ERROR) << op_.DebugName() << ": " << e.what() << " (recorded in status blob '"
             << status_blob_ << "')";
  Tensor* status = op_.workspace()->CreateBlob(status_blob_)->GetMutableTensor(Device());
  status->Resize({1});
  status->mutable_data<int32_t>()[0] = 1;
}

}  // namespace halfcaf
