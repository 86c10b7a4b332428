// CommonWorld: a group of `size` processes (ranks 0..size-1) connected to each other over Gloo,
// and the collectives that run on it: all-reduce (sum), broadcast, barrier, all-gather. This is
// the C++ API under the distributed operators (CreateCommonWorld, Allreduce, Broadcast, Barrier,
// Allgather), for code that drives the exchange itself (the trainer).
//
//   CommonWorldOptions opt;
//   opt.rank = r;
//   opt.size = n;
//   opt.timeout_ms = 60000;
//   auto world = CommonWorld::Create("/shared/rendezvous", opt);   // or "redis://host:6379/run7"
//   Allreducer grads(world);                  // keep it: it caches Gloo's algorithm
//   grads.Run({&g1, &g2});                    // g1, g2 summed over every rank, in place
//   Broadcaster params(world);
//   params.Run({&w}, /*root=*/0);
//   world->Barrier();
//
// Every call blocks until the collective is done. Every rank must make the same calls in the same
// order with tensors of the same sizes and dtype. A peer that dies, never arrives or stalls
// longer than the timeout makes the call throw CommunicationError (an EnforceNotMet) naming the
// collective, the world, this rank and the timeout; the world is unusable afterwards (Gloo's
// connections are broken), so the caller stops or creates a new world.
//
// Built without Gloo (libgloo-dev), GlooAvailable() is false and Create throws saying so.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/enforce.h"
#include "core/tensor.h"

namespace gloo {
class Context;
class Algorithm;
}  // namespace gloo

namespace halfcaf {

class StoreHandler;

// Whether this build has Gloo (and so the distributed operators).
bool GlooAvailable();
// What to tell a user of a build without Gloo.
const char* GlooMissingHint();

// A failure of the exchange itself (a lost, missing or stalled peer), as opposed to a bad
// argument. Operators with a `status_blob` record these instead of throwing.
class CommunicationError : public EnforceNotMet {
 public:
  using EnforceNotMet::EnforceNotMet;
};

struct CommonWorldOptions {
  int rank = 0;
  int size = 1;
  // Bounds every wait: the rendezvous, and each send / receive of every collective.
  int64_t timeout_ms = 30000;
  std::string transport = "tcp";  // the only transport built here ("ibverbs" is rejected)
  // Network interface to bind and advertise ("eth0", "lo"); empty: the address the machine's
  // host name resolves to (Gloo's default).
  std::string interface;
  // Prefixes the world's keys in the store, so several worlds can share one store (Caffe2 uses
  // the CreateCommonWorld op's name). Must be the same on every rank and new for each world.
  std::string name = "common_world";
};

class CommonWorld {
 public:
  // Rendezvous through `store`: every rank announces itself under name/arrived/<rank>, waits up
  // to the timeout for the others (throwing CommunicationError naming the ranks that did not
  // arrive), then connects to every other rank (Gloo full mesh).
  static std::shared_ptr<CommonWorld> Create(StoreHandler& store,
                                             const CommonWorldOptions& options);
  // Same, with a store from a rendezvous spec: a folder, or "redis://HOST:PORT[/PREFIX]".
  static std::shared_ptr<CommonWorld> Create(const std::string& rendezvous,
                                             const CommonWorldOptions& options);
  // A new world over the same ranks with its own connections (its traffic never mixes with this
  // one's), built over this world without the store (Caffe2's CloneCommonWorld). Collective:
  // every rank must call it.
  std::shared_ptr<CommonWorld> Clone() const;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int64_t timeout_ms() const { return timeout_ms_; }
  const std::string& name() const { return name_; }
  // "world 'cw' (rank 1 of 4, timeout 2000 ms)".
  std::string Describe() const;

  // Blocks until every rank has called it (Gloo's all-to-one barrier on rank 0).
  void Barrier();
  // Closes the connections (DestroyCommonWorld): peers blocked on this rank fail at once.
  void Close();
  bool closed() const { return closed_; }

  const std::shared_ptr<gloo::Context>& context() const { return context_; }

  // Rethrows the exception in flight (from Gloo) as CommunicationError: "<what> failed on <world>:
  // lost rank <r> (its connection failed): <Gloo's message>" (the rank when Gloo's message quotes
  // the address of a peer's connection). EnforceNotMet passes through unchanged.
  [[noreturn]] void RethrowAsCommunicationError(const std::string& what) const;

