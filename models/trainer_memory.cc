// Trainer: memory planning of the training and evaluation nets (models/memory_plan.h): which
// blobs stay unshared, and the sizes from shape inference.
#include "data/dataset_reader.h"
#include "models/memory_plan.h"
#include "models/optimizer.h"
#include "models/trainer.h"

namespace halfcaf {

MemoryPlan Trainer::PlanNetMemory(const NetDef& net, const std::string& prefix,
                                  std::vector<std::shared_ptr<const void>>* hold) const {
  std::map<std::string, TensorShape> known = WorkspaceTensorShapes(ws_);
  // What the reader will produce: batch x sample (cropped), in the net's order and dtype.
  const OperatorDef& reader = net.op(0);
  if (reader.type() == "DataInput") {
    const ArgumentHelper a(reader);
    std::vector<int64_t> chw = opt_.synthetic_shape;
    if (opt_.data_format != "synthetic") {
      auto data = LoadDataSourceShared(opt_.data_format, a.GetSingleArgument<std::string>("source", ""),
                                       a.GetSingleArgument<std::string>("split", "train"),
                                       a.GetSingleArgument<int64_t>("per_class", 0));
      chw = data->sample_dims();
      hold->push_back(data);
    }
    if (opt_.crop > 0) chw[1] = chw[2] = opt_.crop;
    const int64_t b = a.GetSingleArgument<int64_t>("batch_size", 0);
    known[reader.output(0)] = TensorShape{
        opt_.order == "NHWC" ? std::vector<int64_t>{b, chw[1], chw[2], chw[0]}
                             : std::vector<int64_t>{b, chw[0], chw[1], chw[2]},
        opt_.precision};
    known[reader.output(1)] = TensorShape{{b}, DataType::INT32};
  }
  MemoryPlanOptions o;
  o.keep = KeptBlobs();
  o.prefix = prefix;
  o.bytes = InferBlobBytes(net, known);
  return PlanMemory(net, o);
}

std::set<std::string> Trainer::KeptBlobs() const {
  std::set<std::string> keep;
  for (const auto& op : init_.op()) keep.insert(op.output().begin(), op.output().end());
  std::vector<std::string> named{opt_.loss_blob, opt_.accuracy_blob, kLrBlob, kIterBlob};
  named.insert(named.end(), checkpoint_blobs_.begin(), checkpoint_blobs_.end());
  named.insert(named.end(), opt_.keep_blobs.begin(), opt_.keep_blobs.end());
  for (const auto& pg : param_grads_) {
    named.push_back(pg.param);
    named.push_back(pg.grad);
    if (!pg.copy.empty()) named.push_back(pg.copy);
  }
  for (const auto& p : params_) named.push_back(p.name);
  for (const auto& b : {opt_.loss_blob, opt_.accuracy_blob}) keep.insert(TestBlob(b));
  for (const auto& b : named) {
    keep.insert(b);
    for (size_t r = 0; r < replicas_.size(); ++r) keep.insert(Name(r, b));
  }
  return keep;
}

}  // namespace halfcaf
