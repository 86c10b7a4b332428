// --trace on the tools: train_net's trace of ResNet-50 training steps (one event per operator run,
// the ops' durations adding up to the measured step), run_net's of a dag net (a track per worker),
// Caffe2's MNIST tutorial nets reading a DB (the prefetch thread's track), benchmark's (each
// configuration and step), and the errors.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/proto_io.h"
#include "data/db.h"
#include "proto/halfcaf.pb.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return json::parse(in);  // throws (failing the test) on invalid JSON
}

struct Trace {
  std::map<int, std::string> tracks;  // tid -> thread name
  std::vector<json> events;           // the "X" events
};

Trace Load(const std::string& path) {
  Trace t;
  const json j = ReadJson(path);
  for (const json& e : j.at("traceEvents")) {
    if (e.at("ph") == "M") {
      if (e.at("name") == "thread_name") t.tracks[e.at("tid").get<int>()] = e.at("args").at("name");
      continue;
    }
    EXPECT_EQ(e.at("ph"), "X") << e.dump();
    t.events.push_back(e);
  }
  return t;
}

double Start(const json& e) { return e.at("ts").get<double>(); }
double End(const json& e) { return e.at("ts").get<double>() + e.at("dur").get<double>(); }
bool Within(const json& inner, const json& outer) {
  return inner.at("tid") == outer.at("tid") && Start(inner) >= Start(outer) - 1e-3 &&
         End(inner) <= End(outer) + 1e-3;
}

