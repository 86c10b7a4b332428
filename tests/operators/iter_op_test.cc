#include "operators/optimizer/iter_op.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "core/gradient.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

int64_t CounterValue(const Workspace& ws, const std::string& name) {
  const Tensor& t = ws.GetTensor(name);
  EXPECT_EQ(t.dtype(), DataType::INT64);
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{1}));
  return t.data<int64_t>()[0];
}

TEST(IterOpTest, StartsFromZeroAndIncrements) {
  Workspace ws;
  ws.CreateBlob("it");  // exists, holds no data yet
  auto op = CreateOperator(MakeOperatorDef("Iter", "", {"it"}, {"it"}), &ws);
  op->Run(0);
  EXPECT_EQ(CounterValue(ws, "it"), 1);
  op->Run(0);
  op->Run(0);
  EXPECT_EQ(CounterValue(ws, "it"), 3);
}

TEST(IterOpTest, ContinuesFromExistingValue) {
  Workspace ws;
  Tensor* t = ws.CreateTensor("it");
  t->Resize({1});
  t->mutable_data<int64_t>()[0] = 41;
  auto op = CreateOperator(MakeOperatorDef("Iter", "", {"it"}, {"it"}), &ws);
  op->Run(0);
  EXPECT_EQ(CounterValue(ws, "it"), 42);
}

TEST(IterOpTest, WithoutInput) {
  Workspace ws;
  auto op = CreateOperator(MakeOperatorDef("Iter", "", {}, {"c"}), &ws);
  op->Run(0);
  EXPECT_EQ(CounterValue(ws, "c"), 1);
  op->Run(0);
  EXPECT_EQ(CounterValue(ws, "c"), 2);
}

TEST(IterOpTest, InPlaceIsEnforced) {
  Workspace ws;
  ws.CreateBlob("a");
  try {
    CreateOperator(MakeOperatorDef("Iter", "", {"a"}, {"b"}), &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("must be the same blob"), std::string::npos)
        << e.what();
  }
}

TEST(IterOpTest, RejectsWrongCounterType) {
  Workspace ws;
  SetInput(&ws, "it", IntTensor({1}, {3}));
  auto op = CreateOperator(MakeOperatorDef("Iter", "", {"it"}, {"it"}), &ws);
  try {
    op->Run(0);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("int64 tensor with one element"), std::string::npos)
        << e.what();
  }
}

TEST(IterOpTest, NoGradient) {
  auto meta = GetGradientForOp(MakeOperatorDef("Iter", "", {"it"}, {"it"}), {GradientWrapper{}});
  EXPECT_TRUE(meta.ops.empty());
}

// ---- CreateMutex / AtomicIter ------------------------------------------------------------------

void CreateMutexIn(Workspace* ws, const std::string& name) {
  CreateOperator(MakeOperatorDef("CreateMutex", "", {}, {name}), ws)->Run(0);
}

// What the Python optimizer's ConstantFill (shape [1], INT64, value 0) leaves.
void ZeroCounter(Workspace* ws, const std::string& name) {
  Tensor* t = ws->CreateTensor(name);
  t->Resize({1});
  t->mutable_data<int64_t>()[0] = 0;
}

OperatorDef AtomicIterDef() {
  return MakeOperatorDef("AtomicIter", "", {"mutex", "optimizer_iteration"},
                         {"optimizer_iteration"});
}

std::string RunError(const OperatorDef& def, Workspace* ws) { return RunOpError(def, {}, ws); }

TEST(CreateMutexTest, StoresAMutexAndKeepsIt) {
  Workspace ws;
  SetInput(&ws, "mutex", FloatTensor({1}, {1.f}));  // replaced by the mutex
  auto op = CreateOperator(MakeOperatorDef("CreateMutex", "", {}, {"mutex"}), &ws);
  op->Run(0);
  ASSERT_TRUE(ws.GetBlob("mutex")->IsType<BlobMutex>());
  const BlobMutex* first = &ws.GetBlob("mutex")->Get<BlobMutex>();
  op->Run(0);
  EXPECT_EQ(&ws.GetBlob("mutex")->Get<BlobMutex>(), first);
}

