#include "distributed/common_world.h"

#include <signal.h>

#include <cctype>
#include <climits>
#include <cstring>
#include <cmath>
#include <thread>

#include <gloo/allgather_ring.h>
#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_one.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/ibverbs/device.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/pair.h>
#include <gloo/types.h>

#include "core/bfloat16.h"
#include "core/half.h"
#include "distributed/store_handler.h"

// Gloo has no bfloat16 type. Its algorithms reduce any T through gloo::sum<T>, which would add T
// values; halfcaf's BFloat16 adds in float and rounds once per addition (as Gloo's float16 does).
namespace gloo {
template <>
void sum<halfcaf::BFloat16>(void* c, const void* a, const void* b, size_t n) {
  auto* out = static_cast<halfcaf::BFloat16*>(c);
  const auto* x = static_cast<const halfcaf::BFloat16*>(a);
  const auto* y = static_cast<const halfcaf::BFloat16*>(b);
  for (size_t i = 0; i < n; ++i) {
    out[i] = halfcaf::BFloat16(static_cast<float>(x[i]) + static_cast<float>(y[i]));
  }
}
}  // namespace gloo

namespace halfcaf {

static_assert(sizeof(gloo::float16) == sizeof(Half), "gloo::float16 and Half are both binary16");

bool GlooAvailable() { return true; }

const char* GlooMissingHint() {
  return "the distributed operators need Gloo: install libgloo-dev (apt) and rebuild with "
         "HALFCAF_USE_GLOO=AUTO";
}

namespace {

using Ms = std::chrono::milliseconds;

// Gloo reads and writes through our StoreHandler, under the world's key prefix.
class GlooStore : public gloo::rendezvous::Store {
 public:
  GlooStore(StoreHandler& store, std::string prefix, Ms timeout)
      : store_(store), prefix_(std::move(prefix)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    store_.Set(prefix_ + key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    store_.Wait({prefix_ + key}, timeout_);
    const std::string v = store_.Get(prefix_ + key);
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const Ms& timeout) override {
    std::vector<std::string> full;
    for (const auto& k : keys) full.push_back(prefix_ + k);
    store_.Wait(full, timeout.count() > 0 ? timeout : timeout_);
  }

 private:
  StoreHandler& store_;
  std::string prefix_;
  Ms timeout_;
};

// A peer that closes its socket must not kill this process with SIGPIPE: the write fails with
// EPIPE instead and Gloo reports it. Only the default action is replaced.
void IgnoreSigpipe() {
  struct sigaction old;
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
    signal(SIGPIPE, SIG_IGN);
  }
}

std::shared_ptr<gloo::transport::Device> CreateDevice(const CommonWorldOptions& o) {
  if (o.transport == "tcp") {
    gloo::transport::tcp::attr attr;
    if (!o.interface.empty()) attr.iface = o.interface;
    return gloo::transport::tcp::CreateDevice(attr);
  }
  if (o.transport == "ibverbs") {
    gloo::transport::ibverbs::attr attr;
    attr.name = o.interface;
    attr.port = 1;
    attr.index = 0;
    return gloo::transport::ibverbs::CreateDevice(attr);
  }
  HALFCAF_THROW("unknown transport '", o.transport, "' (expected tcp or ibverbs)");
}

// Every rank announces itself, then waits for the others; past the timeout the error lists who
// is missing (Gloo's own rendezvous would only name a store key).
void WaitForAllRanks(StoreHandler& store, const std::string& prefix,
                     const CommonWorldOptions& o) {
  const auto key = [&](int r) { return prefix + "arrived/" + std::to_string(r); };
  // Only this rank ever writes its key: if it is there, an earlier run left it, and its other
  // keys (stale addresses) would be taken as this run's.
  HALFCAF_ENFORCE(!store.Check({key(o.rank)}), "CreateCommonWorld '", o.name, "': ",
                  store.Describe(), " already holds rank ", o.rank, "'s key '", key(o.rank),
                  "' from an earlier run; use a new folder or prefix for each run (or another "
                  "world name), or remove the old one");
  store.Set(key(o.rank), "1");
  std::vector<std::string> keys;
  for (int r = 0; r < o.size; ++r) keys.push_back(key(r));
  const auto start = std::chrono::steady_clock::now();
  while (!store.Check(keys)) {
    if (std::chrono::steady_clock::now() - start >= Ms(o.timeout_ms)) {
      std::string missing;
      int n = 0;
      for (int r = 0; r < o.size; ++r) {
        if (!store.Check({key(r)})) missing += (n++ ? ", " : "") + std::to_string(r);
      }
      throw CommunicationError(
          __FILE__, __LINE__,
          MakeString("CreateCommonWorld '", o.name, "': rank(s) ", missing, " of ", o.size,
                     " did not arrive at the rendezvous within ", o.timeout_ms,
                     " ms (this is rank ", o.rank, "; ", store.Describe(), ")"));
    }
    std::this_thread::sleep_for(Ms(5));
  }
}

// Caffe2's choice of bcube base for a world of `nodes` ranks: the largest base in 6..2 of which
// nodes is a power, or a multiple below its square; -1 if none.
int BcubeBase(int nodes) {
  for (int base : {6, 5, 4, 3, 2}) {
    int p = 1;
    while (p < nodes) p *= base;
    if (p == nodes) return base;
    if (nodes < base * base && nodes % base == 0) return base;
  }
  return -1;
}

template <typename T>
std::unique_ptr<gloo::Algorithm> MakeAllreduce(AllreduceAlgorithm kind,
                                               const std::shared_ptr<gloo::Context>& ctx,
                                               const std::vector<void*>& buffers, int count) {
  std::vector<T*> ptrs;
  for (void* b : buffers) ptrs.push_back(static_cast<T*>(b));
  switch (kind) {
    case AllreduceAlgorithm::kRing:
      return std::make_unique<gloo::AllreduceRing<T>>(ctx, ptrs, count);
    case AllreduceAlgorithm::kRingChunked:
      return std::make_unique<gloo::AllreduceRingChunked<T>>(ctx, ptrs, count);
    case AllreduceAlgorithm::kBcube: {
      const int base = BcubeBase(ctx->size);
      if (base > 0) {
        ctx->base = base;
        return std::make_unique<gloo::AllreduceBcube<T>>(ctx, ptrs, count);
      }
      break;
    }
    case AllreduceAlgorithm::kHalvingDoubling: break;
  }
  return std::make_unique<gloo::AllreduceHalvingDoubling<T>>(ctx, ptrs, count);
}

void CheckOpen(const std::shared_ptr<CommonWorld>& world, const char* what) {
  HALFCAF_ENFORCE(world != nullptr, what, ": no common world");
  HALFCAF_ENFORCE(!world->closed(), what, ": ", world->Describe(),
                  " is closed (DestroyCommonWorld)");
}

}  // namespace

// ---- CommonWorld -------------------------------------------------------------------------------

CommonWorld::CommonWorld(std::shared_ptr<gloo::Context> context, std::string name,
                         int64_t timeout_ms)
    : context_(std::move(context)),
      name_(std::move(name)),
      rank_(context_->rank),
      size_(context_->size),
      timeout_ms_(timeout_ms) {
  // Gloo's messages about a failed connection quote the peer's end of it ("Connection closed by
  // peer [127.0.0.1]:34958"). Every rank tells the others the addresses of its ends (one per
  // pair), so a failure can be traced to a rank.
  constexpr size_t kLen = 64;
  const size_t n = static_cast<size_t>(size_);
  std::vector<char> mine(n * kLen, 0), all(n * n * kLen, 0);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const std::string a = context_->getPair(r)->address().str();
    std::strncpy(&mine[r * kLen], a.c_str(), kLen - 1);
  }
  if (size_ > 1) {
    try {
      gloo::AllgatherRing<char>(context_, {mine.data()}, all.data(), static_cast<int>(n * kLen))
          .run();
    } catch (...) {
      RethrowAsCommunicationError("CreateCommonWorld (exchanging connection addresses)");
    }
  }
  peer_addresses_.resize(n);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    for (size_t k = 0; k < n; ++k) {
      const char* a = &all[(r * n + k) * kLen];
      if (*a) peer_addresses_[r].emplace_back(a);
    }
  }
}

