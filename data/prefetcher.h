// Background prefetching for input operators (Caffe2's PrefetchOperator): the next batch is
// prepared on a worker thread while the net uses the current one.
//
//   Prefetcher            the thread: runs one job at a time, one job ahead of its consumer.
//   BatchPrefetcher<S>    the consumer side of an input op that reads batches from a shared
//                         source object S (a db::DBReader held by a blob): each prepared batch
//                         remembers which source it came from, and a batch from a source the op no
//                         longer reads (CreateDB ran again) is discarded.
//
// Used by TensorProtosDBInput and ImageInput (CPU and CUDA). All member functions are called from
// the op's thread; the worker only runs the produce step and never touches blobs.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "core/trace.h"

namespace halfcaf {

// Whether `a` and `b` own the same object. By ownership, not address: a new object (a reader made
// by CreateDB run again) may be allocated where an old one was.
template <typename T>
bool SameObject(const std::weak_ptr<T>& a, const std::shared_ptr<T>& b) {
  return !a.owner_before(b) && !b.owner_before(a);
}

class Prefetcher {
 public:
  // `name` names the worker's track in traces (core/trace.h): "prefetch: <name>".
  explicit Prefetcher(std::string name = "") : name_(std::move(name)) {}
  ~Prefetcher() { Stop(); }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Runs `job` on the worker thread (started on first use). The job and what it captures are
  // destroyed on the worker as soon as it has run. Only one job at a time: throws if one is
  // pending.
  void Request(std::function<void()> job);
  // A job was requested and not yet waited for (or discarded).
  bool pending() const { return pending_; }
  // Waits for the pending job to finish; rethrows what it threw. Throws if none is pending.
  void Wait();
  // Waits for the pending job, if any, and drops its error.
  void Discard();
  // Discard(), then ends the worker thread. Safe to call again and from destructors; a later
  // Request starts a new thread.
  void Stop();

 private:
  void Loop();

  const std::string name_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_.
  std::function<void()> job_;
  bool has_job_ = false, done_ = false, stop_ = false;
  std::exception_ptr error_;
  // The consumer's view.
  bool pending_ = false;
};

template <typename Source>
class BatchPrefetcher {
 public:
  // The op's steps. The batch itself lives in the op (one buffer is enough: the next batch is
  // requested only after the current one has been copied to the outputs).
  struct Steps {
    // Optional, on the op's thread, before a batch is produced (e.g. hand it the op's random
    // generator state).
    std::function<void()> begin;
    // Required: fills the op's batch from `source`; on the worker with prefetch, else on the op's
    // thread. Never two at once. Throws on a bad record. Must not keep `source` beyond the call.
    std::function<void(const std::shared_ptr<const Source>& source)> produce;
    // Optional, on the op's thread, when a batch is taken (also when producing it failed): e.g.
    // the op's random generator continues after the batch's draws.
    std::function<void()> taken;
  };

  // `name` (the op's) names the worker's track in traces.
  BatchPrefetcher(bool prefetch, Steps steps, std::string name = "")
      : prefetch_(prefetch), steps_(std::move(steps)), worker_(std::move(name)) {}

  bool prefetch() const { return prefetch_; }

  // Makes the op's batch the next one read from `source`: the prefetched batch if it was read
  // from this very source, else (nothing prefetched, or prefetched from a source the op no longer
  // reads: discarded) one produced now. Rethrows the error of producing it.
  void Next(const std::shared_ptr<const Source>& source) {
    if (worker_.pending()) {
      if (SameObject(pending_source_, source)) {
        try {
          worker_.Wait();
        } catch (...) {
          Taken();
          throw;
        }
        Taken();
        return;
      }
      worker_.Discard();
    }
    if (steps_.begin) steps_.begin();
    try {
      steps_.produce(source);
    } catch (...) {
      Taken();
      throw;
    }
    Taken();
  }

  // With prefetch, starts producing the batch after the current one from `source` on the worker,
  // which holds `source` only while it produces. The caller must be done with the op's batch.
  void Ahead(std::shared_ptr<const Source> source) {
    if (!prefetch_) return;
    if (steps_.begin) steps_.begin();
    pending_source_ = source;
    worker_.Request([this, source = std::move(source)] {
      trace::Span span("data", "prefetch batch");
      steps_.produce(source);
    });
  }

  // Waits for a batch being produced and ends the worker. Call it in the op's destructor (or
  // declare the BatchPrefetcher after everything `produce` uses, so it is destroyed first).
  void Stop() { worker_.Stop(); }

 private:
  void Taken() {
    if (steps_.taken) steps_.taken();
  }

  const bool prefetch_;
  const Steps steps_;
  std::weak_ptr<const Source> pending_source_;
  Prefetcher worker_;  // last: stopped before the rest is destroyed
};

}  // namespace halfcaf