TEST(AtomicIterTest, IncrementsLikeIter) {
  Workspace ws;
  CreateMutexIn(&ws, "mutex");
  ZeroCounter(&ws, "optimizer_iteration");
  auto op = CreateOperator(AtomicIterDef(), &ws);
  op->Run(0);
  EXPECT_EQ(CounterValue(ws, "optimizer_iteration"), 1);
  op->Run(0);
  EXPECT_EQ(CounterValue(ws, "optimizer_iteration"), 2);
  // A counter blob without data starts from 0, as for Iter.
  ws.CreateBlob("fresh");
  CreateOperator(MakeOperatorDef("AtomicIter", "", {"mutex", "fresh"}, {"fresh"}), &ws)->Run(0);
  EXPECT_EQ(CounterValue(ws, "fresh"), 1);
}

// Several threads run their own AtomicIter ops on one workspace's mutex and counter, all
// released at once: no count is lost.
TEST(AtomicIterTest, ConcurrentRunsCountExactly) {
  constexpr int kThreads = 4, kRuns = 1000;
  Workspace ws;
  CreateMutexIn(&ws, "mutex");
  ZeroCounter(&ws, "optimizer_iteration");
  std::vector<std::unique_ptr<OperatorBase>> ops;
  for (int t = 0; t < kThreads; ++t) ops.push_back(CreateOperator(AtomicIterDef(), &ws));
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&ops, &ready, t] {
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int r = 0; r < kRuns; ++r) ops[t]->Run(0);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(CounterValue(ws, "optimizer_iteration"), kThreads * kRuns);
}

// AtomicIter takes the mutex: while another holder has it, the op waits and counts nothing.
// (On a loaded machine the threads above may rarely interleave inside the increment, so this is
// the check that does not depend on the scheduler to catch a missing lock.)
TEST(AtomicIterTest, WaitsWhileTheMutexIsHeld) {
  Workspace ws;
  CreateMutexIn(&ws, "mutex");
  ZeroCounter(&ws, "optimizer_iteration");
  auto op = CreateOperator(AtomicIterDef(), &ws);
  std::unique_lock<std::mutex> hold(ws.GetBlob("mutex")->Get<BlobMutex>().mutex);
  std::atomic<bool> done{false};
  std::thread runner([&] {
    op->Run(0);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done.load()) << "AtomicIter ran while the mutex was held";
  hold.unlock();
  runner.join();
  EXPECT_EQ(CounterValue(ws, "optimizer_iteration"), 1);
}

TEST(AtomicIterTest, InPlaceIsEnforced) {
  Workspace ws;
  CreateMutexIn(&ws, "mutex");
  ws.CreateBlob("a");
  const std::string e = RunError(MakeOperatorDef("AtomicIter", "", {"mutex", "a"}, {"b"}), &ws);
  EXPECT_NE(e.find("must be the same blob"), std::string::npos) << e;
}

TEST(AtomicIterTest, RejectsANonMutex) {
  Workspace ws;
  SetInput(&ws, "mutex", FloatTensor({1}, {0.f}));
  ws.CreateBlob("optimizer_iteration");
  std::string e = RunError(AtomicIterDef(), &ws);
  EXPECT_NE(e.find("input 0 'mutex' must hold a mutex made by CreateMutex, got a tensor float[1]"),
            std::string::npos)
      << e;
  ws.CreateBlob("empty");
  e = RunError(
      MakeOperatorDef("AtomicIter", "", {"empty", "optimizer_iteration"}, {"optimizer_iteration"}),
      &ws);
  EXPECT_NE(e.find("got an empty blob"), std::string::npos) << e;
}

TEST(AtomicIterTest, RejectsWrongCounter) {
  Workspace ws;
  CreateMutexIn(&ws, "mutex");
  SetInput(&ws, "optimizer_iteration", IntTensor({1}, {3}));
  std::string e = RunError(AtomicIterDef(), &ws);
  EXPECT_NE(e.find("'optimizer_iteration' must be an int64 tensor with one element"),
            std::string::npos)
      << e;
  // A mutex blob is not a counter either.
  CreateMutexIn(&ws, "mutex2");
  e = RunError(MakeOperatorDef("AtomicIter", "", {"mutex", "mutex2"}, {"mutex2"}), &ws);
  EXPECT_NE(e.find("holds a non-tensor object"), std::string::npos) << e;
}

TEST(AtomicIterTest, NoGradient) {
  for (const auto& def : {AtomicIterDef(), MakeOperatorDef("CreateMutex", "", {}, {"mutex"})}) {
    auto meta = GetGradientForOp(def, {GradientWrapper{}});
    EXPECT_TRUE(meta.ops.empty()) << def.type();
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
