#include "data/prefetcher.h"

#include "core/enforce.h"
#include "core/trace.h"

namespace halfcaf {

void Prefetcher::Request(std::function<void()> job) {
  HALFCAF_ENFORCE(!pending_, "Prefetcher: a batch is already being prepared (wait for it first)");
  HALFCAF_ENFORCE(job != nullptr, "Prefetcher: no job");
  if (!thread_.joinable()) {
    stop_ = false;
    thread_ = std::thread([this] { Loop(); });
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = std::move(job);
    has_job_ = true;
    done_ = false;
    error_ = nullptr;
  }
  pending_ = true;
  cv_.notify_all();
}

void Prefetcher::Wait() {
  HALFCAF_ENFORCE(pending_, "Prefetcher: no batch is being prepared");
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    done_ = false;
    error = std::move(error_);
    error_ = nullptr;
  }
  pending_ = false;
  if (error) std::rethrow_exception(error);
}

void Prefetcher::Discard() {
  if (!pending_) return;
  try {
    Wait();
  } catch (...) {
    // The batch is dropped, and with it its error.
  }
}

void Prefetcher::Stop() {
  Discard();
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Prefetcher::Loop() {
  trace::SetThreadName(name_.empty() ? std::string("prefetch") : "prefetch: " + name_);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || has_job_; });
    if (has_job_) {
      std::function<void()> job = std::move(job_);
      job_ = nullptr;
      has_job_ = false;
      lock.unlock();
      std::exception_ptr error;
      try {
        job();
      } catch (...) {
        error = std::current_exception();
      }
      job = nullptr;  // releases what the job holds (a DB reader) before the batch counts as done
      lock.lock();
      error_ = error;
      done_ = true;
      cv_.notify_all();
    } else {
      return;  // stop_
    }
  }
}

}  // namespace halfcaf
