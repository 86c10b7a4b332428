#include "core/net.h"

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "core/proto_io.h"
#include "tests/util/op_test_util.h"
#include "tests/util/error_of.h"
#include "tests/util/net_file.h"

namespace halfcaf {
namespace {

using testing::ErrorOf;
using testing::ParseNet;
using testing::RandomTensor;
using testing::SetInput;
using testing::ToFloatVector;

// Two independent branches (x -> a1 -> a2, x -> b1 -> b2) joined by Sum, and an in-place op.
const char* kBranchyNet = R"(
  name: "branchy"
  op { type: "FC" input: "x" input: "w1" input: "b1" output: "a1" }
  op { type: "Relu" input: "a1" output: "a1" }
  op { type: "FC" input: "a1" input: "w2" input: "b2" output: "a2" }
  op { type: "FC" input: "x" input: "w3" input: "b3" output: "c1" }
  op { type: "Scale" input: "c1" output: "c2" arg { name: "scale" f: 0.5 } }
  op { type: "FC" input: "c2" input: "w4" input: "b4" output: "c3" }
  op { type: "Sum" input: "a2" input: "c3" output: "y" }
  op { type: "Relu" input: "y" output: "z" }
)";

void FeedBranchy(Workspace* ws) {
  SetInput(ws, "x", RandomTensor({4, 6}, 1));
  SetInput(ws, "w1", RandomTensor({5, 6}, 2));
  SetInput(ws, "b1", RandomTensor({5}, 3));
  SetInput(ws, "w2", RandomTensor({3, 5}, 4));
  SetInput(ws, "b2", RandomTensor({3}, 5));
  SetInput(ws, "w3", RandomTensor({7, 6}, 6));
  SetInput(ws, "b3", RandomTensor({7}, 7));
  SetInput(ws, "w4", RandomTensor({3, 7}, 8));
  SetInput(ws, "b4", RandomTensor({3}, 9));
}

TEST(NetTest, DagMatchesSimple) {
  NetDef simple = ParseNet(kBranchyNet);
  NetDef dag = simple;
  dag.set_type("dag");
  dag.set_num_workers(3);
  Workspace ws1, ws2;
  FeedBranchy(&ws1);
  FeedBranchy(&ws2);
  ws1.CreateNet(simple);
  ws2.CreateNet(dag);
  for (int iter = 0; iter < 20; ++iter) {
    ws1.RunNet("branchy");
    ws2.RunNet("branchy");
    EXPECT_EQ(ToFloatVector(ws1.GetTensor("z")), ToFloatVector(ws2.GetTensor("z")));
    EXPECT_EQ(ToFloatVector(ws1.GetTensor("a1")), ToFloatVector(ws2.GetTensor("a1")));
  }
}

TEST(NetTest, DagPropagatesErrors) {
  NetDef net = ParseNet(kBranchyNet);
  net.set_type("dag");
  Workspace ws;
  FeedBranchy(&ws);
  ws.CreateNet(net);
  SetInput(&ws, "w4", RandomTensor({3, 8}, 8));  // now inconsistent with c2
  std::string err = ErrorOf([&] { ws.RunNet("branchy"); });
  EXPECT_NE(err.find("op #5 (FC)"), std::string::npos) << err;
  EXPECT_NE(err.find("[3, 8]"), std::string::npos) << err;
  // The net stays usable after an error.
  SetInput(&ws, "w4", RandomTensor({3, 7}, 8));
  ws.RunNet("branchy");
}

TEST(NetTest, UnknownOpSuggestsCloseMatches) {
  Workspace ws;
  SetInput(&ws, "x", RandomTensor({2}, 1));
  std::string err = ErrorOf([&] { ws.CreateNet(ParseNet("op { type: \"Rellu\" input: \"x\" output: \"y\" }")); });
  EXPECT_NE(err.find("unknown operator type 'Rellu'"), std::string::npos) << err;
  EXPECT_NE(err.find("Relu"), std::string::npos) << err;
  EXPECT_NE(err.find("op #0"), std::string::npos) << err;
}

TEST(NetTest, HugeUnknownTypeIsRejectedQuicklyAndBriefly) {
  Workspace ws;
  NetDef net;
  net.add_op()->set_type(std::string(1 << 20, 'A'));
  const auto start = std::chrono::steady_clock::now();
  std::string err = ErrorOf([&] { ws.CreateNet(net); });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);  // was 12 s: edit distance against every registered name
  EXPECT_NE(err.find("unknown operator type '" + std::string(80, 'A') + "... (1048576 chars)'"),
            std::string::npos) << err.substr(0, 400);
  EXPECT_LT(err.size(), 400u) << err.substr(0, 400);
  // Typos in names of ordinary length still get suggestions.
  net.mutable_op(0)->set_type("SpatialBNN");
  EXPECT_NE(ErrorOf([&] { ws.CreateNet(net); }).find("did you mean: SpatialBN"), std::string::npos);
}

