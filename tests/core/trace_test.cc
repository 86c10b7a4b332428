// Net observers (core/observer.h) and the trace recorder (core/trace.h): what they see of simple
// and dag nets, failing ops, nets made before and after a trace, and the JSON file's structure.
#include "core/trace.h"

#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/net.h"
#include "core/proto_io.h"
#include "tests/util/error_of.h"
#include "tests/util/net_file.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace {

using nlohmann::json;
using testing::ErrorOf;
using testing::ParseNet;
using testing::RandomTensor;
using testing::SetInput;

// Two branches from x, joined by Sum.
NetDef TwoBranches(const std::string& type) {
  NetDef net = ParseNet(R"(
    name: "branches"
    op { type: "FC" input: "x" input: "w1" input: "b1" output: "a" name: "fc_a" }
    op { type: "Relu" input: "a" output: "a" }
    op { type: "FC" input: "x" input: "w2" input: "b2" output: "c" name: "fc_c" }
    op { type: "Sum" input: "a" input: "c" output: "y" }
  )");
  net.set_type(type);
  if (type == "dag") net.set_num_workers(2);
  return net;
}

void Feed(Workspace* ws) {
  SetInput(ws, "x", RandomTensor({4, 6}, 1));
  SetInput(ws, "w1", RandomTensor({5, 6}, 2));
  SetInput(ws, "b1", RandomTensor({5}, 3));
  SetInput(ws, "w2", RandomTensor({5, 6}, 4));
  SetInput(ws, "b2", RandomTensor({5}, 5));
}

// Records the callbacks it gets, in order ("net+", "op+ 0", "op- 0", ..., "net-").
class Recording : public NetObserver {
 public:
  void OnNetStart(const NetBase&) override { Log("net+"); }
  void OnNetEnd(const NetBase&) override { Log("net-"); }
  void OnOpStart(const NetBase&, size_t i) override { Log("op+ " + std::to_string(i)); }
  void OnOpEnd(const NetBase&, size_t i, bool failed) override {
    Log((failed ? "op! " : "op- ") + std::to_string(i));
  }
  std::vector<std::string> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  void Log(const std::string& s) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(s);
  }
  std::mutex mu_;
  std::vector<std::string> calls_;
};

TEST(NetObserverTest, SeesEveryOpOfASimpleNetInOrder) {
  Workspace ws;
  Feed(&ws);
  NetBase* net = ws.CreateNet(TwoBranches("simple"));
  auto rec = std::make_shared<Recording>();
  net->AttachObserver(rec);
  net->Run();
  EXPECT_EQ(rec->calls(), (std::vector<std::string>{"net+", "op+ 0", "op- 0", "op+ 1", "op- 1",
                                                    "op+ 2", "op- 2", "op+ 3", "op- 3", "net-"}));
  net->DetachObserver(rec.get());
  EXPECT_EQ(net->num_observers(), 0u);
  net->Run();
  EXPECT_EQ(rec->calls().size(), 10u);  // detached: nothing more
}

TEST(NetObserverTest, SeesEveryOpOfADagNetBetweenItsStartAndEnd) {
  Workspace ws;
  Feed(&ws);
  NetBase* net = ws.CreateNet(TwoBranches("dag"));
  auto rec = std::make_shared<Recording>();
  net->AttachObserver(rec);
  for (int run = 0; run < 20; ++run) net->Run();
  const auto calls = rec->calls();
  ASSERT_EQ(calls.size(), 20u * 10);
  for (int run = 0; run < 20; ++run) {
    EXPECT_EQ(calls[run * 10], "net+");
    EXPECT_EQ(calls[run * 10 + 9], "net-");
    std::multiset<std::string> ops(calls.begin() + run * 10 + 1, calls.begin() + run * 10 + 9);
    EXPECT_EQ(ops, (std::multiset<std::string>{"op+ 0", "op- 0", "op+ 1", "op- 1", "op+ 2",
                                               "op- 2", "op+ 3", "op- 3"}));
  }
}

TEST(NetObserverTest, AFailingOpEndsAsFailedAndTheErrorStillNamesIt) {
  Workspace ws;
  Feed(&ws);
  SetInput(&ws, "w2", RandomTensor({5, 7}, 4));  // FC fc_c: 7 inputs per row, x has 6
  NetBase* net = ws.CreateNet(TwoBranches("simple"));
  auto rec = std::make_shared<Recording>();
  net->AttachObserver(rec);
  const std::string err = ErrorOf([&] { net->Run(); });
  EXPECT_NE(err.find("op #2 (FC 'fc_c')"), std::string::npos) << err;
  const auto calls = rec->calls();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back(), "op! 2");
}

TEST(NetObserverTest, GlobalCreatorsReachNetsCreatedWhileRegistered) {
  Workspace ws;
  Feed(&ws);
  NetDef before = TwoBranches("simple");
  before.set_name("before");
  ws.CreateNet(before);
  auto rec = std::make_shared<Recording>();
  const int id = AddGlobalNetObserverCreator([rec](const NetBase& net) {
    return net.name() == "skipped" ? nullptr : std::shared_ptr<NetObserver>(rec);
  });
  NetDef during = TwoBranches("simple"), skipped = TwoBranches("simple");
  during.set_name("during");
  skipped.set_name("skipped");
  NetBase* d = ws.CreateNet(during);
  NetBase* s = ws.CreateNet(skipped);
  RemoveGlobalNetObserverCreator(id);
  NetDef after = TwoBranches("simple");
  after.set_name("after");
  NetBase* a = ws.CreateNet(after);
  EXPECT_EQ(ws.GetNet("before")->num_observers(), 0u);
  EXPECT_EQ(d->num_observers(), 1u);
  EXPECT_EQ(s->num_observers(), 0u);
  EXPECT_EQ(a->num_observers(), 0u);
}

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return json::parse(in);  // throws on invalid JSON
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/halfcaf_trace_" + std::to_string(getpid()) + "_" + name;
}