std::string CommonWorld::RanksNamedIn(const std::string& message) const {
  std::string ranks;
  for (int r = 0; r < size_ && r < static_cast<int>(peer_addresses_.size()); ++r) {
    bool named = false;
    for (const std::string& a : peer_addresses_[static_cast<size_t>(r)]) {
      const size_t at = message.find(a);
      // The address must not go on with more port digits (":3495" in ":34958").
      named |= at != std::string::npos &&
               !(at + a.size() < message.size() &&
                 std::isdigit(static_cast<unsigned char>(message[at + a.size()])));
    }
    if (named) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  }
  return ranks;
}

CommonWorld::~CommonWorld() = default;

std::shared_ptr<CommonWorld> CommonWorld::Create(StoreHandler& store,
                                                 const CommonWorldOptions& o) {
  HALFCAF_ENFORCE(o.size >= 1 && o.rank >= 0 && o.rank < o.size,
                  "CreateCommonWorld: expected 0 <= rank < size, got rank ", o.rank, " and size ",
                  o.size);
  HALFCAF_ENFORCE(o.timeout_ms > 0, "CreateCommonWorld: expected a positive timeout_ms, got ",
                  o.timeout_ms);
  HALFCAF_ENFORCE(!o.name.empty(), "CreateCommonWorld: the world needs a name (its store prefix)");
  IgnoreSigpipe();
  const std::string prefix = o.name + "/";
  std::shared_ptr<gloo::transport::Device> device;
  try {
    device = CreateDevice(o);
  } catch (const EnforceNotMet&) {
    throw;
  } catch (const std::exception& e) {
    HALFCAF_THROW("CreateCommonWorld '", o.name, "': cannot open the ", o.transport, " transport",
                  o.interface.empty() ? "" : " on interface '" + o.interface + "'", ": ",
                  e.what());
  }
  WaitForAllRanks(store, prefix, o);
  auto context = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
  context->setTimeout(Ms(o.timeout_ms));
  GlooStore gloo_store(store, prefix, Ms(o.timeout_ms));
  try {
    context->connectFullMesh(gloo_store, device);
  } catch (const std::exception& e) {
    throw CommunicationError(__FILE__, __LINE__,
                             MakeString("CreateCommonWorld '", o.name, "': connecting rank ",
                                        o.rank, " of ", o.size, " to its peers failed (timeout ",
                                        o.timeout_ms, " ms): ", e.what()));
  }
  return std::make_shared<CommonWorld>(std::move(context), o.name, o.timeout_ms);
}

