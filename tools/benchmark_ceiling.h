// benchmark --ceiling: how close a training or inference step comes to this machine's GEMM rate.
// The rate is measured here, on the benchmark's threads: the best of a few n x n x n products in
// each GEMM halfcaf can use for a precision's math on the CPU (oneDNN's and OpenBLAS's SGEMM; for
// bf16 also oneDNN's BF16 matmul, FP32 accumulation; fp16 computes in float on the CPU). The
// step's FLOPs are every op's, from the schemas' cost inference on one extra step. The ceiling is
// rate / FLOPs per image: the images/s of a step made only of GEMMs at that rate.
#pragma once

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iomanip>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/bfloat16.h"
#include "core/net.h"
#include "tools/benchmark_output.h"
#include "tools/benchmark_profile.h"
#include "tools/benchmark_session.h"
#ifdef HALFCAF_WITH_DNNL
#include <oneapi/dnnl/dnnl.h>

#include "operators/math/gemm_dnnl.h"
#endif

namespace halfcaf {
namespace bench {

// The products timed: n x n x n, the best of kCeilingReps after one untimed.
constexpr int64_t kCeilingGemmN = 2048;
constexpr int kCeilingReps = 5;

struct GemmRate {
  std::string gemm;  // "oneDNN sgemm", "OpenBLAS sgemm", "oneDNN bf16 matmul"
  double gflops = 0;
};

// GFLOP/s of the fastest of `reps` timed runs of `product` (an n x n x n product) after one
// untimed one; 0 when `product` returns false (no such GEMM here).
inline double BestGemmRate(int64_t n, int reps, const std::function<bool()>& product) {
  if (!product()) return 0;
  double best_s = 0;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    product();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i == 0 || s < best_s) best_s = s;
  }
  const double flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  return best_s > 0 ? flops / best_s / 1e9 : 0;
}

// Each precision's GEMMs that run here and their rates: the SGEMMs (fp32, and fp16, which
// computes in float on the CPU), with bf16 also oneDNN's BF16 matmul; each GEMM is timed once.
using PrecisionRates = std::vector<std::pair<std::string, std::vector<GemmRate>>>;
inline PrecisionRates MeasureGemmRates(const std::vector<std::string>& precisions,
                                       int64_t n = kCeilingGemmN, int reps = kCeilingReps) {
  if (precisions.empty()) return {};
  const size_t count = static_cast<size_t>(n * n);
  std::vector<float> a(count), b(count), c(count);
  for (size_t i = 0; i < count; ++i) {
    a[i] = 0.5f + static_cast<float>(i % 7) * 0.125f;
    b[i] = 1.0f - static_cast<float>(i % 5) * 0.125f;
  }
  const int ni = static_cast<int>(n);
  std::vector<GemmRate> sgemm, bf16;
  auto add = [](std::vector<GemmRate>* to, const std::string& name, double rate) {
    if (rate > 0) to->push_back({name, rate});
  };
#ifdef HALFCAF_WITH_DNNL
  add(&sgemm, "oneDNN sgemm", BestGemmRate(n, reps, [&] {
    return dnnl_sgemm('N', 'N', n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n) ==
           dnnl_success;
  }));
#endif
  // OpenBLAS names the kernels it chose for this CPU (an older family's where it does not know it).
  add(&sgemm, std::string("OpenBLAS sgemm (") + openblas_get_corename() + " kernels)",
      BestGemmRate(n, reps, [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.f, a.data(), ni,
                    b.data(), ni, 0.f, c.data(), ni);
        return true;
      }));
#ifdef HALFCAF_WITH_DNNL
  if (std::count(precisions.begin(), precisions.end(), "bf16")) {
    std::vector<BFloat16> ah(count), bh(count), ch(count);
    for (size_t i = 0; i < count; ++i) {
      ah[i] = BFloat16(a[i]);
      bh[i] = BFloat16(b[i]);
    }
    add(&bf16, "oneDNN bf16 matmul", BestGemmRate(n, reps, [&] {
      return DnnlBFloat16Gemm(false, false, n, n, n, ah.data(), bh.data(), nullptr, ch.data());
    }));
  }
