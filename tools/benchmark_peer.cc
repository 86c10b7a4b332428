#include "tools/benchmark_peer.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/enforce.h"

namespace halfcaf {
namespace bench {

namespace {

std::string Dirname(const std::string& p) {
  size_t k = p.rfind('/');
  return k == std::string::npos ? "." : p.substr(0, k);
}

bool FileExists(const std::string& p) { return std::ifstream(p).good(); }

}  // namespace

std::string FindPeerScript(const std::string& given) {
  if (!given.empty()) {
    HALFCAF_ENFORCE(FileExists(given), "--peer_script: cannot read '", given, "'");
    return given;
  }
  const std::string rel = "tools/peers/resnet_pytorch.py";
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = 0;
    // <source>/<build folder>/bin/benchmark
    std::string cand = Dirname(Dirname(Dirname(exe))) + "/" + rel;
    if (FileExists(cand)) return cand;
  }
  if (FileExists(rel)) return rel;
  HALFCAF_THROW("--compare pytorch: cannot find ", rel,
                " (run from the source folder or give --peer_script)");
}

namespace {

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

// Value of "key" in a one-line JSON object written by json.dumps (a number or a string).
std::string JsonField(const std::string& line, const std::string& key) {
  const std::string k = "\"" + key + "\": ";
  size_t p = line.find(k);
  if (p == std::string::npos) return "";
  p += k.size();
  if (line[p] == '"') {
    size_t e = line.find('"', p + 1);
    return e == std::string::npos ? "" : line.substr(p + 1, e - p - 1);
  }
  size_t e = line.find_first_of(",}", p);
  return line.substr(p, e == std::string::npos ? std::string::npos : e - p);
}

}  // namespace

bool RunPeer(const PeerRequest& q, std::vector<Result>* results) {
  const std::string check =
      ShellQuote(q.python) + " -c 'import torch, torchvision' >/dev/null 2>&1";
  if (std::system(check.c_str()) != 0) {
    std::cerr << "benchmark: --compare pytorch: " << q.python
              << " cannot import torch and torchvision (Debian: apt-get install python3-torch "
                 "python3-torchvision); showing the halfcaf numbers alone"
              << std::endl;
    return false;
  }
  std::string bs, prec;
  for (auto b : q.batches) bs += (bs.empty() ? "" : ",") + std::to_string(b);
  for (const auto& p : q.precisions) prec += (prec.empty() ? "" : ",") + p;
  std::ostringstream cmd;
  // PyTorch's OpenMP threads spin while they wait; on a machine shared with other work that
  // slows it down many times over, so they sleep unless the caller chose otherwise.
  cmd << "OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} ";
  if (q.timeout_s > 0) cmd << "timeout -k 10 " << q.timeout_s << " ";
  if (const char* peer_path = std::getenv("HALFCAF_PEER_LD_LIBRARY_PATH")) {
    if (*peer_path == '\0') {
      cmd << "env -u LD_LIBRARY_PATH ";
    } else {
      cmd << "env LD_LIBRARY_PATH=" << ShellQuote(peer_path) << " ";
    }
  }
  cmd << ShellQuote(q.python) << " "
      << ShellQuote(q.script) << " --model " << q.model << " --batch_size " << bs
      << " --precision " << prec << " --order " << q.order << " --mode " << q.mode
      << " --iters " << q.iters << " --warmup " << q.warmup << " --device " << q.device
      << " --gpu " << q.gpu << " --threads " << q.threads << " --num_classes "
      << q.num_classes << " --image_size " << q.image_size << " --seed " << q.seed;
  std::cerr << "benchmark: running the PyTorch peer: " << cmd.str() << std::endl;
  FILE* pipe = popen(cmd.str().c_str(), "r");
  HALFCAF_ENFORCE(pipe != nullptr, "--compare pytorch: cannot start ", q.python);
  std::string out;
  char buf[4096];
  while (fgets(buf, sizeof(buf), pipe)) out += buf;
  const int rc = pclose(pipe);
  std::istringstream lines(out);
  std::string line;
  int matched = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] != '{') continue;
    const std::string p = JsonField(line, "precision");
    const std::string b = JsonField(line, "batch_size");
    for (auto& r : *results) {
      if (r.precision != p || std::to_string(r.batch_size) != b) continue;
      r.has_peer = true;
      r.peer_status = JsonField(line, "status");
      r.peer_images_per_sec = std::atof(JsonField(line, "images_per_sec").c_str());
      r.peer_ms_median = std::atof(JsonField(line, "ms_per_iter_median").c_str());
      r.peer_peak_memory_mb = std::atof(JsonField(line, "peak_memory_mb").c_str());
      ++matched;
    }
  }
  const int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  if (q.timeout_s > 0 && (code == 124 || code == 137)) {
    std::cerr << "benchmark: the PyTorch peer timed out after " << q.timeout_s
              << " s (--peer_timeout_s); " << (matched > 0 ? "keeping the results it printed"
                                                            : "showing the halfcaf numbers alone")
              << std::endl;
    return matched > 0;
  }
  if (rc != 0 || matched == 0) {
    std::cerr << "benchmark: the PyTorch peer " << (rc != 0 ? "failed" : "printed no results")
              << " (exit status " << code << "); showing the halfcaf numbers alone" << std::endl;
    return matched > 0;
  }
  return true;
}

}  // namespace bench
}  // namespace halfcaf