TEST(TraceToolTest, ResNet50TrainingStepsHaveOneEventPerOpRunAddingUpToTheStep) {
  const std::string dir = TestTempDir() + "/trace_r50";
  ASSERT_EQ(RunTool("make_model", "--model resnet50 --out " + dir).exit_code, 0);
  const std::string trace = dir + "/trace.json";
  const ToolResult r = RunTool(
      "train_net", "--net " + dir + "/train_net.pbtxt --init_net " + dir +
                       "/init_net.pbtxt --data_format synthetic --synthetic_shape 3,224,224 "
                       "--synthetic_count 8 --num_classes 1000 --batch_size 2 --iters 2 "
                       "--log_every 2 --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("events written to " + trace), std::string::npos) << r.err;
  const Trace t = Load(trace);
  NetDef forward;
  ReadProtoFromFile(dir + "/train_net.pbtxt", &forward);

  std::vector<json> steps, nets, ops;
  for (const json& e : t.events) {
    if (e.at("cat") == "step") steps.push_back(e);
    if (e.at("cat") == "net") nets.push_back(e);
    if (e.at("cat") == "op") ops.push_back(e);
  }
  ASSERT_EQ(steps.size(), 2u);
  // Every net run holds exactly as many op events as the net has ops (one per op run).
  ASSERT_FALSE(nets.empty());
  for (const json& n : nets) {
    int inside = 0;
    for (const json& o : ops) inside += o.at("args").at("net") == n.at("name") && Within(o, n);
    EXPECT_EQ(inside, n.at("args").at("ops").get<int>()) << n.dump();
  }
  for (const json& s : steps) {
    double op_us = 0;
    int convs = 0, conv_grads = 0;
    std::set<std::string> net_names;
    for (const json& o : ops) {
      if (!Within(o, s)) continue;
      op_us += o.at("dur").get<double>();
      convs += o.at("name") == "Conv";
      conv_grads += o.at("name") == "ConvGradient";
      net_names.insert(o.at("args").at("net").get<std::string>());
      EXPECT_EQ(o.at("args").at("device"), "cpu");
    }
    // ResNet-50: 53 convolutions forward and 53 backward in every step.
    EXPECT_EQ(convs, 53) << s.dump();
    EXPECT_EQ(conv_grads, 53) << s.dump();
    const double step_us = s.at("dur").get<double>();
    std::printf("step %d: %.1f ms, its ops %.1f ms (%.2f%%), nets:",
                s.at("args").at("iteration").get<int>(), step_us / 1e3, op_us / 1e3,
                100 * op_us / step_us);
    for (const auto& n : net_names) std::printf(" %s", n.c_str());
    std::printf("\n");
    EXPECT_LE(op_us, step_us);
    EXPECT_GE(op_us, 0.95 * step_us);
  }
  // Every op event has what the timeline shows of it.
  for (const json& o : ops) {
    const json& a = o.at("args");
    ASSERT_TRUE(a.contains("bytes_in") && a.contains("bytes_out") && a.contains("op")) << o.dump();
  }
  std::set<std::string> names;
  for (const auto& kv : t.tracks) names.insert(kv.second);
  EXPECT_TRUE(names.count("main"));
}

TEST(TraceToolTest, TrainNetTraceItersWritesTheFileEarlyAndTrainingGoesOn) {
  const std::string dir = TestTempDir() + "/trace_iters";
  ASSERT_EQ(RunTool("make_model", "--model lenet --out " + dir).exit_code, 0);
  const std::string trace = dir + "/trace.json";
  const ToolResult r = RunTool(
      "train_net", "--net " + dir + "/train_net.pbtxt --init_net " + dir +
                       "/init_net.pbtxt --data_format synthetic --batch_size 8 --iters 6 "
                       "--log_every 3 --trace " + trace + " --trace_iters 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("iter 6"), std::string::npos) << r.out;
  int steps = 0;
  for (const json& e : Load(trace).events) steps += e.at("cat") == "step";
  EXPECT_EQ(steps, 2);
}

TEST(TraceToolTest, RunNetDagWorkersHaveTheirOwnTracks) {
  const std::string dir = TestTempDir() + "/trace_dag";
  fs::create_directories(dir);
  {
    std::ofstream net(dir + "/net.pbtxt");
    net << R"(name: "branches" type: "dag" num_workers: 2
      op { type: "GaussianFill" output: "x" arg { name: "shape" ints: 64 ints: 64 } }
      op { type: "Relu" input: "x" output: "a" }
      op { type: "Sigmoid" input: "x" output: "b" }
      op { type: "Tanh" input: "x" output: "c" }
      op { type: "Sum" input: "a" input: "b" input: "c" output: "y" })";
  }
  const std::string trace = dir + "/trace.json";
  const ToolResult r = RunTool("run_net", "--net " + dir + "/net.pbtxt --iters 20 --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Trace t = Load(trace);
  int ops = 0;
  std::set<std::string> op_tracks;
  for (const json& e : t.events) {
    if (e.at("cat") != "op") continue;
    ++ops;
    op_tracks.insert(t.tracks.at(e.at("tid").get<int>()));
  }
  EXPECT_EQ(ops, 20 * 5);
  for (const auto& name : op_tracks) {
    EXPECT_TRUE(name == "dag worker 1 of 2 (net 'branches')" ||
                name == "dag worker 2 of 2 (net 'branches')")
        << name;
  }
}

TEST(TraceToolTest, BenchmarkTracesEachConfigurationAndStep) {
  const std::string dir = TestTempDir() + "/trace_bench";
  fs::create_directories(dir);
  const std::string trace = dir + "/trace.json";
  const ToolResult r = RunTool("benchmark", "--model lenet --precision fp32,bf16 --batch_size 4 "
                                            "--iters 3 --warmup 1 --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, int> count;
  for (const json& e : Load(trace).events) {
    if (e.at("cat") != "op") ++count[e.at("name").get<std::string>()];
  }
  EXPECT_EQ(count["lenet fp32 batch 4"], 1);
  EXPECT_EQ(count["lenet bf16 batch 4"], 1);
  EXPECT_EQ(count["warm-up step"], 2);
  EXPECT_EQ(count["timed step"], 6);
}

TEST(TraceToolTest, UnwritableTracePathIsOneClearErrorBeforeAnyWork) {
  const ToolResult r = RunTool("run_net", "--net " + SourceDir() +
                                              "/models/lenet/lenet_train_net.pbtxt --trace "
                                              "/nonexistent_dir_for_trace/t.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--trace: cannot write '/nonexistent_dir_for_trace/t.json'"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
