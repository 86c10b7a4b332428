#include "core/plan_executor.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/enforce.h"
#include "core/net.h"

namespace halfcaf {

namespace {

using NetDefs = std::map<std::string, const NetDef*>;

// The plan's nets, and the names that already had a net in the plan's workspace: those are
// replaced the first time a step there uses them (Caffe2's override).
struct PlanNets {
  NetDefs defs;
  Workspace* top = nullptr;
  std::set<std::string> replace;
  std::mutex mutex;  // guards net creation
};

std::string Where(const ExecutionStep& step) { return "ExecutionStep '" + step.name() + "'"; }

std::string NetList(const NetDefs& defs) {
  std::string s;
  for (const auto& kv : defs) s += (s.empty() ? "'" : ", '") + kv.first + "'";
  return s.empty() ? "none" : s;
}

void CheckStep(const ExecutionStep& step, const NetDefs& defs) {
  const std::string where = Where(step);
  HALFCAF_ENFORCE(step.substep_size() == 0 || step.network_size() == 0, where,
                  " has both substeps and networks; a step runs one or the other");
  HALFCAF_ENFORCE(!step.has_criteria_network(), where,
                  ": criteria_network is deprecated (as in Caffe2); use should_stop_blob");
  HALFCAF_ENFORCE(!(step.has_num_iter() && step.has_should_stop_blob()), where,
                  ": num_iter and should_stop_blob exclude each other");
  HALFCAF_ENFORCE(!step.has_only_once() || step.has_should_stop_blob(), where,
                  ": only_once needs should_stop_blob");
  HALFCAF_ENFORCE(!step.has_num_iter() || step.num_iter() >= 0, where,
                  ": num_iter must be >= 0, got ", step.num_iter());
  HALFCAF_ENFORCE(!step.has_report_net() || step.report_interval() > 0, where,
                  ": report_net needs report_interval > 0 (seconds), got ",
                  step.report_interval());
  HALFCAF_ENFORCE(!step.has_run_every_ms() || step.run_every_ms() > 0, where,
                  ": run_every_ms must be > 0, got ", step.run_every_ms());
  HALFCAF_ENFORCE(!step.has_num_concurrent_instances() || step.num_concurrent_instances() >= 1,
                  where, ": num_concurrent_instances must be >= 1, got ",
                  step.num_concurrent_instances());
  std::vector<std::string> used(step.network().begin(), step.network().end());
  if (step.has_report_net()) used.push_back(step.report_net());
  for (const auto& name : used) {
    HALFCAF_ENFORCE(defs.count(name) > 0, where, " uses undefined net '", name,
                    "' (the plan's networks: ", NetList(defs), ")");
  }
  for (const auto& sub : step.substep()) CheckStep(sub, defs);
}

NetDefs NetDefsOf(const PlanDef& plan) {
  NetDefs defs;
  for (const NetDef& net : plan.network()) {
    HALFCAF_ENFORCE(!net.name().empty(), "a network of plan '", plan.name(), "' has no name");
    HALFCAF_ENFORCE(defs.emplace(net.name(), &net).second, "plan '", plan.name(),
                    "' has two networks named '", net.name(), "'");
  }
  return defs;
}

// The first error of a step's threads (nets, substeps, reporters) and whether one happened.
struct Failure {
  std::mutex mutex;
  std::exception_ptr first;
  std::atomic<bool> failed{false};

  void Record(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!first) first = e;
    failed = true;
  }
  void Rethrow() {
    std::lock_guard<std::mutex> lock(mutex);
    if (first) std::rethrow_exception(first);
  }
};

// Calls `f` every `interval` on its own thread until stopped, then once more (Caffe2's report
// threads). Errors go to `failure` and end the repetition.
class Repeater {
 public:
  Repeater(std::chrono::milliseconds interval, std::function<void()> f, Failure* failure)
      : thread_([this, interval, f = std::move(f), failure] {
          std::unique_lock<std::mutex> lock(mutex_);
          bool last = false;
          while (!last) {
            cv_.wait_for(lock, interval, [this] { return done_; });
            last = done_;
            lock.unlock();
            try {
              f();
            } catch (...) {
              failure->Record(std::current_exception());
              last = true;
            }
            lock.lock();
          }
        }) {}
  ~Repeater() { Stop(); }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

// Creates, in `ws`, the nets `step` and the substeps sharing its workspace use (those with
// create_workspace make theirs when they start), each once, so that threads only look nets up.
void CreateNets(const ExecutionStep& step, PlanNets* nets, Workspace* ws) {
  std::vector<std::string> used(step.network().begin(), step.network().end());
  if (step.has_report_net()) used.push_back(step.report_net());
  for (const auto& name : used) {
    const bool replace = ws == nets->top && nets->replace.erase(name) > 0;
    if (replace || ws->GetNet(name) == nullptr) ws->CreateNet(*nets->defs.at(name));
  }
  for (const auto& sub : step.substep()) {
    if (!sub.create_workspace()) CreateNets(sub, nets, ws);
  }
}

// should_stop_blob's value: false while it holds nothing; else it must be a bool scalar on the CPU.
bool StopRequested(const Blob* blob, const ExecutionStep& step) {
  if (blob == nullptr || !blob->IsTensor()) return false;
  const Tensor& t = blob->GetTensor();
  if (t.numel() == 0) return false;
  HALFCAF_ENFORCE(t.dtype() == DataType::BOOL && t.numel() == 1 &&
                      t.device().type == DeviceType::CPU,
                  Where(step), ": should_stop_blob '", step.should_stop_blob(),
                  "' must be a bool scalar on the CPU, got ", t.DebugString());
  return t.data<bool>()[0];
}

void RunStep(const ExecutionStep& step, Workspace* outer_ws, PlanNets* nets,
             const PlanShouldContinue& outer);

// One iteration's substeps at once: `instances` threads per substep; the first error is
// recorded in `failure`, after which no thread starts its substep.
void RunConcurrently(const std::vector<const ExecutionStep*>& subs, int instances, Workspace* ws,
                     PlanNets* nets, const PlanShouldContinue& sub_continue,
                     Failure* failure) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < subs.size() * static_cast<size_t>(instances); ++t) {
    threads.emplace_back([&] {
      const ExecutionStep& sub = *subs[next++ % subs.size()];
      if (failure->failed) return;
      try {
        RunStep(sub, ws, nets, sub_continue);
      } catch (...) {
        failure->Record(std::current_exception());
      }
    });
  }
  for (auto& t : threads) t.join();
}

