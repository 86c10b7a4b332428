// Prefetcher and BatchPrefetcher (data/prefetcher.h) on their own: jobs run in order on the
// worker, errors come back at Wait, one job at a time, what a job holds is released when it is
// done, Stop and destruction while a job runs, and BatchPrefetcher's source matching.
#include "data/prefetcher.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/enforce.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(PrefetcherTest, RunsJobsOnTheWorkerAndReportsErrorsAtWait) {
  Prefetcher p;
  EXPECT_FALSE(p.pending());
  std::vector<int> done;
  std::thread::id worker;
  for (int i = 0; i < 5; ++i) {
    p.Request([&, i] {
      done.push_back(i);
      worker = std::this_thread::get_id();
    });
    EXPECT_TRUE(p.pending());
    EXPECT_THROW(p.Request([] {}), EnforceNotMet);  // one at a time
    p.Wait();
    EXPECT_FALSE(p.pending());
    EXPECT_NE(worker, std::this_thread::get_id());
  }
  EXPECT_EQ(done, (std::vector<int>{0, 1, 2, 3, 4}));
  p.Request([] { HALFCAF_THROW("record 'k7' is broken"); });
  try {
    p.Wait();
    ADD_FAILURE() << "expected the job's error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("record 'k7' is broken"), std::string::npos);
  }
  // The error was taken: the next job runs normally.
  p.Request([&] { done.push_back(5); });
  p.Wait();
  EXPECT_EQ(done.size(), 6u);
  EXPECT_THROW(p.Wait(), EnforceNotMet);  // nothing pending
  // Discard drops an error.
  p.Request([] { HALFCAF_THROW("dropped"); });
  p.Discard();
  EXPECT_FALSE(p.pending());
}

TEST(PrefetcherTest, ReleasesWhatAJobHoldsWhenItIsDone) {
  Prefetcher p;
  auto source = std::make_shared<int>(3);
  std::weak_ptr<int> weak = source;
  int seen = 0;
  p.Request([&seen, s = std::move(source)] { seen = *s; });
  p.Wait();
  EXPECT_EQ(seen, 3);
  EXPECT_TRUE(weak.expired());
}

TEST(PrefetcherTest, StopAndDestroyWhileAJobRuns) {
  for (int i = 0; i < 20; ++i) {
    std::atomic<bool> started{false}, finished{false};
    {
      Prefetcher p;
      p.Request([&] {
        started = true;
        for (volatile int k = 0; k < 100000; ++k) {
        }
        finished = true;
      });
      if (i % 2 == 0) {
        p.Stop();  // waits for the job
        EXPECT_TRUE(finished);
        EXPECT_FALSE(p.pending());
        p.Stop();  // again: nothing to do
        p.Request([] {});  // a new thread
        p.Wait();
      }
    }  // destructor: waits for the job, joins
    EXPECT_TRUE(started);
    EXPECT_TRUE(finished);
  }
}

// BatchPrefetcher: produce fills a batch (here the source's value and a running count); begin and
// taken are called on the caller's thread around each batch.
TEST(PrefetcherTest, BatchPrefetcherMatchesTheSource) {
  for (bool prefetch : {true, false}) {
    SCOPED_TRACE(prefetch ? "prefetch" : "no prefetch");
    int batch = -1, produced = 0, begun = 0, taken = 0;
    std::thread::id caller = std::this_thread::get_id();
    BatchPrefetcher<int> pf(prefetch, {[&] {
                                         EXPECT_EQ(std::this_thread::get_id(), caller);
                                         ++begun;
                                       },
                                       [&](const std::shared_ptr<const int>& s) {
                                         batch = *s * 100 + produced++;
                                         if (*s < 0) HALFCAF_THROW("bad source ", *s);
                                       },
                                       [&] {
                                         EXPECT_EQ(std::this_thread::get_id(), caller);
                                         ++taken;
                                       }});
    EXPECT_EQ(pf.prefetch(), prefetch);
    auto a = std::make_shared<const int>(1);
    pf.Next(a);
    EXPECT_EQ(batch, 100);
    pf.Ahead(a);
    pf.Next(a);  // the prefetched batch (or, without prefetch, one read now)
    EXPECT_EQ(batch, 101);
    pf.Ahead(a);
    // A new source: a batch prefetched from `a` is dropped.
    auto b = std::make_shared<const int>(2);
    pf.Next(b);
    EXPECT_EQ(batch, prefetch ? 203 : 202);
    EXPECT_EQ(begun, prefetch ? 4 : 3);
    EXPECT_EQ(taken, 3);
    pf.Ahead(b);
    // Errors: at Next, after `taken`.
    auto bad = std::make_shared<const int>(-1);
    EXPECT_THROW(pf.Next(bad), EnforceNotMet);
    EXPECT_EQ(taken, 4);
    pf.Ahead(bad);
    EXPECT_THROW(pf.Next(bad), EnforceNotMet);
    EXPECT_EQ(taken, 5);
    // The prefetcher holds no source while idle.
    std::weak_ptr<const int> weak_b = b;
    pf.Ahead(b);
    b.reset();
    pf.Stop();
    EXPECT_TRUE(weak_b.expired());
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