std::shared_ptr<CommonWorld> CommonWorld::Create(const std::string& rendezvous,
                                                 const CommonWorldOptions& options) {
  auto store = CreateStoreHandler(rendezvous);
  return Create(*store, options);
}

std::shared_ptr<CommonWorld> CommonWorld::Clone() const {
  HALFCAF_ENFORCE(!closed_, "CloneCommonWorld: ", Describe(), " is closed");
  try {
    gloo::rendezvous::ContextFactory factory(context_);
    std::shared_ptr<gloo::Context> clone = factory.makeContext(context_->getDevice());
    clone->setTimeout(Ms(timeout_ms_));
    return std::make_shared<CommonWorld>(std::move(clone),
                                         name_ + "/clone" + std::to_string(++clones_),
                                         timeout_ms_);
  } catch (...) {
    RethrowAsCommunicationError("CloneCommonWorld");
  }
}

std::string CommonWorld::Describe() const {
  return MakeString("world '", name_, "' (rank ", rank_, " of ", size_, ", timeout ", timeout_ms_,
                    " ms)");
}

void CommonWorld::Barrier() {
  HALFCAF_ENFORCE(!closed_, "Barrier: ", Describe(), " is closed");
  try {
    if (!barrier_) barrier_ = std::make_unique<gloo::BarrierAllToOne>(context_, 0);
    barrier_->run();
  } catch (...) {
    RethrowAsCommunicationError("Barrier");
  }
}

