// Memory planning: which blobs share a buffer (lifetimes, exclusions, the dag executor's order,
// devices, sizes), and training with the plan bitwise identical to training without it (tiny
// convnet, LeNet, ResNet-18; FP32, mixed precision, data-parallel replicas, the dag executor).
#include "models/memory_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/argument.h"
#include "core/workspace.h"
#include "models/trainer.h"
#include "models/zoo.h"
#include "tests/util/op_test_util.h"
#include "tests/util/tiny_training.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef Op(const std::string& type, std::vector<std::string> in, std::vector<std::string> out) {
  return MakeOperatorDef(type, "", in, out);
}

NetDef Chain(const std::vector<OperatorDef>& ops, const std::string& in, const std::string& out) {
  NetDef net;
  net.set_name("chain");
  for (const auto& op : ops) *net.add_op() = op;
  net.add_external_input(in);
  net.add_external_output(out);
  return net;
}

std::string Of(const MemoryPlan& plan, const std::string& blob) {
  auto it = plan.renames.find(blob);
  return it == plan.renames.end() ? "" : it->second;
}

TEST(MemoryPlanTest, SharesBlobsWhoseLifetimesDoNotOverlap) {
  // x -> a -> b -> c -> d -> y (Copy: never in place): a is dead once b exists, so c can take
  // a's buffer, d b's.
  const NetDef net = Chain({Op("Copy", {"x"}, {"a"}), Op("Copy", {"a"}, {"b"}),
                            Op("Copy", {"b"}, {"c"}), Op("Copy", {"c"}, {"d"}),
                            Op("Copy", {"d"}, {"y"})},
                           "x", "y");
  const MemoryPlan plan = PlanMemory(net, {});
  EXPECT_EQ(plan.blobs_shared, 4);
  ASSERT_EQ(plan.buffers.size(), 2u);
  EXPECT_EQ(Of(plan, "a"), Of(plan, "c"));
  EXPECT_EQ(Of(plan, "b"), Of(plan, "d"));
  EXPECT_NE(Of(plan, "a"), Of(plan, "b"));
  EXPECT_EQ(Of(plan, "x"), "");
  EXPECT_EQ(Of(plan, "y"), "");
  NetDef renamed = net;
  ApplyMemoryPlan(plan, &renamed);
  EXPECT_EQ(renamed.op(2).output(0), Of(plan, "a"));
  EXPECT_EQ(renamed.op(3).input(0), Of(plan, "a"));
  EXPECT_NE(plan.Summary(true).find("4 blobs on 2 shared buffers"), std::string::npos)
      << plan.Summary(true);
}

TEST(MemoryPlanTest, KeepsStateExternalAliasedAndKeptBlobs) {
  NetDef net = Chain({Op("Relu", {"x"}, {"a"}), Op("Alias", {"a"}, {"alias"}),
                      Op("Relu", {"alias"}, {"b"}), Op("Relu", {"b"}, {"kept"}),
                      Op("Relu", {"kept"}, {"c"}),
                      // reads its output's old value first: state across runs
                      Op("Sum", {"state", "c"}, {"state"}), Op("Relu", {"state"}, {"y"})},
                     "x", "y");
  MemoryPlanOptions o;
  o.keep = {"kept"};
  const MemoryPlan plan = PlanMemory(net, o);
  for (const std::string b : {"x", "a", "alias", "kept", "state", "y"}) {
    EXPECT_EQ(Of(plan, b), "") << b;
  }
  EXPECT_NE(Of(plan, "b"), "");
  EXPECT_EQ(Of(plan, "b"), Of(plan, "c"));
}

TEST(MemoryPlanTest, SharesOnlyWithinADevice) {
  OperatorDef on_gpu = Op("Relu", {"a"}, {"b"});
  on_gpu.mutable_device_option()->set_device_type(static_cast<int>(DeviceType::CUDA));
  const NetDef net = Chain({Op("Relu", {"x"}, {"a"}), on_gpu, Op("Relu", {"b"}, {"c"}),
                            Op("Relu", {"c"}, {"y"})},
                           "x", "y");
  const MemoryPlan plan = PlanMemory(net, {});
  EXPECT_NE(Of(plan, "a"), Of(plan, "b"));  // a is free when b is made, but on the CPU
  EXPECT_EQ(Of(plan, "a"), Of(plan, "c"));  // c is made on the CPU
  EXPECT_EQ(plan.buffers.size(), 2u);
}

