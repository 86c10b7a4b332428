// GradientExchange: sums buckets of gradients over every process of a CommonWorld on a
// communication thread, so the exchange of the gradients the backward pass has already produced
// overlaps with the rest of the backward pass (the trainer's multi-process data parallelism).
//
//   GradientExchange exchange(world);
//   // each step, as the backward pass goes:
//   exchange.Start({&fc2_w_grad, &fc2_b_grad});   // queued; returns at once
//   exchange.Start({&conv1_w_grad, ...});
//   exchange.Wait();                              // all summed in place; time here is "exposed"
//
// Each bucket is packed into one contiguous buffer (host memory; pinned for CUDA tensors, which
// are copied out after the work queued on their device's compute stream so far), all-reduced as
// one message, and unpacked into the tensors. Buckets are exchanged one at a time, in the order
// they were started: every rank must start the same buckets (same sizes and dtype) in the same
// order. FLOAT and FLOAT16 (FP16 stays FP16 on the wire; see Allreducer for its rounding).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "distributed/common_world.h"

namespace halfcaf {

// Times of the exchanges since the last TakeTimes, in seconds.
struct ExchangeTimes {
  double exchange_s = 0;  // on the communication thread: pack, all-reduce, unpack
  double exposed_s = 0;   // the caller blocked in Wait (the part not hidden behind its work)
  int64_t bytes = 0;      // bytes all-reduced per rank (gradient bytes, not wire bytes)
  int64_t buckets = 0;
};

class GradientExchange {
 public:
  explicit GradientExchange(std::shared_ptr<CommonWorld> world,
                            AllreduceAlgorithm algorithm = AllreduceAlgorithm::kHalvingDoubling);
  // Waits for the exchanges in flight (a failure then is dropped) and stops the thread.
  ~GradientExchange();
  GradientExchange(const GradientExchange&) = delete;
  GradientExchange& operator=(const GradientExchange&) = delete;

  // Queues the sum of `tensors` (one dtype, one device, each initialized) over every rank. The
  // tensors must not be written until Wait returns. The k-th Start after a Wait is bucket k: its
  // packing buffer and Gloo algorithm are kept from one step to the next.
  void Start(std::vector<Tensor*> tensors);
  // Blocks until every started bucket is summed in place. Rethrows the first failure
  // (CommunicationError naming the world, this rank, the lost rank where known, and the
  // timeout); the world is unusable afterwards.
  void Wait();
  ExchangeTimes TakeTimes();
  const std::shared_ptr<CommonWorld>& world() const { return world_; }

 private:
  struct Bucket;
  struct Job {
    size_t bucket;
    std::vector<Tensor*> tensors;
    std::shared_ptr<void> ready;  // CUDA: an event after the tensors' producers
  };
  void Loop();
  void Exchange(Job& job);

  std::shared_ptr<CommonWorld> world_;
  AllreduceAlgorithm algorithm_;
  std::vector<std::unique_ptr<Bucket>> buckets_;
  size_t next_bucket_ = 0;  // caller side: index of the next Start

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  size_t started_ = 0, finished_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
  ExchangeTimes times_;
  std::thread thread_;
};

}  // namespace halfcaf
