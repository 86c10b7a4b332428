// benchmark's per-operator profile (--per_op): the phase of each op of a training net, its
// FLOPs from the schema's cost inference, the timing loop, the per-type table and the printout.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/net.h"
#include "core/observer.h"
#include "core/op_schema.h"
#include "core/operator.h"
#include "tools/benchmark_output.h"
#include "tools/benchmark_progress.h"

namespace halfcaf {

struct OpProfile {
  std::vector<double> ms;     // total over the iterations, per op
  std::vector<double> flops;  // per iteration, per op (0: unknown)
  std::vector<std::string> phase;
};

// forward: ops before the first gradient op; backward: from it to the last gradient op (Sum ops
// of fanned-out gradients included); update: the rest (counters, learning rate, updates).
inline std::vector<std::string> Phases(const NetBase& net) {
  const auto& ops = net.ops();
  int first = -1, last = -1;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i]->def().is_gradient_op()) {
      if (first < 0) first = static_cast<int>(i);
      last = static_cast<int>(i);
    }
  }
  std::vector<std::string> out(ops.size(), "forward");
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (first >= 0 && i >= first) out[i] = i <= last ? "backward" : "update";
  }
  return out;
}

inline double OpFlops(const OperatorBase& op, const std::vector<TensorShape>& in) {
  const OpSchema* schema = OpSchemaRegistry::Schema(op.type());
  if (!schema || !schema->HasCostInference()) return 0;
  for (const auto& s : in) {
    if (s.unknown) return 0;
  }
  try {
    return schema->InferCost(op.def(), in).flops;
  } catch (const std::exception&) {
    return 0;
  }
}

// Per (phase, operator type): count, ms per iteration, share of `total` (set to the op-by-op step
// total), GFLOP/s; sorted by phase, then slowest first.
inline std::vector<bench::OpTypeStat> ByType(const NetBase& net, const OpProfile& p, int iters,
                                      double* total) {
  std::map<std::pair<std::string, std::string>, bench::OpTypeStat> by;
  *total = 0;
  for (size_t i = 0; i < p.ms.size(); ++i) *total += p.ms[i] / iters;
  for (size_t i = 0; i < p.ms.size(); ++i) {
    const std::string& type = net.ops()[i]->type();
    bench::OpTypeStat& t = by[{p.phase[i], type}];
    t.phase = p.phase[i];
    t.type = type;
    t.count += 1;
    t.ms += p.ms[i] / iters;
    t.gflops += p.flops[i] / 1e9;
  }
  std::vector<bench::OpTypeStat> out;
  for (auto& kv : by) {
    bench::OpTypeStat t = kv.second;
    t.percent = *total > 0 ? 100.0 * t.ms / *total : 0;
    t.gflops_per_sec = t.ms > 0 ? t.gflops / (t.ms / 1000.0) : 0;
    out.push_back(t);
  }
  const std::map<std::string, int> rank{{"forward", 0}, {"backward", 1}, {"update", 2}};
  std::sort(out.begin(), out.end(), [&](const bench::OpTypeStat& a, const bench::OpTypeStat& b) {
    if (a.phase != b.phase) return rank.at(a.phase) < rank.at(b.phase);
    return a.ms > b.ms;
  });
  return out;
}

// Prints the profile: the per-type table, the phase totals and the `top` slowest single
// operators (0: all).
inline void PrintProfile(const std::string& what, const NetBase& net, const OpProfile& p,
                         int iters, const std::vector<bench::OpTypeStat>& types, double total, int top_n) {
  std::cout << "\nper-operator profile: " << what << " (" << iters
            << " iterations, op by op; % of the op-by-op step total " << std::fixed
            << std::setprecision(2) << total << " ms)\n";
  std::cout << std::left << std::setw(10) << "phase" << std::setw(34) << "operator type"
            << std::right << std::setw(6) << "count" << std::setw(12) << "ms/iter" << std::setw(8)
            << "%" << std::setw(12) << "GFLOP/s"
            << "\n";
  std::map<std::string, double> phase_ms;
  for (const auto& t : types) {
    phase_ms[t.phase] += t.ms;
    std::cout << std::left << std::setw(10) << t.phase << std::setw(34) << t.type << std::right
              << std::setw(6) << t.count << std::setw(12) << std::setprecision(3) << t.ms
              << std::setw(8) << std::setprecision(1) << t.percent << std::setw(12)
              << (t.gflops > 0 ? bench::Num(t.gflops_per_sec, 4) : "-") << "\n";
  }
  for (const char* ph : {"forward", "backward", "update"}) {
    if (!phase_ms.count(ph)) continue;
    std::cout << "  " << ph << " total " << std::setprecision(3) << phase_ms[ph] << " ms ("
              << std::setprecision(1) << (total > 0 ? 100 * phase_ms[ph] / total : 0) << "%)\n";
  }
  // The slowest single operators.
  std::vector<size_t> idx(p.ms.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return p.ms[a] > p.ms[b]; });
  const size_t top = top_n > 0 ? std::min<size_t>(top_n, idx.size()) : idx.size();
  std::cout << "slowest operators:\n";
  for (size_t k = 0; k < top; ++k) {
    const size_t i = idx[k];
    const OperatorBase& op = *net.ops()[i];
    // Unnamed ops (gradients, casts) are told apart by their first output.
    const std::string name = op.def().name().empty() && op.OutputSize() > 0
                                 ? op.type() + " -> " + op.output_name(0)
                                 : op.DebugName();
    const double ms = p.ms[i] / iters;
    std::cout << "  #" << std::left << std::setw(5) << i << std::setw(10) << p.phase[i]
              << std::setw(52) << name << std::right << std::setw(10) << std::setprecision(3) << ms
              << " ms" << std::setw(7) << std::setprecision(1) << (total > 0 ? 100 * ms / total : 0)
              << "%";
    if (p.flops[i] > 0) {
      std::cout << std::setw(10) << bench::Num(p.flops[i] / 1e9 / (ms / 1000.0), 4) << " GFLOP/s";
    }
    std::cout << "\n";
  }
  std::cout << std::defaultfloat << std::flush;
}