TEST(MemoryPlanTest, KnownSizesTakeTheBestFittingBuffer) {
  // Lifetimes a [0, 2], b [1, 3], c [2, 4], d [3, 4] (Copy never runs in place). Largest first:
  // a gets a buffer, d (90) fits in a's once a is dead, b and c overlap everything else; the total
  // is the 118 bytes alive at op 2.
  const NetDef net = Chain({Op("Copy", {"x"}, {"a"}), Op("Copy", {"x"}, {"b"}),
                            Op("Copy", {"a"}, {"c"}), Op("Copy", {"b"}, {"d"}),
                            Op("Sum", {"c", "d"}, {"y"})},
                           "x", "y");
  MemoryPlanOptions o;
  o.bytes = {{"a", 100}, {"b", 10}, {"c", 8}, {"d", 90}};
  const MemoryPlan plan = PlanMemory(net, o);
  EXPECT_EQ(Of(plan, "d"), Of(plan, "a"));
  EXPECT_NE(Of(plan, "b"), Of(plan, "a"));
  EXPECT_NE(Of(plan, "c"), Of(plan, "b"));
  EXPECT_NE(Of(plan, "c"), Of(plan, "a"));
  EXPECT_EQ(plan.bytes_before, 208);
  EXPECT_EQ(plan.bytes_after, 118);
}

// An output takes the buffer of the input its op reads last when the schema allows in place:
// a Relu chain runs on one buffer; a Sum of two parts lands in the first part's.
TEST(MemoryPlanTest, RunsOpsInPlaceWhereTheSchemaAllows) {
  const NetDef net = Chain({Op("Relu", {"x"}, {"a"}), Op("Relu", {"a"}, {"b"}),
                            Op("Sigmoid", {"b"}, {"c"}), Op("Copy", {"c"}, {"d"}),
                            Op("Sum", {"d", "c2"}, {"s"}), Op("Relu", {"s"}, {"y"})},
                           "x", "y");
  const MemoryPlan plan = PlanMemory(net, {});
  EXPECT_EQ(Of(plan, "a"), Of(plan, "b"));
  EXPECT_EQ(Of(plan, "b"), Of(plan, "c"));
  EXPECT_NE(Of(plan, "c"), Of(plan, "d"));  // Copy never runs in place
  EXPECT_EQ(Of(plan, "d"), Of(plan, "s"));  // Sum's (0, 0)
  EXPECT_EQ(plan.in_place, 3);
  // Not onto an input read again later, nor onto one the op reads twice.
  const NetDef again = Chain({Op("Relu", {"x"}, {"a"}), Op("Relu", {"a"}, {"b"}),
                              Op("Sum", {"a", "b"}, {"c"}), Op("Sum", {"c", "c"}, {"d"}),
                              Op("Relu", {"d"}, {"y"})},
                             "x", "y");
  const MemoryPlan p2 = PlanMemory(again, {});
  EXPECT_NE(Of(p2, "a"), Of(p2, "b"));
  EXPECT_EQ(Of(p2, "c"), Of(p2, "a"));
  EXPECT_NE(Of(p2, "d"), Of(p2, "c"));
}

// Two branches the dag executor runs concurrently (Copy: never in place): in list order a2 could
// take a1's buffer, but the branches are unordered in the graph, so the dag plan must not share
// across them. The net then runs the same with and without the plan, many times (a wrong plan
// races).
TEST(MemoryPlanTest, DagSharesOnlyAlongTheGraph) {
  NetDef net = Chain({Op("Copy", {"x"}, {"a1"}), Op("Copy", {"a1"}, {"b1"}),
                      Op("Copy", {"x"}, {"a2"}), Op("Copy", {"a2"}, {"b2"}),
                      Op("Copy", {"b1"}, {"c1"}), Op("Copy", {"b2"}, {"c2"}),
                      Op("Sum", {"c1", "c2"}, {"y"})},
                     "x", "y");
  MemoryPlanOptions list;
  list.order = MemoryPlanOptions::Order::kList;
  const MemoryPlan by_list = PlanMemory(net, list);
  EXPECT_EQ(Of(by_list, "a2"), Of(by_list, "a1"));  // the temptation

  net.set_type("dag");
  net.set_num_workers(4);
  const MemoryPlan by_dag = PlanMemory(net, {});
  for (const std::string a : {"a1", "b1", "c1"}) {
    for (const std::string b : {"a2", "b2", "c2"}) {
      EXPECT_NE(Of(by_dag, a), Of(by_dag, b)) << a << " " << b;
    }
  }
  EXPECT_EQ(Of(by_dag, "c1"), Of(by_dag, "a1"));  // along one branch, sharing stays
  // a is read by two concurrent ops: the second (its last reader in list order) may run in place
  // on it in list order, not with the dag executor.
  NetDef fork = Chain({Op("Relu", {"x"}, {"a"}), Op("Sigmoid", {"a"}, {"b"}),
                       Op("Tanh", {"a"}, {"c"}), Op("Sum", {"b", "c"}, {"y"})},
                      "x", "y");
  EXPECT_EQ(Of(PlanMemory(fork, list), "c"), Of(PlanMemory(fork, list), "a"));
  fork.set_type("dag");
  EXPECT_NE(Of(PlanMemory(fork, {}), "c"), Of(PlanMemory(fork, {}), "a"));

  NetDef planned = net;
  ApplyMemoryPlan(by_dag, &planned);
  planned.set_name("planned");
  Workspace ws;
  ws.CreateTensor("x")->CopyFrom(RandomTensor({64, 256}, 3));
  NetBase* plain = ws.CreateNet(net);
  plain->Run();
  const std::vector<float> want = ToFloatVector(ws.GetTensor("y"));
  NetBase* shared = ws.CreateNet(planned);
  for (int i = 0; i < 50; ++i) {
    shared->Run();
    ASSERT_EQ(ToFloatVector(ws.GetTensor("y")), want) << "run " << i;
  }
}

