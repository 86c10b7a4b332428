// What `benchmark` reports, and the ways it writes it: a table on stdout, JSON, CSV and an SVG
// chart of images/s against batch size. Header-only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/proto_io.h"
#include "core/strings.h"

namespace halfcaf {
namespace bench {

// Time spent in one operator type of one phase, per iteration of the op-by-op pass.
struct OpTypeStat {
  std::string phase;  // forward, backward, update
  std::string type;
  int count = 0;       // ops of this type in the phase
  double ms = 0;       // per iteration
  double percent = 0;  // of the op-by-op step total
  double gflops = 0;   // GFLOP per iteration (from the schema's cost function; 0: unknown)
  double gflops_per_sec = 0;
};

// A peer's numbers for one configuration (PyTorch or ONNX Runtime), when it printed them.
struct PeerNumbers {
  bool ran = false;    // the peer printed a line for this configuration
  std::string status;  // ok | skipped: <why> | out of memory
  double images_per_sec = 0, ms_median = 0, peak_memory_mb = 0;
  std::vector<double> part_ms;  // the medians of the parts of an iteration (Result::part_names)
  bool ok() const { return ran && images_per_sec > 0; }
};

// One precision x batch-size measurement (halfcaf), with the peers' numbers when they ran.
struct Result {
  std::string precision;  // fp32 | fp16 | bf16
  int64_t batch_size = 0;
  std::string status = "ok";  // ok | out of memory
  std::string error;
  std::vector<double> ms;  // per timed iteration
  double ms_median = 0, ms_min = 0, ms_max = 0, ms_p10 = 0, ms_p90 = 0;
  double images_per_sec = 0;
  double ms_per_1000_images = 0;
  // An iteration made of parts timed apart (the AC-GAN: d_step, g_step): their names, times per
  // timed iteration and medians.
  std::vector<std::string> part_names;
  std::vector<std::vector<double>> part_ms;
  std::vector<double> part_ms_median;
  double speedup_vs_fp32 = 0;  // 0: no fp32 at this batch
  double peak_memory_mb = 0;
  double cost_per_million_images = 0;
  int64_t skipped_steps = 0;
  // Multi-process runs (num_shards > 1): rank 0's gradient exchange per timed step, and the part
  // of it the step waited for (not hidden behind the backward pass).
  double exchange_ms = 0, exposed_ms = 0;
  std::vector<OpTypeStat> op_types;
  double op_total_ms = 0;
  // The peers (benchmark --compare pytorch,ort).
  PeerNumbers pytorch, ort;
  // --ceiling (benchmark_ceiling.h): the step's FLOPs, the best GEMM rate for the precision,
  // FLOPs per image, the images/s that rate would give and this run's share of it.
  double step_flops = 0, gemm_gflops = 0, gflop_per_image = 0, ceiling_images_per_sec = 0,
         share_of_ceiling = 0;
};

// Quantile q in [0, 1] with linear interpolation between order statistics.
inline double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

inline void Summarise(Result* r, double price_per_hour) {
  r->ms_median = Quantile(r->ms, 0.5);
  r->ms_p10 = Quantile(r->ms, 0.1);
  r->ms_p90 = Quantile(r->ms, 0.9);
  r->ms_min = r->ms.empty() ? 0 : *std::min_element(r->ms.begin(), r->ms.end());
  r->ms_max = r->ms.empty() ? 0 : *std::max_element(r->ms.begin(), r->ms.end());
  r->images_per_sec =
      r->ms_median > 0 ? 1000.0 * static_cast<double>(r->batch_size) / r->ms_median : 0;
  r->ms_per_1000_images = r->batch_size > 0 ? 1000.0 * r->ms_median / r->batch_size : 0;
  r->part_ms_median.clear();
  for (const auto& ms : r->part_ms) r->part_ms_median.push_back(Quantile(ms, 0.5));
  // $/hour / (images/hour) * 1e6.
  r->cost_per_million_images =
      r->images_per_sec > 0 ? price_per_hour * 1e6 / (3600.0 * r->images_per_sec) : 0;
}

// fp16 images/s over fp32 images/s at the same batch size.
inline void ComputeSpeedups(std::vector<Result>* results) {
  std::map<int64_t, double> fp32;
  for (const auto& r : *results) {
    if (r.precision == "fp32" && r.status == "ok") fp32[r.batch_size] = r.images_per_sec;
  }
  for (auto& r : *results) {
    auto it = fp32.find(r.batch_size);
    r.speedup_vs_fp32 = (r.status == "ok" && it != fp32.end() && it->second > 0)
                            ? r.images_per_sec / it->second
                            : 0;
  }
}

using ::halfcaf::JsonString;

inline std::string Num(double v, int precision = 6) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream ss;
  ss << std::setprecision(precision) << v;
  return ss.str();
}

// Run-wide settings that go into every output.
struct RunInfo {
  std::string model, mode, device, order;
  std::string recompute = "off";  // training: benchmark --recompute
  std::string convolutions;  // training: how each precision's convolutions ran, or empty
  int iters = 0, warmup = 0, threads = 0;
  int num_shards = 1;  // processes training together (each on its share of the batch)
  double price_per_hour = 0;
  std::string price_source;  // where a default price came from ("" when given)
  std::string memory_kind;  // what peak_memory_mb measures
  // How the CUDA convolutions chose their cuDNN algorithms: "heuristic" or "exhaustive"
  // (benchmark --exhaustive_search), within ws_nbytes_limit bytes of workspace.
  std::string conv_algo_search = "heuristic";
  int64_t ws_nbytes_limit = 0;
  bool cuda = false;  // the timed nets ran on CUDA devices
};

inline std::string ResultJson(const RunInfo& info, const Result& r, const std::string& indent) {
  std::ostringstream j;
  auto field = [&](const std::string& k, const std::string& v, bool last = false) {
    j << indent << "  " << JsonString(k) << ": " << v << (last ? "\n" : ",\n");
  };
  j << indent << "{\n";
  field("framework", JsonString("halfcaf"));
  field("model", JsonString(info.model));
  field("mode", JsonString(info.mode));
  field("device", JsonString(info.device));
  field("order", JsonString(info.order));
  field("cudnn_algo_search", JsonString(info.conv_algo_search));
  field("cudnn_ws_nbytes_limit", std::to_string(info.ws_nbytes_limit));
  field("precision", JsonString(r.precision));
  field("batch_size", std::to_string(r.batch_size));
  field("status", JsonString(r.status));
  if (!r.error.empty()) field("error", JsonString(r.error));
  field("iters", std::to_string(r.ms.size()));
  field("ms_per_iter", Num(r.ms_median));
  field("ms_per_iter_median", Num(r.ms_median));
  field("ms_per_iter_min", Num(r.ms_min));
  field("ms_per_iter_max", Num(r.ms_max));
  field("ms_per_iter_p10", Num(r.ms_p10));
  field("ms_per_iter_p90", Num(r.ms_p90));
  field("images_per_sec", Num(r.images_per_sec));
  field("ms_per_1000_images", Num(r.ms_per_1000_images));
  for (size_t k = 0; k < r.part_names.size() && k < r.part_ms_median.size(); ++k) {
    field(r.part_names[k] + "_ms_median", Num(r.part_ms_median[k]));
  }
  field("speedup_vs_fp32", r.speedup_vs_fp32 > 0 ? Num(r.speedup_vs_fp32) : "null");
  field("peak_memory_mb", Num(r.peak_memory_mb));
  field("cost_per_million_images", Num(r.cost_per_million_images));
  field("skipped_steps", std::to_string(r.skipped_steps));
  if (info.num_shards > 1) {
    field("num_shards", std::to_string(info.num_shards));
    field("exchange_ms_per_iter", Num(r.exchange_ms));
    field("exposed_exchange_ms_per_iter", Num(r.exposed_ms));
  }
  const std::pair<const char*, const PeerNumbers*> peers[] = {{"pytorch", &r.pytorch},
                                                               {"ort", &r.ort}};
  for (const auto& kv : peers) {
    const std::string name = kv.first;
    const PeerNumbers& p = *kv.second;
    if (!p.ran) continue;
    field(name + "_status", JsonString(p.status));
    field(name + "_images_per_sec", p.ok() ? Num(p.images_per_sec) : "null");
    field(name + "_ms_per_iter_median", p.ok() ? Num(p.ms_median) : "null");
    field(name + "_peak_memory_mb", p.ok() ? Num(p.peak_memory_mb) : "null");
    for (size_t k = 0; k < r.part_names.size() && k < p.part_ms.size(); ++k) {
      field(name + "_" + r.part_names[k] + "_ms_median", p.ok() ? Num(p.part_ms[k]) : "null");
    }
    field("halfcaf_vs_" + name,
          p.ok() && r.images_per_sec > 0 ? Num(r.images_per_sec / p.images_per_sec) : "null");
  }
  if (r.ceiling_images_per_sec > 0) {
    field("gflop_per_image", Num(r.gflop_per_image));
    field("gemm_gflops_per_sec", Num(r.gemm_gflops));
    field("ceiling_images_per_sec", Num(r.ceiling_images_per_sec));
    field("share_of_ceiling", r.status == "ok" ? Num(r.share_of_ceiling) : "null");
  }
  if (!r.op_types.empty()) {
    j << indent << "  \"per_op\": [\n";
    for (size_t i = 0; i < r.op_types.size(); ++i) {
      const auto& t = r.op_types[i];
      j << indent << "    {\"phase\": " << JsonString(t.phase)
        << ", \"type\": " << JsonString(t.type) << ", \"count\": " << t.count
        << ", \"ms_per_iter\": " << Num(t.ms) << ", \"percent\": " << Num(t.percent, 4)
        << ", \"gflop\": " << Num(t.gflops) << ", \"gflops_per_sec\": " << Num(t.gflops_per_sec)
        << "}" << (i + 1 < r.op_types.size() ? ",\n" : "\n");
    }
    j << indent << "  ],\n";
  }
  field("memory_kind", JsonString(info.memory_kind), true);
  j << indent << "}";
  return j.str();
}

inline std::string ResultsJson(const RunInfo& info, const std::vector<Result>& results) {
  std::ostringstream j;
  j << "{\n  \"model\": " << JsonString(info.model) << ",\n  \"mode\": " << JsonString(info.mode)
    << ",\n  \"device\": " << JsonString(info.device)
    << ",\n  \"order\": " << JsonString(info.order) << ",\n  \"iters\": " << info.iters
    << ",\n  \"warmup\": " << info.warmup << ",\n  \"threads\": " << info.threads
    << ",\n  \"price_per_hour\": " << Num(info.price_per_hour)
    << ",\n  \"price_source\": " << JsonString(info.price_source.empty() ? "--price_per_hour"
                                                                        : info.price_source)
    << ",\n  \"cudnn_algo_search\": " << JsonString(info.conv_algo_search)
    << ",\n  \"cudnn_ws_nbytes_limit\": " << info.ws_nbytes_limit << ",\n  \"results\": [\n";
  for (size_t i = 0; i < results.size(); ++i) {
    j << ResultJson(info, results[i], "    ") << (i + 1 < results.size() ? ",\n" : "\n");
  }
  j << "  ]\n}\n";
  return j.str();
}

inline std::string ResultsCsv(const RunInfo& info, const std::vector<Result>& results) {
  std::ostringstream c;
  c << "model,mode,device,order,precision,batch_size,status,iters,ms_per_iter_median,"
       "ms_per_iter_min,ms_per_iter_max,ms_per_iter_p10,ms_per_iter_p90,images_per_sec,"
       "speedup_vs_fp32,peak_memory_mb,cost_per_million_images,pytorch_images_per_sec,"
       "halfcaf_vs_pytorch,ort_images_per_sec,halfcaf_vs_ort,ort_peak_memory_mb,"
       "ms_per_1000_images,parts_ms_median,pytorch_parts_ms_median,gflop_per_image,"
       "ceiling_images_per_sec,share_of_ceiling\n";
  // "d_step=12.5;g_step=20.25": an iteration's parts, when it has them.
  auto parts = [](const std::vector<std::string>& names, const std::vector<double>& ms) {
    std::string out;
    for (size_t k = 0; k < names.size() && k < ms.size(); ++k) {
      out += (k ? ";" : "") + names[k] + "=" + Num(ms[k]);
    }
    return out;
  };
  // A peer's images/s and halfcaf's over it: empty where the peer has no number.
  auto peer = [](const Result& r, const PeerNumbers& p) {
    if (!p.ok()) return std::string(",");
    return Num(p.images_per_sec) + "," +
           (r.images_per_sec > 0 ? Num(r.images_per_sec / p.images_per_sec) : "");
  };
  for (const auto& r : results) {
    c << info.model << "," << info.mode << "," << info.device << "," << info.order << ","
      << r.precision << "," << r.batch_size << "," << r.status << "," << r.ms.size() << ","
      << Num(r.ms_median) << "," << Num(r.ms_min) << "," << Num(r.ms_max) << "," << Num(r.ms_p10)
      << "," << Num(r.ms_p90) << "," << Num(r.images_per_sec) << ","
      << (r.speedup_vs_fp32 > 0 ? Num(r.speedup_vs_fp32) : "") << "," << Num(r.peak_memory_mb)
      << "," << Num(r.cost_per_million_images) << "," << peer(r, r.pytorch) << "," << peer(r, r.ort)
      << "," << (r.ort.ok() ? Num(r.ort.peak_memory_mb) : "") << "," << Num(r.ms_per_1000_images)
      << "," << parts(r.part_names, r.part_ms_median) << ","
      << parts(r.part_names, r.pytorch.part_ms) << ",";
    if (r.ceiling_images_per_sec > 0) {
      c << Num(r.gflop_per_image) << "," << Num(r.ceiling_images_per_sec) << ","
        << (r.status == "ok" ? Num(r.share_of_ceiling) : "");
    } else {
      c << ",,";
    }
    c << "\n";
  }
  return c.str();
}

// The table on stdout: one row per configuration, with the columns of the peers named (those
// that ran: `pytorch`, `ort`).
inline void PrintTable(std::ostream& out, const RunInfo& info, const std::vector<Result>& results,
                       bool pytorch, bool ort) {
  out << "\nhalfcaf benchmark: " << info.model << ", " << info.mode
      << (info.recompute != "off" ? " (recomputing " + info.recompute + ")" : "")
      << (info.convolutions.empty() ? "" : " [" + info.convolutions + "]")
      << ", " << info.order << ", " << info.device << ", " << info.iters << " timed iterations after " << info.warmup
      << " warm-up, $" << Num(info.price_per_hour) << "/hour"
      << (info.price_source.empty() ? "" : " (" + info.price_source + ")") << "\n";
  if (info.cuda) {
    out << "cuDNN convolution algorithms: " << info.conv_algo_search
        << (info.conv_algo_search == "exhaustive" ? " (timed cudnnFind, like cudnn.benchmark=True)"
                                                  : " (cuDNN heuristics)")
        << ", ws_nbytes_limit " << info.ws_nbytes_limit << " bytes\n";
  }
  out << std::left << std::setw(10) << "precision" << std::right << std::setw(6) << "batch"
      << std::setw(12) << "ms/iter" << std::setw(24) << "[min .. max]" << std::setw(11)
      << "images/s" << std::setw(11) << "vs fp32" << std::setw(10) << "peak MB" << std::setw(11)
      << "$/1M img" << std::setw(10) << "ms/1k img";
  std::vector<std::string> part_names;
  for (const auto& r : results) {
    if (!r.part_names.empty()) part_names = r.part_names;
  }
  for (const auto& n : part_names) out << std::setw(12) << (n + " ms");
  const bool shards = info.num_shards > 1;
  if (shards) out << std::setw(12) << "exchange ms" << std::setw(12) << "exposed ms";
  if (pytorch) {
    out << std::setw(13) << "pytorch i/s" << std::setw(10) << "hc/pt" << std::setw(11)
        << "pt peak MB";
  }
  if (ort) {
    out << std::setw(13) << "ort i/s" << std::setw(10) << "hc/ort" << std::setw(12)
        << "ort peak MB";
  }
  out << "\n" << std::fixed;
  // A peer's columns: images/s, halfcaf over it, its peak memory; or its status.
  auto peer = [&](const Result& r, const PeerNumbers& p, int peak_width) {
    if (p.ok()) {
      out << std::setw(13) << std::setprecision(2) << p.images_per_sec << std::setw(9)
          << std::setprecision(2) << r.images_per_sec / p.images_per_sec << "x"
          << std::setw(peak_width) << std::setprecision(0) << p.peak_memory_mb;
    } else {
      // "skipped: fp16 autocast needs CUDA" -> "skipped" (the JSON has the whole reason).
      const std::string st = p.ran ? p.status.substr(0, p.status.find(':')) : "-";
      out << std::setw(13) << st << std::setw(10) << "-" << std::setw(peak_width) << "-";
    }
  };
  for (const auto& r : results) {
    out << std::left << std::setw(10) << r.precision << std::right << std::setw(6)
        << r.batch_size;
    if (r.status != "ok") {
      out << "  " << r.status << "\n";
      continue;
    }
    std::ostringstream spread;
    spread << std::fixed << std::setprecision(1) << "[" << r.ms_min << " .. " << r.ms_max << "]";
    out << std::setw(12) << std::setprecision(1) << r.ms_median << std::setw(24) << spread.str()
        << std::setw(11) << std::setprecision(2) << r.images_per_sec << std::setw(11)
        << (r.speedup_vs_fp32 > 0 ? Num(r.speedup_vs_fp32, 3) + "x" : "-") << std::setw(10)
        << std::setprecision(0) << r.peak_memory_mb << std::setw(11) << std::setprecision(2)
        << r.cost_per_million_images << std::setw(10) << std::setprecision(1)
        << r.ms_per_1000_images;
    for (size_t k = 0; k < part_names.size(); ++k) {
      out << std::setw(12) << std::setprecision(1)
          << (k < r.part_ms_median.size() ? r.part_ms_median[k] : 0.0);
    }
    if (shards) {
      out << std::setw(12) << std::setprecision(2) << r.exchange_ms << std::setw(12)
          << r.exposed_ms;
    }
    if (pytorch) peer(r, r.pytorch, 11);
    if (ort) peer(r, r.ort, 12);
    out << "\n";
  }
  out << std::defaultfloat << std::flush;
}

// "Nice" tick step (1, 2 or 5 times a power of ten) giving about `n` ticks over [0, hi].
inline double NiceStep(double hi, int n) {
  if (hi <= 0) return 1;
  const double raw = hi / n;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * p) return m * p;
  }
  return 10 * p;
}