// The per-op timer: an observer on the net (core/observer.h) that adds up each op's time, with
// `sync()` (the device's) after each op so that its work is inside its time, and takes each op's
// FLOPs from the input shapes of its first run (exact, also for shapes only the run knows).
class OpTimer : public NetObserver {
 public:
  OpTimer(const NetBase& net, std::function<void()> sync) : sync_(std::move(sync)) {
    profile_.ms.assign(net.ops().size(), 0);
    profile_.flops.assign(net.ops().size(), 0);
    profile_.phase = Phases(net);
    seen_.assign(net.ops().size(), false);
    starts_.resize(net.ops().size());
  }

  void OnOpStart(const NetBase& net, size_t i) override {
    if (!seen_[i]) {
      const OperatorBase& op = *net.ops()[i];
      std::vector<TensorShape> in;
      for (int k = 0; k < op.InputSize(); ++k) {
        const Blob& b = op.InputBlob(k);
        TensorShape shape;
        if (b.IsTensor() && b.GetTensor().initialized()) {
          shape.dims = b.GetTensor().dims();
          shape.dtype = b.GetTensor().dtype();
        } else {
          shape.unknown = true;
        }
        in.push_back(shape);
      }
      profile_.flops[i] = OpFlops(op, in);
      seen_[i] = true;
    }
    starts_[i] = std::chrono::steady_clock::now();
  }

  void OnOpEnd(const NetBase& /*net*/, size_t i, bool failed) override {
    if (failed) return;
    sync_();
    profile_.ms[i] +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - starts_[i])
            .count();
  }

  const OpProfile& profile() const { return profile_; }

 private:
  std::function<void()> sync_;
  OpProfile profile_;
  std::vector<bool> seen_;
  std::vector<std::chrono::steady_clock::time_point> starts_;
};

// Runs `net` `iters` times (on_iteration(it) before each run) with an OpTimer attached and
// returns each op's total time and FLOPs.
inline OpProfile TimeEveryOp(NetBase* net, int iters, const std::function<void(int)>& on_iteration,
                             const std::function<void()>& sync) {
  auto timer = std::make_shared<OpTimer>(*net, sync);
  net->AttachObserver(timer);
  try {
    for (int it = 0; it < iters; ++it) {
      on_iteration(it);
      net->Run();
    }
  } catch (...) {
    net->DetachObserver(timer.get());
    throw;
  }
  net->DetachObserver(timer.get());
  return timer->profile();
}

// --per_op: times every op of each of `nets` (`label` and, with several, the net's name in the
// tables), prints their tables and adds their per-type times to `r`.
inline void ProfileNets(const std::vector<NetBase*>& nets, const std::string& label, int iters,
                        int top, Progress* progress, const std::function<void()>& sync,
                        bench::Result* r) {
  for (NetBase* net : nets) {
    const std::string what = nets.size() > 1 ? label + ", " + net->name() : label;
    const OpProfile p = TimeEveryOp(
        net, iters, [&](int it) { progress->Show(what, "per-op", it + 1, iters, 0); }, sync);
    progress->Clear();
    double total = 0;
    std::vector<bench::OpTypeStat> types = ByType(*net, p, iters, &total);
    PrintProfile(what, *net, p, iters, types, total, top);
    if (nets.size() > 1) {
      for (auto& t : types) t.phase = net->name() + " " + t.phase;
    }
    r->op_types.insert(r->op_types.end(), types.begin(), types.end());
    r->op_total_ms += total;
  }
}

}  // namespace halfcaf