// Losses of `steps` steps and every parameter after them.
struct Run {
  std::vector<float> losses;
  std::vector<std::vector<float>> params;
  MemoryPlan plan;
};

Run Train(const NetDef& init, const NetDef& fwd, TrainerOptions o, bool plan, int steps) {
  o.optimize_memory = plan;
  Trainer t(init, fwd, o);
  t.Initialize();
  Run r;
  for (int i = 0; i < steps; ++i) {
    t.Step();
    r.losses.push_back(t.ReadStats().loss);
  }
  for (const auto& p : t.params()) {
    const std::string name = t.replicas().empty() ? p.name : t.replicas()[0].Blob(p.name);
    Tensor host;
    host.CopyFrom(t.workspace()->GetTensor(name));
    r.params.push_back(ToFloatVector(host));
  }
  r.plan = t.train_memory_plan();
  return r;
}

void ExpectPlanChangesNothing(const NetDef& init, const NetDef& fwd, const TrainerOptions& o,
                              int steps) {
  const Run plain = Train(init, fwd, o, false, steps);
  const Run planned = Train(init, fwd, o, true, steps);
  EXPECT_EQ(plain.plan.blobs_shared, 0);
  EXPECT_GT(planned.plan.blobs_shared, 8) << planned.plan.Summary();
  EXPECT_LT(planned.plan.buffers.size(), static_cast<size_t>(planned.plan.blobs_shared))
      << planned.plan.Summary();
  EXPECT_EQ(planned.losses, plain.losses);
  ASSERT_EQ(planned.params.size(), plain.params.size());
  for (size_t i = 0; i < plain.params.size(); ++i) EXPECT_EQ(planned.params[i], plain.params[i]) << i;
}

TEST(MemoryPlanTrainingTest, TinyConvnetFp32Fp16ReplicasDag) {
  NetDef init, fwd;
  LoadTinyConvnet(&init, &fwd);
  for (DataType precision : {DataType::FLOAT, DataType::FLOAT16, DataType::BFLOAT16}) {
    SCOPED_TRACE(DataTypeName(precision));
    ExpectPlanChangesNothing(init, fwd, TinyTrainingOptions(precision, 8), 6);
    ExpectPlanChangesNothing(init, fwd,
                             TinyTrainingOptions(precision, 8, Device(), {Device(), Device()}), 6);
    TrainerOptions dag = TinyTrainingOptions(precision, 8, Device(), {Device(), Device()});
    dag.net_type = "dag";
    ExpectPlanChangesNothing(init, fwd, dag, 6);
  }
}

TEST(MemoryPlanTrainingTest, LeNetAndResNet18) {
  for (bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    TrainerOptions o = TinyTrainingOptions(fp16, 4);
    {
      ModelHelper m("lenet", "NCHW", false);
      BuildLeNet(&m, 10, 1, 28);
      o.synthetic_shape = {1, 28, 28};
      o.num_classes = 10;
      ExpectPlanChangesNothing(m.init_net(), m.net(), o, 3);
    }
    {
      ModelHelper m("resnet18", "NCHW", false);
      BuildResNet(&m, 18, 10, 32);
      o.synthetic_shape = {3, 32, 32};
      ExpectPlanChangesNothing(m.init_net(), m.net(), o, 2);
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
