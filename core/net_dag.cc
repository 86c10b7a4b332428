// "dag" net: an op waits only for the ops it depends on (read-after-write, write-after-read and
// write-after-write on any blob); ready ops run concurrently on a fixed set of worker threads.
#include <glog/logging.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

#include "core/net.h"
#include "core/strings.h"
#include "core/trace.h"

namespace halfcaf {

namespace {

class DAGNet : public NetBase {
 public:
  DAGNet(const NetDef& def, Workspace* ws) : NetBase(def, ws) {
    BuildGraph();
    const int workers = WorkerCount(def);
    for (int i = 0; i < workers; ++i) {
      try {
        threads_.emplace_back([this, i, workers] {
          trace::SetThreadName(MakeString("dag worker ", i + 1, " of ", workers, " (net '",
                                          name().empty() ? "net" : name(), "')"));
          WorkerLoop();
        });
      } catch (const std::system_error& e) {
        StopWorkers();
        HALFCAF_THROW("dag net '", Abbreviate(def.name()), "': cannot start worker thread ",
                      i + 1, " of ", workers, " (", e.what(), "); lower num_workers");
      }
    }
  }

  ~DAGNet() override { StopWorkers(); }

  void RunOps() override {
    std::unique_lock<std::mutex> lk(mu_);
    pending_ = num_parents_;
    remaining_ = ops_.size();
    error_ = nullptr;
    ready_.clear();
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (pending_[i] == 0) ready_.push_back(i);
    }
    work_cv_.notify_all();
    done_cv_.wait(lk, [this] { return remaining_ == 0 || (error_ && running_ == 0); });
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // num_workers (default 2), at most 4 per hardware thread: more only costs memory (a stack
  // each) and, in the thousands, fails to start.
  static int WorkerCount(const NetDef& def) {
    const int requested = def.num_workers() > 0 ? def.num_workers() : 2;
    const int hardware = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    const int limit = 4 * hardware;
    if (requested <= limit) return requested;
    LOG(WARNING) << "dag net '" << Abbreviate(def.name()) << "': num_workers " << requested
                 << " clipped to " << limit << " (4 x " << hardware << " hardware threads)";
    return limit;
  }

  void StopWorkers() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  void BuildGraph() {
    const size_t n = ops_.size();
    children_.assign(n, {});
    num_parents_.assign(n, 0);
    std::map<std::string, size_t> last_writer;
    std::map<std::string, std::vector<size_t>> readers_since_write;
    auto add_edge = [this](size_t from, size_t to, std::vector<bool>* seen) {
      if (from == to || (*seen)[from]) return;
      (*seen)[from] = true;
      children_[from].push_back(to);
      ++num_parents_[to];
    };
    for (size_t j = 0; j < n; ++j) {
      std::vector<bool> seen(n, false);
      const OperatorDef& op = ops_[j]->def();
      for (const auto& in : op.input()) {
        auto w = last_writer.find(in);
        if (w != last_writer.end()) add_edge(w->second, j, &seen);
      }
      for (const auto& out : op.output()) {
        auto w = last_writer.find(out);
        if (w != last_writer.end()) add_edge(w->second, j, &seen);
        for (size_t r : readers_since_write[out]) add_edge(r, j, &seen);
      }
      for (const auto& in : op.input()) readers_since_write[in].push_back(j);
      for (const auto& out : op.output()) {
        last_writer[out] = j;
        readers_since_write[out].clear();
      }
    }
  }

  void WorkerLoop() {
    std::unique_lock<std::mutex> lk(mu_);
    while (true) {
      work_cv_.wait(lk, [this] { return stop_ || !ready_.empty(); });
      if (stop_) return;
      size_t i = ready_.front();
      ready_.pop_front();
      ++running_;
      lk.unlock();
      std::exception_ptr err;
      try {
        RunOp(i);
      } catch (...) {
        err = std::current_exception();
      }
      lk.lock();
      --running_;
      if (err) {
        if (!error_) error_ = err;
        ready_.clear();
      } else if (!error_) {
        --remaining_;
        for (size_t c : children_[i]) {
          if (--pending_[c] == 0) ready_.push_back(c);
        }
        if (!ready_.empty()) work_cv_.notify_all();
      }
      if (remaining_ == 0 || (error_ && running_ == 0)) done_cv_.notify_all();
    }
  }

  std::vector<std::vector<size_t>> children_;
  std::vector<int> num_parents_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<size_t> ready_;
  std::vector<int> pending_;
  size_t remaining_ = 0;
  int running_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

[[maybe_unused]] const bool g_dag_registered = [] {
  for (const char* type : {"dag", "async_dag", "async_scheduling", "prof_dag"}) {
    RegisterNetType(type, [](const NetDef& def, Workspace* ws) {
      return std::unique_ptr<NetBase>(new DAGNet(def, ws));
    });
  }
  return true;
}();

}  // namespace
}  // namespace halfcaf