struct Series {
  std::string label;
  std::string color;
  bool dashed = false;
  std::vector<std::pair<int64_t, double>> points;  // (batch size, images/s)
};

inline std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

// An SVG line chart: images/s (linear, from 0) against batch size (log2 scale, a tick at each
// measured batch size), one polyline with markers per series, and a legend.
inline std::string Svg(const std::string& title, const std::vector<Series>& series) {
  const double W = 720, H = 440, L = 80, R = 190, T = 50, B = 60;
  const double pw = W - L - R, ph = H - T - B;
  std::vector<int64_t> batches;
  double ymax = 0;
  for (const auto& s : series) {
    for (const auto& p : s.points) {
      batches.push_back(p.first);
      ymax = std::max(ymax, p.second);
    }
  }
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  double xlo = batches.empty() ? 0 : std::log2(static_cast<double>(batches.front()));
  double xhi = batches.empty() ? 1 : std::log2(static_cast<double>(batches.back()));
  if (xhi - xlo < 1e-9) {
    xlo -= 1;
    xhi += 1;
  }
  const double pad = 0.06 * (xhi - xlo);
  xlo -= pad;
  xhi += pad;
  const double ystep = NiceStep(ymax > 0 ? ymax * 1.05 : 1, 5);
  const double ytop = ystep * std::ceil((ymax > 0 ? ymax * 1.05 : 1) / ystep);
  auto X = [&](double batch) { return L + (std::log2(batch) - xlo) / (xhi - xlo) * pw; };
  auto Y = [&](double v) { return T + ph - v / ytop * ph; };

  std::ostringstream s;
  s << std::fixed << std::setprecision(1);
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << W / 2 << "\" y=\"28\" text-anchor=\"middle\" font-size=\"15\">"
    << XmlEscape(title) << "</text>\n";
  // Grid and y ticks.
  for (double v = 0; v <= ytop + ystep * 1e-6; v += ystep) {
    s << "<line x1=\"" << L << "\" y1=\"" << Y(v) << "\" x2=\"" << L + pw << "\" y2=\"" << Y(v)
      << "\" stroke=\"#ddd\"/>\n";
    s << "<text x=\"" << L - 8 << "\" y=\"" << Y(v) + 4 << "\" text-anchor=\"end\">" << Num(v, 4)
      << "</text>\n";
  }
  // x ticks.
  for (int64_t b : batches) {
    const double x = X(static_cast<double>(b));
    s << "<line x1=\"" << x << "\" y1=\"" << T + ph << "\" x2=\"" << x << "\" y2=\"" << T + ph + 6
      << "\" stroke=\"black\"/>\n";
    s << "<text x=\"" << x << "\" y=\"" << T + ph + 20 << "\" text-anchor=\"middle\">" << b
      << "</text>\n";
  }
  // Axes and labels.
  s << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << T + ph
    << "\" stroke=\"black\"/>\n";
  s << "<line x1=\"" << L << "\" y1=\"" << T + ph << "\" x2=\"" << L + pw << "\" y2=\"" << T + ph
    << "\" stroke=\"black\"/>\n";
  s << "<text x=\"" << L + pw / 2 << "\" y=\"" << H - 15
    << "\" text-anchor=\"middle\">batch size (log scale)</text>\n";
  s << "<text x=\"20\" y=\"" << T + ph / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 20 "
    << T + ph / 2 << ")\">images / s</text>\n";
  // Series.
  for (const auto& se : series) {
    std::vector<std::pair<int64_t, double>> pts = se.points;
    std::sort(pts.begin(), pts.end());
    if (pts.size() > 1) {
      s << "<polyline fill=\"none\" stroke=\"" << se.color << "\" stroke-width=\"2\""
        << (se.dashed ? " stroke-dasharray=\"6 4\"" : "") << " points=\"";
      for (const auto& p : pts) s << X(static_cast<double>(p.first)) << "," << Y(p.second) << " ";
      s << "\"/>\n";
    }
    for (const auto& p : pts) {
      s << "<circle cx=\"" << X(static_cast<double>(p.first)) << "\" cy=\"" << Y(p.second)
        << "\" r=\"4\" fill=\"" << se.color << "\"><title>" << XmlEscape(se.label) << ", batch "
        << p.first << ": " << Num(p.second, 4) << " images/s</title></circle>\n";
    }
  }
  // Legend.
  double ly = T + 10;
  for (const auto& se : series) {
    const double lx = L + pw + 20;
    s << "<line x1=\"" << lx << "\" y1=\"" << ly << "\" x2=\"" << lx + 28 << "\" y2=\"" << ly
      << "\" stroke=\"" << se.color << "\" stroke-width=\"2\""
      << (se.dashed ? " stroke-dasharray=\"6 4\"" : "") << "/>\n";
    s << "<text x=\"" << lx + 36 << "\" y=\"" << ly + 4 << "\">" << XmlEscape(se.label)
      << "</text>\n";
    ly += 22;
  }
  s << "</svg>\n";
  return s.str();
}