void RunStep(const ExecutionStep& step, Workspace* outer_ws, PlanNets* nets,
             const PlanShouldContinue& outer) {
  std::unique_ptr<Workspace> child;
  Workspace* ws = outer_ws;
  if (step.create_workspace()) {
    child = std::make_unique<Workspace>(outer_ws);
    ws = child.get();
  }
  {
    std::lock_guard<std::mutex> lock(nets->mutex);
    CreateNets(step, nets, ws);
  }
  std::vector<NetBase*> step_nets;
  for (const auto& name : step.network()) step_nets.push_back(ws->GetNet(name));
  const Blob* stop_blob = nullptr;
  if (step.has_should_stop_blob()) {
    stop_blob = ws->GetBlob(step.should_stop_blob());
    HALFCAF_ENFORCE(stop_blob != nullptr, Where(step), ": should_stop_blob '",
                    step.should_stop_blob(), "' does not exist");
  }
  std::vector<const ExecutionStep*> recurring, periodic;
  for (const auto& sub : step.substep()) {
    (sub.has_run_every_ms() ? periodic : recurring).push_back(&sub);
  }
  const int instances = step.has_num_concurrent_instances() ? step.num_concurrent_instances() : 1;
  const bool concurrent = (step.concurrent_substeps() && recurring.size() > 1) || instances > 1;

  Failure failure;
  const PlanShouldContinue sub_continue = [&failure, &outer](int64_t i) {
    return !failure.failed && (!outer || outer(i));
  };
  std::vector<std::unique_ptr<Repeater>> repeaters;
  if (step.has_report_net()) {
    NetBase* report = ws->GetNet(step.report_net());
    repeaters.push_back(std::make_unique<Repeater>(
        std::chrono::milliseconds(1000LL * step.report_interval()), [report] { report->Run(); },
        &failure));
  }
  for (const ExecutionStep* sub : periodic) {
    repeaters.push_back(std::make_unique<Repeater>(
        std::chrono::milliseconds(sub->run_every_ms()),
        [sub, ws, nets, &sub_continue] { RunStep(*sub, ws, nets, sub_continue); }, &failure));
  }

  const int64_t iterations = step.has_num_iter() ? step.num_iter() : 1;
  auto keep_going = [&](int64_t i) {
    if (failure.failed || (outer && !outer(i))) return false;
    if (step.has_should_stop_blob()) return !step.only_once() || i == 0;
    return i < iterations;
  };
  // One iteration; false when should_stop_blob ended the step.
  auto iteration = [&]() {
    if (concurrent) {
      RunConcurrently(recurring, instances, ws, nets, sub_continue, &failure);
      return failure.failed ? false : !StopRequested(stop_blob, step);
    }
    for (NetBase* net : step_nets) {
      net->Run();
      if (StopRequested(stop_blob, step)) return false;
    }
    for (const ExecutionStep* sub : recurring) {
      RunStep(*sub, ws, nets, sub_continue);
      if (StopRequested(stop_blob, step)) return false;
    }
    return true;
  };
  try {
    for (int64_t i = 0; keep_going(i) && iteration(); ++i) {
    }
  } catch (...) {
    failure.Record(std::current_exception());
  }
  for (auto& r : repeaters) r->Stop();  // each runs a last time
  failure.Rethrow();
  for (NetBase* net : step_nets) net->CheckDeferredErrors();
}

}  // namespace

void CheckPlan(const PlanDef& plan) {
  const NetDefs defs = NetDefsOf(plan);
  for (const auto& step : plan.execution_step()) CheckStep(step, defs);
}

void RunPlan(const PlanDef& plan, Workspace* ws, const PlanShouldContinue& should_continue) {
  CheckPlan(plan);
  PlanNets nets;
  nets.defs = NetDefsOf(plan);
  nets.top = ws;
  for (const auto& kv : nets.defs) {
    if (ws->GetNet(kv.first) != nullptr) nets.replace.insert(kv.first);
  }
  for (const auto& step : plan.execution_step()) RunStep(step, ws, &nets, should_continue);
}

}  // namespace halfcaf
