// The plan executor, field by field of PlanDef and ExecutionStep (core/plan_executor.h), on small
// nets: Iter counts, and test operators that tick shared counters, wait for them, meet at a
// barrier (only concurrent threads get through it), or fail.
#include "core/plan_executor.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "core/net.h"
#include "core/operator.h"
#include "core/proto_io.h"
#include "tests/util/error_of.h"

namespace halfcaf {
namespace {

using testing::ErrorOf;

// Counters shared by the test operators, by name.
std::atomic<int>& Ticks(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::atomic<int>> counters;
  std::lock_guard<std::mutex> lock(mutex);
  return counters[name];
}

// PlanTestTick: adds 1 to the counter `counter`.
class TickOp final : public Operator<CPUContext> {
 public:
  TickOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), counter_(Ticks(GetSingleArgument<std::string>("counter", ""))) {}
  void RunOnDevice() override { ++counter_; }

 private:
  std::atomic<int>& counter_;
};

// PlanTestWaitTicks: waits until counter `counter` reaches `n` (an error after 20 s).
class WaitTicksOp final : public Operator<CPUContext> {
 public:
  WaitTicksOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), counter_(Ticks(GetSingleArgument<std::string>("counter", ""))),
        n_(GetSingleArgument<int>("n", 1)) {}
  void RunOnDevice() override {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (counter_ < n_) {
      HALFCAF_ENFORCE(std::chrono::steady_clock::now() < deadline, "waited 20 s for ", n_,
                      " ticks");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

 private:
  std::atomic<int>& counter_;
  const int n_;
};

// PlanTestBarrier: waits until `parties` threads have arrived at the barrier `counter` (an error
// after timeout_ms: the callers did not run at the same time).
class BarrierOp final : public Operator<CPUContext> {
 public:
  BarrierOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), arrived_(Ticks(GetSingleArgument<std::string>("counter", ""))),
        parties_(GetSingleArgument<int>("parties", 2)),
        timeout_(GetSingleArgument<int>("timeout_ms", 5000)) {}
  void RunOnDevice() override {
    ++arrived_;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_);
    while (arrived_ < parties_) {
      HALFCAF_ENFORCE(std::chrono::steady_clock::now() < deadline,
                      "the barrier's other parties never came");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

 private:
  std::atomic<int>& arrived_;
  const int parties_, timeout_;
};

// PlanTestStopAfter: output 0 = (int64 input 0 >= n), a bool scalar.
class StopAfterOp final : public Operator<CPUContext> {
 public:
  StopAfterOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), n_(GetSingleArgument<int64_t>("n", 1)) {}
  void RunOnDevice() override {
    const bool stop = Input(0).data<int64_t>()[0] >= n_;
    Output(0, {})->mutable_data<bool>()[0] = stop;
  }

 private:
  const int64_t n_;
};

class FailOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override { HALFCAF_ENFORCE(false, "PlanTestFail failed on purpose"); }
};

}  // namespace

REGISTER_CPU_OPERATOR(PlanTestTick, TickOp);
REGISTER_CPU_OPERATOR(PlanTestWaitTicks, WaitTicksOp);
REGISTER_CPU_OPERATOR(PlanTestBarrier, BarrierOp);
REGISTER_CPU_OPERATOR(PlanTestStopAfter, StopAfterOp);
REGISTER_CPU_OPERATOR(PlanTestFail, FailOp);

namespace {

// The nets every test's plan has: init (count = 0 int64, stop = false), inc (count += 1), check
// (stop = count >= 3), fail, and the `extra` text.
PlanDef Plan(const std::string& steps, const std::string& extra_nets = "") {
  const std::string text = R"(
    name: "p"
    network { name: "init"
      op { type: "ConstantFill" output: "count" arg { name: "shape" ints: 1 }
           arg { name: "dtype" i: 10 } arg { name: "value" f: 0 } }
      op { type: "ConstantFill" output: "stop" arg { name: "shape" ints: 1 }
           arg { name: "dtype" i: 5 } arg { name: "value" f: 0 } } }
    network { name: "inc" op { type: "Iter" input: "count" output: "count" } }
    network { name: "check" op { type: "PlanTestStopAfter" input: "count" output: "stop"
                                 arg { name: "n" i: 3 } } }
    network { name: "fail" op { type: "PlanTestFail" } }
  )" + extra_nets + steps;
  PlanDef plan;
  ParseProtoFromString(text, "plan", &plan);
  return plan;
}

int64_t Count(Workspace& ws) { return ws.GetTensor("count").data<int64_t>()[0]; }

