// core/signal_stack.h: with its handler on an alternate stack, a thread can take a stream of
// signals while it runs oneDNN 2.6's SGEMM kernels (math::Gemm) and the heap and the results stay
// intact. Without it (the handler on the interrupted stack) the same run aborts in free() within
// a second on AVX2 and AVX-512 CPUs: oneDNN issue 4845.
#include "core/signal_stack.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/math.h"

namespace halfcaf {
namespace testing {
namespace {

volatile sig_atomic_t g_signals = 0;
extern "C" void CountSignal(int) { g_signals = g_signals + 1; }

// Runs in the death test's child: products of the AC-GAN's fully connected shapes (a batch of 16
// through 6272 inputs, and back) while another thread signals this one every 20 us. Exits 0 when
// every product equals the first one of its shape and many signals arrived.
void SgemmsUnderSignals() {
  HandleSignalOnOwnStack(SIGUSR1, CountSignal);
  const pthread_t self = pthread_self();
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    while (!stop) {
      pthread_kill(self, SIGUSR1);
      usleep(20);
    }
  });
  struct Shape {
    math::Trans ta, tb;
    int64_t M, N, K;
  };
  const Shape shapes[] = {{math::Trans::kNo, math::Trans::kYes, 16, 11, 6272},
                          {math::Trans::kNo, math::Trans::kYes, 16, 6272, 110},
                          {math::Trans::kYes, math::Trans::kNo, 6272, 110, 16}};
  bool same = true;
  const auto start = std::chrono::steady_clock::now();
  for (const Shape& s : shapes) {
    std::vector<float> a(static_cast<size_t>(s.M * s.K)), b(static_cast<size_t>(s.K * s.N));
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i * 37 % 17) / 17.f - 0.5f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i * 53 % 19) / 19.f - 0.5f;
    std::vector<float> first(static_cast<size_t>(s.M * s.N));
    math::Gemm(s.ta, s.tb, s.M, s.N, s.K, 1.f, a.data(), b.data(), 0.f, first.data());
    for (int rep = 0; rep < 400; ++rep) {
      std::vector<float> c(first.size());  // the heap churns between products
      math::Gemm(s.ta, s.tb, s.M, s.N, s.K, 1.f, a.data(), b.data(), 0.f, c.data());
      same = same && c == first;
    }
  }
  stop = true;
  sender.join();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<char> probe(1 << 20, 1);  // one more allocation: glibc checks its neighbours
  std::exit(same && g_signals > 100 && probe[0] == 1 && secs > 0 ? 0 : 3);
}

TEST(SignalStackTest, SgemmsTakeSignalsWithTheHeapIntact) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(SgemmsUnderSignals(), ::testing::ExitedWithCode(0), "");
}

TEST(SignalStackTest, OncePerThread) {
  UseAlternateSignalStack();
  stack_t first;
  ASSERT_EQ(sigaltstack(nullptr, &first), 0);
  UseAlternateSignalStack();
  stack_t second;
  ASSERT_EQ(sigaltstack(nullptr, &second), 0);
  EXPECT_EQ(first.ss_sp, second.ss_sp);
  EXPECT_GE(first.ss_size, size_t{256} << 10);
  std::thread([&] {
    UseAlternateSignalStack();
    stack_t other;
    ASSERT_EQ(sigaltstack(nullptr, &other), 0);
    EXPECT_NE(other.ss_sp, first.ss_sp);
  }).join();
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