#endif
  PrecisionRates out;
  for (const std::string& p : precisions) {
    out.emplace_back(p, sgemm);
    if (p == "bf16") out.back().second.insert(out.back().second.end(), bf16.begin(), bf16.end());
  }
  return out;
}

// FLOPs of one Step of `s`: every op of its timed nets (the parts' nets when it has them), from
// cost inference on the input shapes of this run.
inline double StepFlops(Session* s, const std::function<void()>& sync) {
  std::vector<NetBase*> nets = s->PartNets();
  if (nets.empty()) nets = {s->net()};
  std::vector<std::shared_ptr<OpTimer>> timers;
  for (NetBase* net : nets) {
    timers.push_back(std::make_shared<OpTimer>(*net, sync));
    net->AttachObserver(timers.back());
  }
  auto detach = [&] {
    for (size_t i = 0; i < nets.size(); ++i) nets[i]->DetachObserver(timers[i].get());
  };
  try {
    s->Step();
  } catch (...) {
    detach();
    throw;
  }
  detach();
  double flops = 0;
  for (const auto& t : timers) {
    for (double f : t->profile().flops) flops += f;
  }
  return flops;
}

// Fills each result's ceiling from its step FLOPs (Result::step_flops) and the best rate of its
// precision's GEMMs (`rates`, by precision).
inline void ApplyCeiling(const PrecisionRates& rates, std::vector<Result>* results) {
  for (Result& r : *results) {
    for (const auto& kv : rates) {
      if (kv.first != r.precision || kv.second.empty() || r.step_flops <= 0) continue;
      for (const GemmRate& g : kv.second) r.gemm_gflops = std::max(r.gemm_gflops, g.gflops);
      r.gflop_per_image = r.step_flops / 1e9 / static_cast<double>(r.batch_size);
      r.ceiling_images_per_sec = r.gemm_gflops / r.gflop_per_image;
      r.share_of_ceiling = r.status == "ok" ? r.images_per_sec / r.ceiling_images_per_sec : 0;
    }
  }
}

// The rates, then a row per configuration: halfcaf's share of the ceiling, and with `pytorch` /
// `ort` the peer's (its images/s over the same ceiling), where it ran.
inline void PrintCeiling(std::ostream& os, const PrecisionRates& rates,
                         const std::vector<Result>& results, int64_t threads, bool pytorch = false,
                         bool ort = false) {
  os << "\nGEMM ceiling (" << threads << " threads; " << kCeilingGemmN << " x " << kCeilingGemmN
     << " x " << kCeilingGemmN << " products, the best of " << kCeilingReps << "):\n";
  for (const auto& kv : rates) {
    os << "  " << kv.first << ":";
    if (kv.second.empty()) os << " no GEMM measured";
    for (size_t i = 0; i < kv.second.size(); ++i) {
      os << (i ? "," : "") << " " << kv.second[i].gemm << " " << Num(kv.second[i].gflops, 4)
         << " GFLOP/s";
    }
    os << "\n";
  }
  os << std::left << std::setw(11) << "precision" << std::right << std::setw(6) << "batch"
     << std::setw(14) << "GFLOP/image" << std::setw(14) << "ceiling img/s" << std::setw(11)
     << "images/s" << std::setw(12) << "of ceiling";
  if (pytorch) os << std::setw(14) << "PyTorch of it";
  if (ort) os << std::setw(10) << "ORT of it";
  os << "\n";
  auto share = [&](bool ok, double images_per_sec, double ceiling) {
    return ok ? Num(100 * images_per_sec / ceiling, 3) + " %" : std::string("-");
  };
  for (const Result& r : results) {
    const double c = r.ceiling_images_per_sec;
    if (c <= 0) continue;
    os << std::left << std::setw(11) << r.precision << std::right << std::setw(6) << r.batch_size
       << std::setw(14) << Num(r.gflop_per_image, 4) << std::setw(14) << Num(c, 4) << std::setw(11)
       << Num(r.images_per_sec, 4) << std::setw(12) << share(r.status == "ok", r.images_per_sec, c);
    if (pytorch) os << std::setw(14) << share(r.pytorch.ok(), r.pytorch.images_per_sec, c);
    if (ort) os << std::setw(10) << share(r.ort.ok(), r.ort.images_per_sec, c);
    os << "\n";
  }
}

}  // namespace bench
}  // namespace halfcaf