TEST(PlanExecutorTest, StepsRunInOrderNumIterTimesAndNetsAreCreatedOnce) {
  Workspace ws;
  NetDef old;
  old.set_name("inc");  // an existing net of a plan net's name is replaced
  ws.CreateNet(old);
  RunPlan(Plan(R"(execution_step { name: "init" network: "init" }
                  execution_step { name: "train" network: "inc" num_iter: 5 }
                  execution_step { name: "once" network: "inc" })"),
          &ws);
  EXPECT_EQ(Count(ws), 6);  // num_iter 5, then absent num_iter: once
  ASSERT_NE(ws.GetNet("inc"), nullptr);
  EXPECT_EQ(ws.GetNet("inc")->def().op_size(), 1);
  EXPECT_EQ(ws.GetNet("fail"), nullptr);  // no step uses it
}

TEST(PlanExecutorTest, NestedSubstepsRepeatWithTheirParent) {
  Workspace ws;
  RunPlan(Plan(R"(execution_step { name: "init" network: "init" }
                  execution_step { name: "outer" num_iter: 2
                    substep { name: "a" network: "inc" num_iter: 3 }
                    substep { name: "b" network: "inc" } })"),
          &ws);
  EXPECT_EQ(Count(ws), 8);
}

TEST(PlanExecutorTest, ShouldStopBlobEndsTheStepAfterTheNetOrSubstepThatSetIt) {
  // No num_iter: loops until stop, checked after each net, so the second "inc" does not run.
  Workspace ws;
  RunPlan(Plan(R"(execution_step { name: "init" network: "init" }
                  execution_step { name: "loop" network: "inc" network: "check" network: "inc"
                                   should_stop_blob: "stop" })"),
          &ws);
  EXPECT_EQ(Count(ws), 3);
  // only_once: one iteration although stop stays false.
  Workspace ws2;
  RunPlan(Plan(R"(execution_step { name: "init" network: "init" }
                  execution_step { name: "one" network: "inc" should_stop_blob: "stop"
                                   only_once: true })"),
          &ws2);
  EXPECT_EQ(Count(ws2), 1);
  // Between substeps: "a" counts 1, "b" 2, "a" 3 and stops before "b".
  Workspace ws3;
  RunPlan(Plan(R"(execution_step { name: "init" network: "init" }
                  execution_step { name: "loop" should_stop_blob: "stop"
                    substep { name: "a" network: "inc" network: "check" }
                    substep { name: "b" network: "inc" } })"),
          &ws3);
  EXPECT_EQ(Count(ws3), 3);
}

const char* kBarrierNets = R"(
  network { name: "meet2" op { type: "PlanTestBarrier" arg { name: "counter" s: "PLAN_COUNTER" }
                               arg { name: "parties" i: 2 } arg { name: "timeout_ms" i: 300 } } }
)";

std::string WithCounter(const std::string& text, const std::string& counter) {
  std::string s = text;
  s.replace(s.find("PLAN_COUNTER"), 12, counter);
  return s;
}

TEST(PlanExecutorTest, ConcurrentSubstepsRunAtOnce) {
  Workspace ws;
  RunPlan(Plan(R"(execution_step { name: "both" concurrent_substeps: true
                    substep { name: "a" network: "meet2" }
                    substep { name: "b" network: "meet2" } })",
               WithCounter(kBarrierNets, "concurrent")),
          &ws);
  EXPECT_EQ(Ticks("concurrent"), 2);
  // In sequence, the first never meets the second.
  Workspace ws2;
  EXPECT_NE(ErrorOf([&] {
              RunPlan(Plan(R"(execution_step { name: "both"
                                substep { name: "a" network: "meet2" }
                                substep { name: "b" network: "meet2" } })",
                           WithCounter(kBarrierNets, "sequential")),
                      &ws2);
            }).find("other parties never came"),
            std::string::npos);
}

TEST(PlanExecutorTest, NumConcurrentInstancesRunsCopiesOfASubstep) {
  Workspace ws;
  RunPlan(Plan(R"(execution_step { name: "copies" num_concurrent_instances: 2
                    substep { name: "a" network: "meet2" } })",
               WithCounter(kBarrierNets, "instances")),
          &ws);
  EXPECT_EQ(Ticks("instances"), 2);
}

TEST(PlanExecutorTest, TheFirstConcurrentErrorStopsTheOthersAndIsReported) {
  Workspace ws;
  const std::string err = ErrorOf([&] {
    RunPlan(Plan(R"(execution_step { name: "init" network: "init" }
                    execution_step { name: "both" concurrent_substeps: true
                      substep { name: "long" network: "inc" num_iter: 100000000 }
                      substep { name: "bad" network: "fail" } })"),
            &ws);
  });
  EXPECT_NE(err.find("PlanTestFail failed on purpose"), std::string::npos) << err;
  EXPECT_LT(Count(ws), 100000000);  // "long" stopped early
}

TEST(PlanExecutorTest, ReportNetRunsWhileTheStepRunsAndOnceAtTheEnd) {
  Workspace ws;
  RunPlan(Plan(R"(execution_step { name: "main" network: "wait" report_net: "report"
                                   report_interval: 1 })",
               R"(network { name: "report" op { type: "PlanTestTick"
                                                arg { name: "counter" s: "report" } } }
                  network { name: "wait" op { type: "PlanTestWaitTicks"
                                              arg { name: "counter" s: "report" }
                                              arg { name: "n" i: 1 } } })"),
          &ws);
  EXPECT_EQ(Ticks("report"), 2);  // once during the step (which waited for it), once at the end
}

