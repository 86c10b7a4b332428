// benchmark --observer_overhead: what the net runtime's observer hooks (core/observer.h) cost.
// The timed net runs `iters` times each way, interleaved in rounds so that drift of the machine
// touches all three alike:
//   no hooks   its ops called in a loop, as a net without the observer check would run them
//   hooks off  NetBase::Run with no observer attached: every run of every tool without --trace
//   tracing    NetBase::Run with --trace's observer recording every op into a TraceRecorder
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/net.h"
#include "core/trace.h"

namespace halfcaf {

inline void MeasureObserverOverhead(NetBase* net, const std::string& label, int iters,
                                    const std::function<void()>& sync) {
  using Clock = std::chrono::steady_clock;
  const int rounds = std::max(1, std::min(iters, 10));
  const int per_round = std::max(1, iters / rounds);
  double ms[3] = {0, 0, 0};
  size_t events = 0;
  for (int round = 0; round < rounds; ++round) {
    for (int way = 0; way < 3; ++way) {
      TraceRecorder recorder;
      std::shared_ptr<NetObserver> observer;
      if (way == 2) {
        recorder.Start();
        observer = recorder.ObserverFor(*net);
        net->AttachObserver(observer);
      }
      const auto t0 = Clock::now();
      for (int i = 0; i < per_round; ++i) {
        if (way == 0) {
          for (const auto& op : net->ops()) op->Run(0);
        } else {
          net->Run();
        }
        sync();
      }
      ms[way] += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (way == 2) {
        net->DetachObserver(observer.get());
        recorder.Stop();
        events += recorder.num_events();
      }
    }
  }
  const double runs = static_cast<double>(rounds) * per_round;
  const double base = ms[0] / runs;
  std::printf("observer overhead, %s (%zu ops, %d runs each way, %d rounds): no hooks %.4f ms/run,"
              " hooks off %.4f ms/run (%+.3f%%), tracing %.4f ms/run (%+.3f%%, %zu events)\n",
              label.c_str(), net->ops().size(), static_cast<int>(runs), rounds, base,
              ms[1] / runs, 100 * (ms[1] / runs / base - 1), ms[2] / runs,
              100 * (ms[2] / runs / base - 1), events);
  std::fflush(stdout);
}

}  // namespace halfcaf