int ThreadCount() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

TEST(NetTest, DagNumWorkersIsBounded) {
  NetDef net = ParseNet(kBranchyNet);
  net.set_type("dag");
  net.set_num_workers(100000);
  Workspace ws;
  FeedBranchy(&ws);
  const int before = ThreadCount();
  ws.CreateNet(net);
  const int hardware = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  EXPECT_LE(ThreadCount() - before, 4 * hardware);
  ws.RunNet("branchy");
  EXPECT_EQ(ws.GetTensor("z").dims(), (std::vector<int64_t>{4, 3}));
}

TEST(NetTest, MissingInputNamedBeforeRunning) {
  Workspace ws;
  SetInput(&ws, "x", RandomTensor({2, 3}, 1));
  std::string err = ErrorOf([&] {
    ws.CreateNet(ParseNet("name: \"n\" op { type: \"Relu\" input: \"x\" output: \"y\" }"
                          "op { type: \"FC\" name: \"fc1\" input: \"y\" input: \"W\" input: \"b\" output: \"z\" }"));
  });
  EXPECT_NE(err.find("net 'n' op #1 (FC 'fc1')"), std::string::npos) << err;
  EXPECT_NE(err.find("'W' does not exist"), std::string::npos) << err;
  EXPECT_FALSE(ws.HasBlob("z"));
}

TEST(NetTest, SchemaCountsChecked) {
  Workspace ws;
  SetInput(&ws, "x", RandomTensor({2, 3}, 1));
  std::string err = ErrorOf([&] {
    ws.CreateNet(ParseNet("op { type: \"FC\" input: \"x\" input: \"x\" output: \"z\" }"));
  });
  EXPECT_NE(err.find("FC takes 3 input(s), 1 output(s), got 2 input(s)"), std::string::npos)
      << err;
}

TEST(NetTest, DisallowedInPlaceChecked) {
  Workspace ws;
  SetInput(&ws, "x", RandomTensor({2, 3}, 1));
  SetInput(&ws, "w", RandomTensor({3, 3}, 2));
  SetInput(&ws, "b", RandomTensor({3}, 3));
  std::string err = ErrorOf([&] {
    ws.CreateNet(ParseNet("op { type: \"FC\" input: \"x\" input: \"w\" input: \"b\" output: \"x\" }"));
  });
  EXPECT_NE(err.find("cannot run in place"), std::string::npos) << err;
}

TEST(NetTest, UnknownEngineFallsBackToDefault) {
  Workspace ws;
  SetInput(&ws, "x", testing::FloatTensor({2}, {-1.f, 2.f}));
  ws.RunNetOnce(ParseNet(
      "op { type: \"Relu\" input: \"x\" output: \"y\" engine: \"CUDNN,NNPACK\" "
      "arg { name: \"order\" s: \"NCHW\" } }"));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("y")), (std::vector<float>{0.f, 2.f}));
}

