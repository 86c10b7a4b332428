// Trainer: checkpoints (written atomically, refused when the state is not finite) and exact
// resume, random generators included.
#include <algorithm>
#include <map>
#include <sstream>

#include <glog/logging.h>

#include "core/tensor_proto.h"
#include "data/reader_state.h"
#include "models/trainer.h"
#include "models/trainer_util.h"

namespace halfcaf {

namespace {

const char kReaderState[] = "data_reader_state";
// Checkpoint blobs holding the generator state of the k-th random op (Dropout) of the train net.
const char kRngStatePrefix[] = "random_state_";

bool IsRandomOp(const OperatorBase& op) { return op.type() == "Dropout"; }

// The random ops of the nets, in order.
std::vector<OperatorBase*> RandomOps(const std::vector<NetBase*>& nets) {
  std::vector<OperatorBase*> out;
  for (NetBase* net : nets) {
    for (const auto& op : net->ops()) {
      if (IsRandomOp(*op) && op->random_generator() != nullptr) out.push_back(op.get());
    }
  }
  return out;
}

// A generator's state as bytes in a uint8 tensor, and back.
void SaveRandomState(const std::mt19937& rng, Tensor* t) {
  std::ostringstream ss;
  ss << rng;
  const std::string bytes = ss.str();
  t->Resize({static_cast<int64_t>(bytes.size())});
  std::copy(bytes.begin(), bytes.end(), t->mutable_data<uint8_t>());
}

void LoadRandomState(const Tensor& t, const std::string& what, std::mt19937* rng) {
  HALFCAF_ENFORCE(t.dtype() == DataType::UINT8, what, " is ", t.DebugString(),
                  ", not a generator state");
  std::istringstream ss(std::string(t.data<uint8_t>(), t.data<uint8_t>() + t.numel()));
  std::mt19937 restored;
  ss >> restored;
  HALFCAF_ENFORCE(!ss.fail(), what, " does not hold a valid generator state");
  *rng = restored;
}

}  // namespace

void Trainer::Resume(const std::string& path) {
  if (opt_.world && shard_ != 0) {
    // Rank 0 reads the checkpoint (other machines need not see the file) and sends its state.
    Initialize();
    return;
  }
  ws_.RunNetOnce(init_);
  std::map<std::string, std::vector<int64_t>> dims;
  for (const auto& b : checkpoint_blobs_) dims[b] = ws_.GetTensor(Name(0, b)).dims();
  Workspace ckpt;
  FeedTensorProtosFile(path, &ckpt, Checksum::kRequired);
  for (const auto& b : checkpoint_blobs_) {
    // Checkpoints from before the skipped-step runs were tracked start them at 0.
    if ((b == kSkipStreak || b == kMaxSkipStreak) && !ckpt.HasBlob(b)) continue;
    HALFCAF_ENFORCE(ckpt.HasBlob(b), path, ": the checkpoint has no blob '", b,
                    "' (was it written for another net?)");
    const Tensor& t = ckpt.GetTensor(b);
    HALFCAF_ENFORCE(t.dims() == dims[b], path, ": blob '", b, "' has dims ", DimsString(t.dims()),
                    " in the checkpoint but ", DimsString(dims[b]), " in this net");
    // Into every replica's tensor, on the device that holds it.
    for (size_t r = 0; r < std::max<size_t>(replicas_.size(), 1); ++r) {
      const std::string name = Name(r, b);
      ws_.CreateTensor(name, ws_.GetTensor(name).device())->CopyFrom(t);
    }
  }
  HALFCAF_ENFORCE(ckpt.HasBlob(kReaderState), path, ": the checkpoint has no data position");
  const Tensor& st = ckpt.GetTensor(kReaderState);
  CreateNets();
  // Random ops continue their sequences. States are matched by position among the train net's
  // random ops (replica 0's come first); ops without a saved state (more replicas than the
  // checkpoint had, or a checkpoint from before random states were saved) start fresh.
  const std::vector<OperatorBase*> random_ops = RandomOps(TrainNets());
  for (size_t k = 0; k < random_ops.size(); ++k) {
    const std::string name = kRngStatePrefix + std::to_string(k);
    if (!ckpt.HasBlob(name)) {
      LOG(WARNING) << path << ": no random state for " << random_ops[k]->DebugName()
                   << " (random op " << k << "); its draws restart";
      continue;
    }
    LoadRandomState(ckpt.GetTensor(name), path + ": blob '" + name + "'",
                    random_ops[k]->random_generator());
  }
  train_reader_->SetState(DataReaderState::FromVector(
      std::vector<int64_t>(st.data<int64_t>(), st.data<int64_t>() + st.numel())));
  if (opt_.world) SyncShards();
}

void Trainer::SaveCheckpoint(const std::string& path) {
  HALFCAF_ENFORCE(train_net_ != nullptr, "nothing to save before Initialize or Resume");
  try {
    CheckSkippedSteps();
  } catch (EnforceNotMet& e) {
    e.AddContext("checkpoint " + path + " not written; the previous one, if any, is kept");
    throw;
  }
  std::vector<int64_t> state = train_reader_->GetState().ToVector();
  Tensor* t = ws_.CreateTensor(kReaderState);
  t->Resize({static_cast<int64_t>(state.size())});
  std::copy(state.begin(), state.end(), t->mutable_data<int64_t>());
  std::vector<std::string> names = checkpoint_blobs_;
  names.push_back(kReaderState);
  // Replica 0's blobs under their single-device names (a checkpoint resumes with any number of
  // replicas, or none); without replicas the workspace's own blobs.
  Workspace out;
  Workspace* src = &ws_;
  if (!replicas_.empty()) {
    src = &out;
    for (const auto& b : checkpoint_blobs_) out.CreateTensor(b)->CopyFrom(ws_.GetTensor(Name(0, b)));
    out.CreateTensor(kReaderState)->CopyFrom(*t);
  }
  const std::vector<OperatorBase*> random_ops = RandomOps(TrainNets());
  for (size_t k = 0; k < random_ops.size(); ++k) {
    const std::string name = kRngStatePrefix + std::to_string(k);
    SaveRandomState(*random_ops[k]->random_generator(), src->CreateTensor(name));
    names.push_back(name);
  }
  TensorProtos protos;
  std::string bad;
  int64_t bad_values = 0, bad_blobs = 0;
  for (const auto& name : names) {
    TensorProto* p = protos.add_protos();
    TensorToProto(src->GetTensor(name), name, p);
    if (const int64_t n = CountNonFinite(*p)) {
      if (bad_blobs++ == 0) bad = name;
      bad_values += n;
    }
  }
  HALFCAF_ENFORCE(bad_blobs == 0, "training diverged at iteration ", iteration(), ": ", bad_values,
                  " parameter or optimizer values are inf or NaN (in '", bad, "'",
                  bad_blobs > 1 ? " and " + std::to_string(bad_blobs - 1) + " other blobs" : "",
                  "); checkpoint ", path, " not written, the previous one, if any, is kept "
                  "(a lower learning rate may help)");
  WriteTensorProtosFile(protos, path);
}

}  // namespace halfcaf