  CommonWorld(std::shared_ptr<gloo::Context> context, std::string name, int64_t timeout_ms);
  ~CommonWorld();

 private:
  std::shared_ptr<gloo::Context> context_;
  std::string name_;
  int rank_, size_;
  int64_t timeout_ms_;
  // Ranks whose connection address (as Gloo's messages quote it) appears in `message`, "1, 3".
  std::string RanksNamedIn(const std::string& message) const;
  std::vector<std::vector<std::string>> peer_addresses_;  // per rank: its ends of its connections
  bool closed_ = false;
  mutable int clones_ = 0;
  std::unique_ptr<gloo::Algorithm> barrier_;
};

// Gloo's all-reduce algorithms. Caffe2 uses halving-doubling (also for sizes that are not a power
// of two). The full ring adds in a different order on each rank, so rounded sums (float16, or
// float that is not exact) can differ between ranks in the last bit; the others give every rank
// the same bits (keep it that way for replicas that must stay identical). bcube needs a world size that is a power of a base in 2..6 (or a multiple of the base
// below its square) and falls back to halving-doubling otherwise, as in Caffe2.
enum class AllreduceAlgorithm { kHalvingDoubling, kRing, kRingChunked, kBcube };
// "halving_doubling", "ring", "ring_chunked", "bcube" (throws on anything else).
AllreduceAlgorithm ParseAllreduceAlgorithm(const std::string& name);

// Sums n equally sized buffers over every rank, in place: afterwards each buffer on every rank
// holds the sum of all n * size buffers. FLOAT, FLOAT16 and BFLOAT16. FP16 (BF16) stays FP16
// (BF16) on the wire and is added in FP32 and rounded back after every addition (gloo::float16;
// BF16 through halfcaf's gloo::sum<BFloat16>), in an order fixed
// by the algorithm and world size: the result is the same on every rank (but see kRing), within
// (n * size - 1) rounding steps (half an FP16 ulp of the partial sum each) of the exact sum.
//
// The Gloo algorithm is built on the first Run and rebuilt only when the pointers, the count or
// the dtype change; rebuilding allocates a new communication slot, so it must happen on every
// rank in the same Run (tensors that keep their storage never trigger it).
class Allreducer {
 public:
  explicit Allreducer(std::shared_ptr<CommonWorld> world,
                      AllreduceAlgorithm algorithm = AllreduceAlgorithm::kHalvingDoubling);
  ~Allreducer();
  void Run(const std::vector<Tensor*>& tensors);
  void Run(const std::vector<void*>& buffers, int64_t count, DataType dtype);
  const std::shared_ptr<CommonWorld>& world() const { return world_; }

 private:
  std::shared_ptr<CommonWorld> world_;
  AllreduceAlgorithm algorithm_kind_;
  std::vector<void*> ptrs_;
  int64_t count_ = -1;
  DataType dtype_ = DataType::UNDEFINED;
  std::unique_ptr<gloo::Algorithm> algorithm_;
};

// Copies `root`'s first buffer into every buffer of every rank, in place (any dtype). Same
// caching rule as Allreducer (the root is part of the key).
class Broadcaster {
 public:
  explicit Broadcaster(std::shared_ptr<CommonWorld> world);
  ~Broadcaster();
  void Run(const std::vector<Tensor*>& tensors, int root);
  void Run(const std::vector<void*>& buffers, size_t nbytes, int root);
  const std::shared_ptr<CommonWorld>& world() const { return world_; }

 private:
  std::shared_ptr<CommonWorld> world_;
  std::vector<void*> ptrs_;
  size_t nbytes_ = 0;
  int root_ = -1;
  std::unique_ptr<gloo::Algorithm> algorithm_;
};

// Gathers n equally sized inputs from every rank into `output` (size * n * count elements, rank
// by rank, each rank's inputs in order), on every rank. Same caching rule as Allreducer.
class Allgatherer {
 public:
  explicit Allgatherer(std::shared_ptr<CommonWorld> world);
  ~Allgatherer();
  void Run(const std::vector<const void*>& inputs, size_t nbytes, void* output);
  const std::shared_ptr<CommonWorld>& world() const { return world_; }

 private:
  std::shared_ptr<CommonWorld> world_;
  std::vector<const void*> inputs_;
  void* output_ = nullptr;
  size_t nbytes_ = 0;
  std::unique_ptr<gloo::Algorithm> algorithm_;
};

}  // namespace halfcaf