TEST(NetTest, UnknownNetType) {
  Workspace ws;
  std::string err = ErrorOf([&] { ws.CreateNet(ParseNet("name: \"q\" type: \"fancy\"")); });
  EXPECT_NE(err.find("unknown net type 'fancy'"), std::string::npos) << err;
}

TEST(NetTest, CudaOpWithoutBackend) {
#ifndef HALFCAF_WITH_CUDA
  Workspace ws;
  SetInput(&ws, "x", RandomTensor({2}, 1));
  std::string err = ErrorOf([&] {
    ws.CreateNet(ParseNet("op { type: \"Relu\" input: \"x\" output: \"y\" "
                          "device_option { device_type: 1 } }"));
  });
  EXPECT_NE(err.find("no CUDA implementation"), std::string::npos) << err;
#endif
}

TEST(ArgumentTest, CaffeRules) {
  OperatorDef def = MakeOperatorDef("X", "", {}, {},
                                    {MakeArgument("f", 1.5f), MakeArgument("i", 3),
                                     MakeArgument("big", int64_t{1} << 40),
                                     MakeArgument("s", "NHWC"),
                                     MakeArgument("ints", std::vector<int>{1, 2})});
  ArgumentHelper args(def);
  EXPECT_EQ(args.GetSingleArgument<float>("f", 0.f), 1.5f);
  EXPECT_EQ(args.GetSingleArgument<int>("i", 0), 3);
  EXPECT_EQ(args.GetSingleArgument<int>("missing", 9), 9);
  EXPECT_EQ(args.GetSingleArgument<std::string>("s", ""), "NHWC");
  EXPECT_EQ(args.GetRepeatedArgument<int>("ints"), (std::vector<int>{1, 2}));
  EXPECT_THROW(args.GetSingleArgument<float>("i", 0.f), EnforceNotMet);  // no int->float
  EXPECT_THROW(args.GetSingleArgument<int>("big", 0), EnforceNotMet);    // lossy narrowing
  EXPECT_EQ(args.GetSingleArgument<int64_t>("big", 0), int64_t{1} << 40);
}

// An op that, like the CUDA loss ops, finds an error while it runs (argument `bad`) but reports it
// only at CheckDeferredErrors, once.
class DeferredErrorOp final : public Operator<CPUContext> {
 public:
  DeferredErrorOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), bad_(GetSingleArgument<int>("bad", 0) != 0) {}
  void RunOnDevice() override { found_ = found_ || bad_; }
  void CheckDeferredErrors() override {
    const bool found = found_;
    found_ = false;
    HALFCAF_ENFORCE(!found, DebugName(), ": found something bad");
  }

 private:
  bool bad_, found_ = false;
};

}  // namespace

REGISTER_CPU_OPERATOR(NetTestDeferredError, DeferredErrorOp);

namespace {

TEST(NetTest, DeferredErrorsAreReportedAtTheCheckWithTheOpsContext) {
  for (const char* type : {"simple", "dag"}) {
    Workspace ws;
    NetDef net;
    net.set_name("n");
    net.set_type(type);
    *net.add_op() = MakeOperatorDef("NetTestDeferredError", "fine", {}, {});
    *net.add_op() = MakeOperatorDef("NetTestDeferredError", "broken", {}, {},
                                    {MakeArgument("bad", 1)});
    NetBase* n = ws.CreateNet(net);
    n->Run();  // no error yet
    n->Run();
    const std::string err = ErrorOf([&] { n->CheckDeferredErrors(); });
    EXPECT_NE(err.find("net 'n' op #1 (NetTestDeferredError 'broken'): NetTestDeferredError "
                       "'broken': found something bad"),
              std::string::npos)
        << type << ": " << err;
    EXPECT_EQ(ErrorOf([&] { n->CheckDeferredErrors(); }), "") << "reported once";
    // A one-shot run checks by itself.
    EXPECT_NE(ErrorOf([&] { ws.RunNetOnce(net); }).find("found something bad"), std::string::npos);
  }
}

}  // namespace
}  // namespace halfcaf