void CommonWorld::Close() {
  if (closed_) return;
  closed_ = true;
  context_->closeConnections();
}

void CommonWorld::RethrowAsCommunicationError(const std::string& what) const {
  try {
    throw;
  } catch (const EnforceNotMet&) {
    throw;
  } catch (const std::exception& e) {
    std::string lost = RanksNamedIn(e.what());
    // Two ranks: the only peer is the lost one, whatever address Gloo's message quotes.
    if (lost.empty() && size_ == 2) lost = std::to_string(1 - rank_);
    throw CommunicationError(
        __FILE__, __LINE__,
        MakeString(what, " failed on ", Describe(), ": ",
                   lost.empty() ? ""
                   : std::string(e.what()).find("imeout") != std::string::npos
                       ? "lost rank " + lost + " (no answer within the timeout): "
                       : "lost rank " + lost + " (its connection failed): ",
                   e.what()));
  }
}

// ---- collectives -------------------------------------------------------------------------------

AllreduceAlgorithm ParseAllreduceAlgorithm(const std::string& name) {
  if (name == "halving_doubling" || name.empty()) return AllreduceAlgorithm::kHalvingDoubling;
  if (name == "ring") return AllreduceAlgorithm::kRing;
  if (name == "ring_chunked") return AllreduceAlgorithm::kRingChunked;
  if (name == "bcube") return AllreduceAlgorithm::kBcube;
  HALFCAF_THROW("unknown all-reduce algorithm '", name,
                "' (expected halving_doubling, ring, ring_chunked or bcube)");
}

Allreducer::Allreducer(std::shared_ptr<CommonWorld> world, AllreduceAlgorithm algorithm)
    : world_(std::move(world)), algorithm_kind_(algorithm) {}
Allreducer::~Allreducer() = default;

void Allreducer::Run(const std::vector<Tensor*>& tensors) {
  HALFCAF_ENFORCE(!tensors.empty(), "Allreduce: no tensors");
  std::vector<void*> ptrs;
  for (Tensor* t : tensors) {
    HALFCAF_ENFORCE(t->numel() == tensors[0]->numel() && t->dtype() == tensors[0]->dtype(),
                    "Allreduce: every tensor must have the same size and dtype, got ",
                    tensors[0]->DebugString(), " and ", t->DebugString());
    ptrs.push_back(t->raw_mutable_data());
  }
  Run(ptrs, tensors[0]->numel(), tensors[0]->dtype());
}

void Allreducer::Run(const std::vector<void*>& buffers, int64_t count, DataType dtype) {
  CheckOpen(world_, "Allreduce");
  HALFCAF_ENFORCE(!buffers.empty(), "Allreduce: no buffers");
  HALFCAF_ENFORCE(dtype == DataType::FLOAT || dtype == DataType::FLOAT16 ||
                      dtype == DataType::BFLOAT16,
                  "Allreduce supports float, float16 and bfloat16 tensors, got ",
                  DataTypeName(dtype));
  HALFCAF_ENFORCE(count >= 0 && count <= INT_MAX, "Allreduce: ", count,
                  " elements is more than Gloo's int count allows");
  if (count == 0) return;  // every rank has the same count: nobody sends
  try {
    if (!algorithm_ || buffers != ptrs_ || count != count_ || dtype != dtype_) {
      algorithm_.reset();
      const int n = static_cast<int>(count);
      if (dtype == DataType::FLOAT) {
        algorithm_ = MakeAllreduce<float>(algorithm_kind_, world_->context(), buffers, n);
      } else if (dtype == DataType::FLOAT16) {
        algorithm_ = MakeAllreduce<gloo::float16>(algorithm_kind_, world_->context(), buffers, n);
      } else {
        algorithm_ = MakeAllreduce<BFloat16>(algorithm_kind_, world_->context(), buffers, n);
      }
      ptrs_ = buffers;
      count_ = count;
      dtype_ = dtype;
    }
    algorithm_->run();
  } catch (...) {
    world_->RethrowAsCommunicationError("Allreduce");
  }
}

