#include "distributed/gradient_exchange.h"

#include <chrono>
#include <cstring>

#include <glog/logging.h>

#include "core/enforce.h"
#include "core/trace.h"
#include "distributed/gradient_staging.h"

namespace halfcaf {

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct GradientExchange::Bucket {
  std::shared_ptr<void> host;  // the packed tensors: pinned for CUDA tensors
  size_t nbytes = 0;
  bool pinned = false;
  std::unique_ptr<Allreducer> reducer;

  void* Reserve(size_t n, bool want_pinned) {
    if (host && nbytes == n && pinned == want_pinned) return host.get();
    reducer.reset();  // it keeps the old buffer's address
    nbytes = n;
    pinned = want_pinned;
#if HALFCAF_WITH_CUDA
    if (want_pinned) {
      host = gradient_staging::AllocatePinned(n);
      return host.get();
    }
#endif
    host = std::shared_ptr<void>(::operator new(std::max<size_t>(n, 1)),
                                 [](void* p) { ::operator delete(p); });
    return host.get();
  }
};

GradientExchange::GradientExchange(std::shared_ptr<CommonWorld> world,
                                   AllreduceAlgorithm algorithm)
    : world_(std::move(world)), algorithm_(algorithm) {
  HALFCAF_ENFORCE(world_ != nullptr, "GradientExchange: no common world");
  thread_ = std::thread([this] {
    trace::SetThreadName("gradient exchange (Gloo)");
    Loop();
  });
}

GradientExchange::~GradientExchange() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return finished_ == started_; });
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void GradientExchange::Start(std::vector<Tensor*> tensors) {
  HALFCAF_ENFORCE(!tensors.empty(), "GradientExchange: an empty bucket");
  const Tensor& first = *tensors[0];
  for (const Tensor* t : tensors) {
    HALFCAF_ENFORCE(t->dtype() == DataType::FLOAT || t->dtype() == DataType::FLOAT16 ||
                        t->dtype() == DataType::BFLOAT16,
                    "GradientExchange: gradients are float, float16 or bfloat16, got ",
                    t->DebugString());
    HALFCAF_ENFORCE(t->dtype() == first.dtype() && t->device() == first.device(),
                    "GradientExchange: a bucket holds one dtype on one device, got ",
                    first.DebugString(), " and ", t->DebugString());
  }
  Job job{next_bucket_++, std::move(tensors), nullptr};
#if HALFCAF_WITH_CUDA
  if (first.device().type == DeviceType::CUDA) {
    job.ready = gradient_staging::MarkReady(first.device().id);
  }
#endif
  HALFCAF_ENFORCE(first.device().type == DeviceType::CPU || job.ready != nullptr,
                  "GradientExchange: tensors on ", first.device().ToString(),
                  " need the CUDA backend");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (buckets_.size() < next_bucket_) buckets_.push_back(std::make_unique<Bucket>());
    queue_.push_back(std::move(job));
    ++started_;
  }
  cv_.notify_all();
}

void GradientExchange::Wait() {
  const double t0 = Now();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return finished_ == started_; });
  times_.exposed_s += Now() - t0;
  next_bucket_ = 0;
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

ExchangeTimes GradientExchange::TakeTimes() {
  std::lock_guard<std::mutex> lock(mu_);
  ExchangeTimes t = times_;
  times_ = ExchangeTimes{};
  return t;
}

void GradientExchange::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    const bool failed = error_ != nullptr;  // after a failure the world is broken: skip the rest
    lock.unlock();
    std::exception_ptr err;
    double seconds = 0;
    if (!failed) {
      const double t0 = Now();
      trace::Span span("collective", "allreduce bucket " + std::to_string(job.bucket));
      if (trace::Active()) {
        int64_t bytes = 0;
        for (const Tensor* t : job.tensors) bytes += static_cast<int64_t>(t->nbytes());
        span.Arg("bytes", bytes);
        span.Arg("tensors", static_cast<int64_t>(job.tensors.size()));
      }
      try {
        Exchange(job);
      } catch (...) {
        err = std::current_exception();
      }
      seconds = Now() - t0;
    }
    lock.lock();
    if (err && !error_) error_ = err;
    if (!failed && !err) {
      times_.exchange_s += seconds;
      ++times_.buckets;
      for (const Tensor* t : job.tensors) times_.bytes += static_cast<int64_t>(t->nbytes());
    }
    ++finished_;
    cv_.notify_all();
  }
}

void GradientExchange::Exchange(Job& job) {
  Bucket& b = *buckets_.at(job.bucket);
  size_t nbytes = 0;
  for (const Tensor* t : job.tensors) nbytes += t->nbytes();
  const bool cuda = job.ready != nullptr;
  uint8_t* host = static_cast<uint8_t*>(b.Reserve(nbytes, cuda));
#if HALFCAF_WITH_CUDA
  if (cuda) gradient_staging::ToHost(job.ready, job.tensors, host);
#endif
  if (!cuda) {
    size_t at = 0;
    for (const Tensor* t : job.tensors) {
      std::memcpy(host + at, t->raw_data(), t->nbytes());
      at += t->nbytes();
    }
  }
  const DataType dtype = job.tensors[0]->dtype();
  if (!b.reducer) b.reducer = std::make_unique<Allreducer>(world_, algorithm_);
  b.reducer->Run({host}, static_cast<int64_t>(nbytes / DataTypeSize(dtype)), dtype);
#if HALFCAF_WITH_CUDA
  if (cuda) gradient_staging::ToDevice(host, job.tensors);
#endif
  if (!cuda) {
    size_t at = 0;
    for (Tensor* t : job.tensors) {
      std::memcpy(t->raw_mutable_data(t->dtype()), host + at, t->nbytes());
      at += t->nbytes();
    }
  }
}

}  // namespace halfcaf
