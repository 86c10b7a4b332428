// Trainer, multi-process (distributed/, over Gloo): the training net cut where gradient buckets
// are complete, the start-up check and state broadcast, statistics averaged over the processes.
#include <algorithm>
#include <cstring>
#include <map>

#include "core/argument.h"
#include "data/reader_state.h"
#include "distributed/common_world.h"
#include "distributed/gradient_exchange.h"
#include "models/trainer.h"
#include "models/trainer_util.h"

namespace halfcaf {

void Trainer::CreateShardedNets(const std::string& type, int workers) {
  // Where each gradient is final: the last op of the body writing it on any replica.
  std::map<std::string, int> last_write;
  for (int i = 0; i < body_.op_size(); ++i) {
    for (const auto& o : body_.op(i).output()) last_write[o] = i;
  }
  struct Grad {
    std::string name;
    int ready;
    size_t bytes;
    DataType dtype;
  };
  std::vector<Grad> grads;
  for (const auto& pg : param_grads_) {
    Grad g{pg.grad, -1, 0, pg.copy.empty() ? DataType::FLOAT : pg.copy_dtype};
    for (size_t r = 0; r < std::max<size_t>(replicas_.size(), 1); ++r) {
      auto it = last_write.find(Name(r, pg.grad));
      HALFCAF_ENFORCE(it != last_write.end(), "no op of the training net writes the gradient '",
                      Name(r, pg.grad), "'");
      g.ready = std::max(g.ready, it->second);
    }
    g.bytes = static_cast<size_t>(ws_.GetTensor(Name(0, pg.param)).numel()) * DataTypeSize(g.dtype);
    grads.push_back(g);
  }
  std::stable_sort(grads.begin(), grads.end(),
                   [](const Grad& a, const Grad& b) { return a.ready < b.ready; });
  // Buckets of about bucket_bytes (one dtype each), in the order the backward pass finishes them.
  struct Bucket {
    std::vector<std::string> grads;
    size_t bytes = 0;
    int ready = -1;
    DataType dtype;
  };
  std::vector<Bucket> buckets;
  for (const Grad& g : grads) {
    if (buckets.empty() || buckets.back().bytes + g.bytes > static_cast<size_t>(opt_.bucket_bytes) ||
        g.dtype != buckets.back().dtype) {
      buckets.emplace_back();
      buckets.back().dtype = g.dtype;
    }
    Bucket& b = buckets.back();
    b.grads.push_back(g.name);
    b.bytes += g.bytes;
    b.ready = g.ready;
  }
  // The body cut after each bucket's last gradient (and its in-process sum into replica 0).
  std::vector<NetDef> parts(1);
  bucket_blobs_.clear();
  size_t next = 0;
  for (int i = 0; i < body_.op_size(); ++i) {
    *parts.back().add_op() = body_.op(i);
    while (next < buckets.size() && buckets[next].ready == i) {
      AddReduce(buckets[next].grads, replicas_, &parts.back());
      std::vector<std::string> names;
      for (const auto& g : buckets[next].grads) names.push_back(Name(0, g));
      bucket_blobs_.push_back(names);
      parts.emplace_back();
      ++next;
    }
  }
  NetDef post;
  for (const auto& pg : param_grads_) AddBroadcastBack({pg.grad}, replicas_, &post);
  for (const auto& op : tail_.op()) *post.add_op() = op;
  auto create = [&](NetDef net, const std::string& name) -> NetBase* {
    if (net.op_size() == 0) return nullptr;
    net.set_name(name);
    net.set_type(type);
    if (type == "dag") net.set_num_workers(workers);
    return ws_.CreateNet(net);
  };
  pre_exchange_nets_.clear();
  for (size_t k = 0; k < parts.size(); ++k) {
    pre_exchange_nets_.push_back(create(parts[k], "train_part" + std::to_string(k)));
  }
  post_exchange_net_ = create(post, "train_update");
  train_net_ = pre_exchange_nets_.at(0);
  // The exchange gets its own connections, so its thread never shares Gloo's slots with the
  // collectives of this thread (the start-up sync, the statistics).
  exchange_ = std::make_unique<GradientExchange>(opt_.world->Clone(),
                                                 ParseAllreduceAlgorithm(opt_.allreduce_algorithm));
  stats_reducer_ = std::make_unique<Allreducer>(opt_.world);
}

namespace {

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

void Trainer::SyncShards() {
  // The same net everywhere: every state blob's name, dtype and dims, and the replica count.
  std::string desc;
  int64_t values = 0;
  for (const auto& b : checkpoint_blobs_) {
    const Tensor& t = ws_.GetTensor(Name(0, b));
    desc += b + ":" + DataTypeName(t.dtype()) + DimsString(t.dims()) + ";";
    values += t.numel();
  }
  const int64_t replicas = static_cast<int64_t>(std::max<size_t>(replicas_.size(), 1));
  const int64_t mine[4] = {static_cast<int64_t>(Fnv1a(desc)),
                           static_cast<int64_t>(checkpoint_blobs_.size()), values, replicas};
  std::vector<int64_t> all(4 * static_cast<size_t>(shards_));
  Allgatherer(opt_.world).Run({mine}, sizeof(mine), all.data());
  for (int r = 1; r < shards_; ++r) {
    const int64_t* theirs = &all[4 * static_cast<size_t>(r)];
    HALFCAF_ENFORCE(std::equal(theirs, theirs + 4, all.data()),
                    "the processes of this run do not train the same net: rank ", r, " has ",
                    theirs[1], " state blobs holding ", theirs[2], " values and ", theirs[3],
                    " replica(s), rank 0 has ", all[1], " blobs, ", all[2], " values and ", all[3],
                    " replica(s)", theirs[1] == all[1] && theirs[2] == all[2]
                        ? " (the same sizes, other names, dtypes or shapes)" : "",
                    "; start every process with the same --net, --init_net, --dtype and "
                    "--replicas / --gpus count");
  }
  // Rank 0's state and data position, packed in one buffer, to everyone.
  std::vector<Tensor> host(checkpoint_blobs_.size());
  size_t nbytes = 3 * sizeof(int64_t);
  for (size_t i = 0; i < checkpoint_blobs_.size(); ++i) {
    host[i].CopyFrom(ws_.GetTensor(Name(0, checkpoint_blobs_[i])));
    nbytes += host[i].nbytes();
  }
  std::vector<uint8_t> buf(nbytes);
  const std::vector<int64_t> pos = train_reader_->GetState().ToVector();
  std::memcpy(buf.data(), pos.data(), 3 * sizeof(int64_t));
  size_t at = 3 * sizeof(int64_t);
  for (const Tensor& t : host) {
    std::memcpy(buf.data() + at, t.raw_data(), t.nbytes());
    at += t.nbytes();
  }
  Broadcaster(opt_.world).Run(std::vector<void*>{buf.data()}, nbytes, 0);
  if (shard_ == 0) return;
  at = 3 * sizeof(int64_t);
  for (size_t i = 0; i < host.size(); ++i) {
    std::memcpy(host[i].raw_mutable_data(), buf.data() + at, host[i].nbytes());
    at += host[i].nbytes();
    for (size_t r = 0; r < std::max<size_t>(replicas_.size(), 1); ++r) {
      const std::string name = Name(r, checkpoint_blobs_[i]);
      ws_.CreateTensor(name, ws_.GetTensor(name).device())->CopyFrom(host[i]);
    }
  }
  std::vector<int64_t> state(3);
  std::memcpy(state.data(), buf.data(), 3 * sizeof(int64_t));
  train_reader_->SetState(DataReaderState::FromVector(state));
}

void Trainer::MeanOverShards(std::vector<float>* values) {
  if (!opt_.world || values->empty()) return;
  // Always the same buffer and count: the Allreducer keeps its Gloo algorithm (a new one takes a
  // new slot, and every process must take the same slots in the same order).
  HALFCAF_ENFORCE(values->size() <= stats_buffer_.size(), "at most ", stats_buffer_.size(),
                  " values per exchange of statistics");
  std::fill(stats_buffer_.begin(), stats_buffer_.end(), 0.f);
  std::copy(values->begin(), values->end(), stats_buffer_.begin());
  stats_reducer_->Run({stats_buffer_.data()}, static_cast<int64_t>(stats_buffer_.size()),
                      DataType::FLOAT);
  for (size_t i = 0; i < values->size(); ++i) {
    (*values)[i] = stats_buffer_[i] / static_cast<float>(shards_);
  }
}

bool Trainer::AnyShard(bool flag) {
  if (!opt_.world) return flag;
  HALFCAF_ENFORCE(stats_reducer_ != nullptr, "call Initialize or Resume first");
  std::vector<float> v{flag ? 1.f : 0.f};
  MeanOverShards(&v);
  return v[0] > 0;
}

}  // namespace halfcaf