Broadcaster::Broadcaster(std::shared_ptr<CommonWorld> world) : world_(std::move(world)) {}
Broadcaster::~Broadcaster() = default;

void Broadcaster::Run(const std::vector<Tensor*>& tensors, int root) {
  HALFCAF_ENFORCE(!tensors.empty(), "Broadcast: no tensors");
  std::vector<void*> ptrs;
  for (Tensor* t : tensors) {
    HALFCAF_ENFORCE(t->numel() == tensors[0]->numel() && t->dtype() == tensors[0]->dtype(),
                    "Broadcast: every tensor must have the same size and dtype, got ",
                    tensors[0]->DebugString(), " and ", t->DebugString());
    ptrs.push_back(t->raw_mutable_data());
  }
  Run(ptrs, tensors[0]->nbytes(), root);
}

void Broadcaster::Run(const std::vector<void*>& buffers, size_t nbytes, int root) {
  CheckOpen(world_, "Broadcast");
  HALFCAF_ENFORCE(!buffers.empty(), "Broadcast: no buffers");
  HALFCAF_ENFORCE(root >= 0 && root < world_->size(), "Broadcast: expected 0 <= root < ",
                  world_->size(), ", got root ", root);
  if (nbytes == 0) return;
  try {
    if (!algorithm_ || buffers != ptrs_ || nbytes != nbytes_ || root != root_) {
      algorithm_.reset();
      std::vector<uint8_t*> ptrs;
      for (void* b : buffers) ptrs.push_back(static_cast<uint8_t*>(b));
      algorithm_ = std::make_unique<gloo::BroadcastOneToAll<uint8_t>>(world_->context(), ptrs,
                                                                      nbytes, root, 0);
      ptrs_ = buffers;
      nbytes_ = nbytes;
      root_ = root;
    }
    algorithm_->run();
  } catch (...) {
    world_->RethrowAsCommunicationError("Broadcast");
  }
}

Allgatherer::Allgatherer(std::shared_ptr<CommonWorld> world) : world_(std::move(world)) {}
Allgatherer::~Allgatherer() = default;

void Allgatherer::Run(const std::vector<const void*>& inputs, size_t nbytes, void* output) {
  CheckOpen(world_, "Allgather");
  HALFCAF_ENFORCE(!inputs.empty(), "Allgather: no inputs");
  HALFCAF_ENFORCE(nbytes <= static_cast<size_t>(INT_MAX), "Allgather: ", nbytes,
                  " bytes per input is more than Gloo's int count allows");
  if (nbytes == 0) return;
  try {
    if (!algorithm_ || inputs != inputs_ || nbytes != nbytes_ || output != output_) {
      algorithm_.reset();
      std::vector<const uint8_t*> in;
      for (const void* p : inputs) in.push_back(static_cast<const uint8_t*>(p));
      algorithm_ = std::make_unique<gloo::AllgatherRing<uint8_t>>(
          world_->context(), in, static_cast<uint8_t*>(output), static_cast<int>(nbytes));
      inputs_ = inputs;
      nbytes_ = nbytes;
      output_ = output;
    }
    algorithm_->run();
  } catch (...) {
    world_->RethrowAsCommunicationError("Allgather");
  }
}

}  // namespace halfcaf
