// Trainer: the data readers, device placement, data-parallel replicas and the evaluation net.
#include <algorithm>
#include <set>

#include <glog/logging.h>

#include "core/argument.h"
#include "data/reader_state.h"
#include "models/optimizer.h"
#include "models/trainer.h"
#include "models/trainer_util.h"

namespace halfcaf {

const char kWindowLoss[] = "window_loss_sum";
const char kWindowAccuracy[] = "window_accuracy_sum";

NetDef TestModeForward(const NetDef& forward) {
  NetDef out = forward;
  for (auto& op : *out.mutable_op()) {
    if (op.type() == "SpatialBN" || op.type() == "Dropout") {
      SetArgument(&op, "is_test", 1);
      while (op.output_size() > 1) op.mutable_output()->RemoveLast();
    }
  }
  return out;
}

bool StaysOnCpu(const OperatorDef& op) {
  if (op.type() == "Iter") return true;
  if (op.output_size() != 1) return false;
  // kIterBlob, or a named net's "<net>/iter".
  const std::string& out = op.output(0);
  const std::string suffix = std::string("/") + kIterBlob;
  return out == kIterBlob || (out.size() > suffix.size() &&
                              out.compare(out.size() - suffix.size(), suffix.size(), suffix) == 0);
}

void PlaceOnDevice(NetDef* net, Device device, const std::string& data, const std::string& label) {
  if (device.type == DeviceType::CPU) return;
  DeviceOption opt;
  opt.set_device_type(static_cast<int>(device.type));
  opt.set_device_id(device.id);
  NetDef out = *net;
  out.clear_op();
  for (OperatorDef op : net->op()) {
    const bool cpu_only = op.type() == "DataInput" || StaysOnCpu(op);
    if (op.type() == "DataInput") {
      for (auto& o : *op.mutable_output()) o += "_cpu";
      *out.add_op() = op;
      for (const auto& b : {data, label}) {
        OperatorDef copy = MakeOperatorDef("CopyCPUToGPU", "", {b + "_cpu"}, {b});
        *copy.mutable_device_option() = opt;
        *out.add_op() = copy;
      }
      continue;
    }
    if (!cpu_only) {
      const bool seeded = op.has_device_option() && op.device_option().has_random_seed();
      const uint32_t seed = op.device_option().random_seed();
      *op.mutable_device_option() = opt;
      if (seeded) op.mutable_device_option()->set_random_seed(seed);  // a seed given stays
    }
    *out.add_op() = op;
  }
  *net = out;
}

void RenameBlob(const std::string& from, const std::string& to, NetDef* net) {
  for (auto& op : *net->mutable_op()) {
    for (auto& b : *op.mutable_input()) {
      if (b == from) b = to;
    }
    for (auto& b : *op.mutable_output()) {
      if (b == from) b = to;
    }
  }
}

NetDef Trainer::MakeDataNet(const std::string& source, bool train, int64_t global_batch,
                            const std::string& data, const std::string& label) const {
  const int64_t batch_size = global_batch / shards_;  // this shard's slice of each batch
  // A synthetic set is a function of the seed, so the test reader sees the training samples
  // (in order): synthetic data measures speed and fitting, not generalisation.
  const int64_t seed = static_cast<int64_t>(opt_.seed);
  std::vector<Argument> args{
      MakeArgument("source", source),
      MakeArgument("format", opt_.data_format),
      MakeArgument("batch_size", batch_size),
      MakeArgument("shuffle", train && opt_.shuffle ? 1 : 0),
      MakeArgument("seed", seed),
      MakeArgument("scale", opt_.data_scale),
      MakeArgument("mean", opt_.data_mean),
      MakeArgument("std", opt_.data_std),
      MakeArgument("order", opt_.order),
      MakeArgument("dtype", std::string(DataTypeName(opt_.precision))),
      MakeArgument("prefetch", opt_.prefetch ? 1 : 0),
      MakeArgument("crop", opt_.crop),
      MakeArgument("pad", opt_.pad),
      MakeArgument("mirror", opt_.mirror ? 1 : 0),
      MakeArgument("is_test", train ? 0 : 1),
      MakeArgument("num_shards", static_cast<int64_t>(shards_)),
      MakeArgument("shard_id", static_cast<int64_t>(shard_))};
  if (opt_.data_format == "synthetic") {
    args.push_back(MakeArgument("synthetic_shape", opt_.synthetic_shape));
    args.push_back(MakeArgument("num_classes", opt_.num_classes));
    args.push_back(MakeArgument("synthetic_count", opt_.synthetic_count));
  }
  // A Quick, Draw! folder holds both sets: the test reader takes its held-out split.
  if (opt_.data_format == "quickdraw") {
    args.push_back(MakeArgument("split", std::string(train ? "train" : "test")));
  }
  NetDef net;
  *net.add_op() = MakeOperatorDef("DataInput", train ? "train_reader" : "test_reader", {},
                                  {data, label}, args);
  return net;
}

void Trainer::BuildReplicated(const NetDef& step, const NetDef& update, const NetDef& state) {
  // Reader (CPU, whole batch) -> Split along the batch axis -> one share per replica, copied to
  // its device.
  NetDef& train = body_;
  train = MakeDataNet(opt_.train_data, true, opt_.batch_size, opt_.data_blob, opt_.label_blob);
  const bool cuda = replicas_[0].device.type == DeviceType::CUDA;
  for (const std::string& blob : {opt_.data_blob, opt_.label_blob}) {
    std::vector<std::string> shares;
    for (const auto& r : replicas_) shares.push_back(r.Blob(blob) + (cuda ? "_cpu" : ""));
    *train.add_op() = MakeOperatorDef("Split", "", {blob}, shares, {MakeArgument("axis", 0)});
    if (!cuda) continue;
    for (const auto& r : replicas_) {
      OperatorDef copy = MakeOperatorDef("CopyCPUToGPU", "", {r.Blob(blob) + "_cpu"}, {r.Blob(blob)});
      copy.mutable_device_option()->set_device_type(static_cast<int>(r.device.type));
      copy.mutable_device_option()->set_device_id(r.device.id);
      *train.add_op() = copy;
    }
  }
  auto append = [](const NetDef& from, NetDef* to) {
    for (const auto& op : from.op()) *to->add_op() = op;
  };
  for (size_t i = 0; i < replicas_.size(); ++i) {
    NetDef replica = ReplicateNet(step, replicas_[i], StaysOnCpu);
    // The seeds the forward net's random ops were given (BuildNets): each replica of the run, in
    // this process or another, draws its own (ReplicaSalt).
    const uint64_t salt = ReplicaSalt(i);
    if (salt > 0) MixRandomSeeds(&replica, salt);
    append(replica, &train);
  }
  tail_.clear_op();
  for (const auto& r : replicas_) append(ReplicateNet(update, r, StaysOnCpu), &tail_);

  // Replica 0 initialises; the others copy every blob it made, so all start identical.
  init_ = ReplicateNet(state, replicas_[0], StaysOnCpu);
  init_.set_name("train_init");
  std::set<std::string> on_cpu;
  for (const auto& op : state.op()) {
    if (StaysOnCpu(op)) on_cpu.insert(op.output().begin(), op.output().end());
  }
  for (size_t i = 1; i < replicas_.size(); ++i) {
    for (const auto& b : checkpoint_blobs_) {
      OperatorDef copy = MakeOperatorDef("Copy", "", {Name(0, b)}, {Name(i, b)});
      const Device d = on_cpu.count(b) ? Device{} : replicas_[i].device;
      copy.mutable_device_option()->set_device_type(static_cast<int>(d.type));
      copy.mutable_device_option()->set_device_id(d.id);
      *init_.add_op() = copy;
    }
  }
}

void Trainer::CreateTestNet() {
  // The evaluation batch must divide the test set, so every sample counts exactly once (and be a
  // multiple of the number of shards, which share each batch). The net is built with the
  // preferred batch (the training batch, at least 100) and its reader reports the set's size;
  // only when that batch does not divide it is the net built again (the set is read from disk a
  // second time only then). A set that no such batch divides loses its last partial batch.
  const int64_t preferred = (std::max<int64_t>(opt_.batch_size, 100) + shards_ - 1) / shards_ *
                            shards_;
  int64_t b = preferred;
  BuildTestNet(b);
  const int64_t n = test_reader_->num_samples();
  if (n % b != 0) {
    int64_t best = 0;
    for (int64_t c = preferred; c >= shards_ && best == 0; c -= shards_) {
      if (n % c == 0) best = c;
    }
    if (best != 0 && best != b) {
      b = best;
      BuildTestNet(b);
    }
    if (best == 0) {
      LOG(WARNING) << "no multiple of " << shards_ << " up to " << preferred << " divides the "
                   << n << " test samples: evaluation skips the last " << n % b;
    }
  }
  test_batches_ = n / b;
}

void Trainer::BuildTestNet(int64_t batch) {
  // Replica 0 evaluates (its BN statistics).
  const std::string data = Name(0, opt_.data_blob), label = Name(0, opt_.label_blob);
  test_ = MakeDataNet(opt_.test_data, false, batch, data, label);
  test_.set_name("test");
  NetDef fwd = test_forward_;
  if (!replicas_.empty()) fwd = ReplicateNet(fwd, Replica{Device{}, replicas_[0].prefix}, {});
  for (const auto& op : fwd.op()) *test_.add_op() = op;
  PlaceOnDevice(&test_, opt_.device, data, label);
  AssignRandomSeeds(&test_, opt_.seed, "test");
  // Its loss and accuracy get their own blobs, so an evaluation leaves the training step's
  // (which ReadStats reports) as they were.
  for (const auto& b : {opt_.loss_blob, opt_.accuracy_blob}) RenameBlob(Name(0, b), TestBlob(b), &test_);
  std::vector<std::shared_ptr<const void>> hold;
  if (opt_.optimize_memory) {
    test_plan_ = PlanNetMemory(test_, "__shared_test_", &hold);
    ApplyMemoryPlan(test_plan_, &test_);
  }
  test_net_ = ws_.CreateNet(test_);
  test_reader_ = dynamic_cast<ResumableReader*>(test_net_->ops().at(0).get());
  HALFCAF_ENFORCE(test_reader_ != nullptr, "the test net's first op is not its DataInput reader");
}

EvalStats Trainer::Evaluate() {
  HALFCAF_ENFORCE(train_net_ != nullptr, "call Initialize or Resume before Evaluate");
  HALFCAF_ENFORCE(!opt_.test_data.empty() || opt_.data_format == "synthetic",
                  "no test data given");
  if (!test_net_) CreateTestNet();
  DataReaderState start = test_reader_->GetState();
  start.epoch = 0;
  start.index = 0;
  test_reader_->SetState(start);
  EvalStats e;
  const bool has_acc = NetWrites(test_, TestBlob(opt_.accuracy_blob));
  for (int64_t i = 0; i < test_batches_; ++i) {
    test_net_->Run();
    e.loss += ReadScalar(TestBlob(opt_.loss_blob));
    if (has_acc) e.accuracy += ReadScalar(TestBlob(opt_.accuracy_blob));
  }
  test_net_->CheckDeferredErrors();
  if (opt_.world) {
    std::vector<float> sums{static_cast<float>(e.loss), static_cast<float>(e.accuracy)};
    MeanOverShards(&sums);
    e.loss = sums[0];
    e.accuracy = sums[1];
  }
  e.loss /= static_cast<double>(test_batches_);
  e.accuracy /= static_cast<double>(test_batches_);
  e.samples = test_batches_ * test_reader_->batch_size() * shards_;
  return e;
}

}  // namespace halfcaf