// --json, --csv and --plot (each written atomically).
inline void WriteOutputs(const RunInfo& info, const std::vector<Result>& results,
                         const std::vector<std::string>& precisions, const std::string& json,
                         const std::string& csv, const std::string& plot) {
  if (!json.empty()) WriteFileAtomically(json, ResultsJson(info, results));
  if (!csv.empty()) WriteFileAtomically(csv, ResultsCsv(info, results));
  if (!plot.empty()) {
    std::vector<Series> series;
    const std::map<std::string, std::string> color{
        {"fp32", "#1f77b4"}, {"fp16", "#d62728"}, {"bf16", "#9467bd"}};
    for (const auto& p : precisions) {
      Series s{"halfcaf " + p, color.at(p), false, {}};
      Series t{"PyTorch " + p, color.at(p), true, {}};
      Series o{"ONNX Runtime " + p, "#2ca02c", true, {}};
      for (const auto& r : results) {
        if (r.precision != p || r.status != "ok") continue;
        s.points.push_back({r.batch_size, r.images_per_sec});
        if (r.pytorch.ok()) t.points.push_back({r.batch_size, r.pytorch.images_per_sec});
        if (r.ort.ok()) o.points.push_back({r.batch_size, r.ort.images_per_sec});
      }
      for (const auto* se : {&s, &t, &o}) {
        if (!se->points.empty()) series.push_back(*se);
      }
    }
    WriteFileAtomically(plot, Svg(info.model + " " + info.mode + ", " + info.order + ", " +
                                      info.device + ": images/s",
                                  series));
  }
}

}  // namespace bench
}  // namespace halfcaf
