// benchmark's per-operator profile (--per_op): the phase of each op of a training net, its
// FLOPs from the schema's cost inference, the timing loop, the per-type table and the printout.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "core/net.h"
#include "core/op_schema.h"
#include "core/operator.h"
#include "tools/benchmark_output.h"

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

// Runs `net` op by op `iters` times (on_iteration(it) before each pass, sync() after each op) and
// returns each op's total time and, from the shapes it saw on the first pass, its FLOPs.
inline OpProfile TimeEveryOp(NetBase* net, int iters, const std::function<void(int)>& on_iteration,
                             const std::function<void()>& sync) {
  const auto& ops = net->ops();
  OpProfile p;
  p.ms.assign(ops.size(), 0);
  p.flops.assign(ops.size(), 0);
  p.phase = Phases(*net);
  for (int it = 0; it < iters; ++it) {
    on_iteration(it);
    for (size_t i = 0; i < ops.size(); ++i) {
      OperatorBase* op = ops[i].get();
      if (it == 0) {
        // Input shapes as the op sees them (exact, also for shapes that only the run knows).
        std::vector<TensorShape> in;
        for (int k = 0; k < op->InputSize(); ++k) {
          const Blob& b = op->InputBlob(k);
          TensorShape shape;
          if (b.IsTensor() && b.GetTensor().initialized()) {
            shape.dims = b.GetTensor().dims();
            shape.dtype = b.GetTensor().dtype();
          } else {
            shape.unknown = true;
          }
          in.push_back(shape);
        }
        p.flops[i] = OpFlops(*op, in);
      }
      const auto t0 = std::chrono::steady_clock::now();
      try {
        op->Run(0);
        sync();
      } catch (EnforceNotMet& e) {
        e.AddContext("op #" + std::to_string(i) + " (" + op->DebugName() + ")");
        throw;
      }
      p.ms[i] +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  return p;
}

}  // namespace halfcaf