TEST(TraceRecorderTest, OneEventPerOpRunAndPerNetRunInAValidChromeTrace) {
  Workspace ws;
  Feed(&ws);
  TraceRecorder trace;
  trace.Start();
  NetBase* simple = ws.CreateNet(TwoBranches("simple"));
  NetDef dag_def = TwoBranches("dag");
  dag_def.set_name("branches_dag");
  NetBase* dag = ws.CreateNet(dag_def);
  for (int i = 0; i < 3; ++i) {
    simple->Run();
    dag->Run();
  }
  {
    trace::Span s("test", "a span \"quoted\"\n");
    s.Arg("n", 7);
  }
  trace.Stop();
  simple->Run();  // after Stop: not recorded
  const std::string path = TempPath("ops.json");
  trace.WriteJson(path);
  const json j = ReadJson(path);
  ASSERT_TRUE(j.contains("traceEvents"));
  std::map<int, std::string> tracks;
  std::map<std::string, int> ops_per_net, nets;
  int spans = 0;
  for (const json& e : j["traceEvents"]) {
    if (e["ph"] == "M") {
      if (e["name"] == "thread_name") tracks[e["tid"].get<int>()] = e["args"]["name"];
      continue;
    }
    ASSERT_EQ(e["ph"], "X") << e.dump();
    ASSERT_TRUE(e.contains("ts") && e.contains("dur") && e.contains("pid") && e.contains("tid"));
    EXPECT_GE(e["dur"].get<double>(), 0);
    if (e["cat"] == "op") {
      ++ops_per_net[e["args"]["net"]];
      EXPECT_EQ(e["args"]["device"], "cpu");
      EXPECT_GT(e["args"]["bytes_in"].get<int64_t>(), 0) << e.dump();
      EXPECT_GT(e["args"]["bytes_out"].get<int64_t>(), 0) << e.dump();
      if (e["name"] == "FC") EXPECT_TRUE(e["args"].contains("name"));
    } else if (e["cat"] == "net") {
      ++nets[e["name"]];
      EXPECT_EQ(e["args"]["ops"], 4);
    } else {
      EXPECT_EQ(e["name"], "a span \"quoted\"\n");
      EXPECT_EQ(e["args"]["n"], 7);
      ++spans;
    }
  }
  EXPECT_EQ(ops_per_net["branches"], 3 * 4);
  EXPECT_EQ(ops_per_net["branches_dag"], 3 * 4);
  EXPECT_EQ(nets["branches"], 3);
  EXPECT_EQ(nets["branches_dag"], 3);
  EXPECT_EQ(spans, 1);
  // The test's thread is "main"; the dag net's ops ran on its two named workers.
  std::set<std::string> names;
  for (const auto& kv : tracks) names.insert(kv.second);
  EXPECT_TRUE(names.count("main")) << j.dump();
  EXPECT_TRUE(names.count("dag worker 1 of 2 (net 'branches_dag')") ||
              names.count("dag worker 2 of 2 (net 'branches_dag')"))
      << j.dump();
  EXPECT_EQ(j["otherData"]["dropped_events"], 0);
}

TEST(TraceRecorderTest, EventsBeyondTheLimitAreCountedNotKept) {
  Workspace ws;
  Feed(&ws);
  TraceRecorder trace(5);
  trace.Start();
  NetBase* net = ws.CreateNet(TwoBranches("simple"));
  net->Run();
  net->Run();
  trace.Stop();
  EXPECT_EQ(trace.num_events(), 5u);
  EXPECT_EQ(trace.num_dropped(), 2u * 5 - 5);
}

TEST(TraceRecorderTest, OffRecordsNothingAndOneTraceAtATime) {
  EXPECT_EQ(trace::Active(), nullptr);
  { trace::Span s("test", "nobody listens"); }
  TraceRecorder a, b;
  a.Start();
  EXPECT_TRUE(a.active());
  EXPECT_NE(ErrorOf([&] { b.Start(); }).find("another trace is being recorded"),
            std::string::npos);
  a.Stop();
  EXPECT_EQ(trace::Active(), nullptr);
  EXPECT_EQ(a.num_events(), 0u);
  b.Start();  // free again
  b.Stop();
}

TEST(TraceRecorderTest, NetsOutlivingTheirTraceRecordNothingIntoTheNext) {
  Workspace ws;
  Feed(&ws);
  NetBase* net = nullptr;
  {
    TraceRecorder first;
    first.Start();
    net = ws.CreateNet(TwoBranches("simple"));
    first.Stop();
  }
  TraceRecorder second;
  second.Start();
  net->Run();  // its observer belongs to the first trace, which is gone
  second.Stop();
  EXPECT_EQ(second.num_events(), 0u);
}

TEST(TraceRecorderTest, ScopedTraceRefusesAnUnwritablePathAtStart) {
  const std::string err =
      ErrorOf([] { ScopedTrace t("/nonexistent_folder_for_trace/trace.json"); });
  EXPECT_NE(err.find("--trace: cannot write '/nonexistent_folder_for_trace/trace.json'"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace halfcaf