TEST(PlanExecutorTest, RunEveryMsSubstepRunsBesideItsParentAndOnceAtTheEnd) {
  Workspace ws;
  RunPlan(Plan(R"(execution_step { name: "main"
                    substep { name: "ticker" network: "tick" run_every_ms: 2 }
                    substep { name: "wait" network: "wait" } })",
               R"(network { name: "tick" op { type: "PlanTestTick"
                                              arg { name: "counter" s: "every" } } }
                  network { name: "wait" op { type: "PlanTestWaitTicks"
                                              arg { name: "counter" s: "every" }
                                              arg { name: "n" i: 3 } } })"),
          &ws);
  EXPECT_GE(Ticks("every"), 4);  // not in the loop (that would tick before "wait" once only)
}

TEST(PlanExecutorTest, CreateWorkspaceSeesTheParentsBlobsAndDropsItsOwn) {
  Workspace ws;
  RunPlan(Plan(R"(execution_step { name: "init" network: "init" }
                  execution_step { name: "child" network: "local" num_iter: 2
                                   create_workspace: true }
                  execution_step { name: "again" network: "local" create_workspace: true })",
               R"(network { name: "local"
                    op { type: "ConstantFill" output: "scratch" arg { name: "shape" ints: 2 } }
                    op { type: "Iter" input: "count" output: "count" } })"),
          &ws);
  EXPECT_EQ(Count(ws), 3);  // the parent's counter, through both child workspaces
  EXPECT_FALSE(ws.HasBlob("scratch"));
  EXPECT_EQ(ws.GetNet("local"), nullptr);
}

TEST(PlanExecutorTest, ShouldContinueEndsStepsEarly) {
  Workspace ws;
  RunPlan(Plan(R"(execution_step { name: "init" network: "init" }
                  execution_step { name: "train" network: "inc" num_iter: 10 })"),
          &ws, [](int64_t i) { return i < 2; });
  EXPECT_EQ(Count(ws), 2);
}

TEST(PlanExecutorTest, MalformedPlansAreRefusedBeforeAnythingRuns) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {R"(execution_step { name: "s" network: "inc" substep { name: "t" network: "inc" } })",
       "ExecutionStep 's' has both substeps and networks"},
      {R"(execution_step { name: "s" network: "nope" })",
       "ExecutionStep 's' uses undefined net 'nope' (the plan's networks: 'check', 'fail', "
       "'inc', 'init')"},
      {R"(execution_step { name: "s" network: "inc" num_iter: 2 should_stop_blob: "stop" })",
       "num_iter and should_stop_blob exclude each other"},
      {R"(execution_step { name: "s" network: "inc" only_once: true })",
       "only_once needs should_stop_blob"},
      {R"(execution_step { name: "s" network: "inc" report_net: "check" })",
       "report_net needs report_interval > 0"},
      {R"(execution_step { name: "s" network: "inc" criteria_network: "check" })",
       "criteria_network is deprecated"},
      {R"(execution_step { name: "s" network: "inc" num_iter: -1 })", "num_iter must be >= 0"},
      {R"(execution_step { name: "s" substep { name: "t" network: "inc" }
                           num_concurrent_instances: 0 })",
       "num_concurrent_instances must be >= 1"},
      {R"(network { name: "inc" } execution_step { name: "s" network: "inc" })",
       "two networks named 'inc'"},
  };
  for (const auto& c : cases) {
    const std::string& steps = c.first;
    const std::string& want = c.second;
    Workspace ws;
    const std::string err = ErrorOf([&] {
      RunPlan(Plan(R"(execution_step { name: "init" network: "init" })" + steps), &ws);
    });
    EXPECT_NE(err.find(want), std::string::npos) << steps << "\n" << err;
    EXPECT_FALSE(ws.HasBlob("count")) << "the init step ran before the error: " << steps;
  }
}

TEST(PlanExecutorTest, RunTimeErrorsNameTheirCause) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {R"(execution_step { name: "s" network: "inc" should_stop_blob: "missing" })",
       "ExecutionStep 's': should_stop_blob 'missing' does not exist"},
      {R"(execution_step { name: "s" network: "inc" should_stop_blob: "count" })",
       "should_stop_blob 'count' must be a bool scalar on the CPU"},
      {R"(execution_step { name: "s" network: "fail" })", "PlanTestFail failed on purpose"},
  };
  for (const auto& c : cases) {
    Workspace ws;
    const std::string err = ErrorOf([&] {
      RunPlan(Plan(R"(execution_step { name: "init" network: "init" })" + c.first), &ws);
    });
    EXPECT_NE(err.find(c.second), std::string::npos) << c.first << "\n" << err;
  }
}

}  // namespace
}  // namespace halfcaf
