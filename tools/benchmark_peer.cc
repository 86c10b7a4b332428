#include "tools/benchmark_peer.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/context.h"
#include "core/enforce.h"
#include "core/proto_io.h"
#include "core/vector_width.h"
#include "core/workspace.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"

namespace halfcaf {
namespace bench {

namespace {

std::string Dirname(const std::string& p) {
  size_t k = p.rfind('/');
  return k == std::string::npos ? "." : p.substr(0, k);
}

bool FileExists(const std::string& p) { return std::ifstream(p).good(); }

}  // namespace

Peers ParseCompare(const std::string& flag) {
  Peers p;
  std::string rest = flag;
  while (!rest.empty()) {
    const size_t k = rest.find(',');
    const std::string item = rest.substr(0, k);
    rest = k == std::string::npos ? "" : rest.substr(k + 1);
    if (item == "pytorch") {
      p.pytorch = true;
    } else if (item == "ort") {
      p.ort = true;
    } else {
      HALFCAF_THROW("--compare must be pytorch, ort or pytorch,ort, got '", flag, "'");
    }
  }
  return p;
}

namespace {

// The source folder holding `rel`: the one above the binary's folder (<source>/<build
// folder>/bin/benchmark), else the current folder ("."); "" when neither holds it.
std::string SourceRootHolding(const std::string& rel) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = 0;
    const std::string root = Dirname(Dirname(Dirname(exe)));
    if (FileExists(root + "/" + rel)) return root;
  }
  return FileExists(rel) ? "." : "";
}

const char kPyTorchScript[] = "tools/peers/resnet_pytorch.py";
const char kAcGanScript[] = "tools/peers/acgan_pytorch.py";
const char kOrtScript[] = "tools/peers/resnet_ort.py";

}  // namespace

std::string FindPeerScript(const std::string& given, const std::string& model) {
  if (!given.empty()) {
    HALFCAF_ENFORCE(FileExists(given), "--peer_script: cannot read '", given, "'");
    return given;
  }
  const std::string script = model == "acgan" ? kAcGanScript : kPyTorchScript;
  const std::string root = SourceRootHolding(script);
  HALFCAF_ENFORCE(!root.empty(), "--compare pytorch: cannot find ", script,
                  " (run from the source folder or give --peer_script)");
  return root == "." ? script : root + "/" + script;
}

std::string FindOrtScript() {
  const std::string root = SourceRootHolding(kOrtScript);
  HALFCAF_ENFORCE(!root.empty(), "--compare ort: cannot find ", kOrtScript,
                  " (run from the source folder)");
  return root == "." ? kOrtScript : root + "/" + kOrtScript;
}

std::string DefaultOrtPython() {
  const std::string root = SourceRootHolding(kOrtScript);
  return (root.empty() || root == "." ? "" : root + "/") + ".venv-ort/bin/python";
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

// What every peer's command line starts with: the wait policy, the time limit, the library path.
std::string CommandPrefix(int timeout_s) {
  std::ostringstream cmd;
  // The peers' OpenMP threads (PyTorch's libgomp) wait as halfcaf's do: they inherit this
  // process's environment, where the tools set GOMP_SPINCOUNT (a short spin, then sleep; see
  // tools/tool_common.cc) unless the caller set it or OMP_WAIT_POLICY. The ONNX Runtime peer's own
  // thread pool spins only under OMP_WAIT_POLICY=ACTIVE.
  if (timeout_s > 0) cmd << "timeout -k 10 " << timeout_s << " ";
  // oneDNN capped below AVX-512 (ONEDNN_MAX_CPU_ISA=AVX2: a CPU without it, emulated) caps
  // PyTorch's own kernels too (ATEN_CPU_CAPABILITY), as it caps halfcaf's loops
  // (core/vector_width.h), unless the caller set that: both sides run what such a CPU runs.
  if (std::getenv("ATEN_CPU_CAPABILITY") == nullptr) {
    const VectorWidth cap = VectorWidthCapFromEnvironment();
    if (cap == VectorWidth::kAvx2) cmd << "env ATEN_CPU_CAPABILITY=avx2 ";
    if (cap == VectorWidth::kBaseline) cmd << "env ATEN_CPU_CAPABILITY=default ";
  }
  if (const char* peer_path = std::getenv("HALFCAF_PEER_LD_LIBRARY_PATH")) {
    if (*peer_path == '\0') {
      cmd << "env -u LD_LIBRARY_PATH ";
    } else {
      cmd << "env LD_LIBRARY_PATH=" << ShellQuote(peer_path) << " ";
    }
  }
  return cmd.str();
}

std::string Joined(const std::vector<int64_t>& v) {
  std::string s;
  for (auto x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

// Runs `cmd` (a peer; `name` says which in messages) and attaches the JSON lines it prints to
// the results of the same precision and batch size, in their `which` member. Returns whether
// any matched; says on stderr why not, or why only some did.
bool RunPeerCommand(const std::string& name, const std::string& cmd, int timeout_s,
                    PeerNumbers Result::*which, std::vector<Result>* results) {
  std::cerr << "benchmark: running the " << name << " peer: " << cmd << std::endl;
  FILE* pipe = popen(cmd.c_str(), "r");
  HALFCAF_ENFORCE(pipe != nullptr, "--compare: cannot start the ", name, " peer");
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
      PeerNumbers& n = r.*which;
      n.ran = true;
      n.status = JsonField(line, "status");
      n.images_per_sec = std::atof(JsonField(line, "images_per_sec").c_str());
      n.ms_median = std::atof(JsonField(line, "ms_per_iter_median").c_str());
      n.peak_memory_mb = std::atof(JsonField(line, "peak_memory_mb").c_str());
      n.part_ms.clear();
      for (const auto& part : r.part_names) {  // e.g. d_step -> "d_ms_median"
        const std::string v = JsonField(line, part.substr(0, part.find('_')) + "_ms_median");
        if (!v.empty()) n.part_ms.push_back(std::atof(v.c_str()));
      }
      ++matched;
    }
  }
  const int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  if (timeout_s > 0 && (code == 124 || code == 137)) {
    std::cerr << "benchmark: the " << name << " peer timed out after " << timeout_s
              << " s (--peer_timeout_s); " << (matched > 0 ? "keeping the results it printed"
                                                            : "showing the halfcaf numbers alone")
              << std::endl;
    return matched > 0;
  }
  if (rc != 0 || matched == 0) {
    std::cerr << "benchmark: the " << name << " peer "
              << (rc != 0 ? "failed" : "printed no results") << " (exit status " << code
              << "); showing the halfcaf numbers alone" << std::endl;
    return matched > 0;
  }
  return true;
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
  std::ostringstream cmd;
  if (q.model == "acgan") {
    cmd << CommandPrefix(q.timeout_s) << ShellQuote(q.python) << " " << ShellQuote(q.script)
        << " --bench --batch_sizes " << Joined(q.batches) << " --precision "
        << Joined(q.precisions) << " --iters " << q.iters << " --warmup " << q.warmup
        << " --device " << q.device << " --gpu " << q.gpu << " --threads " << q.threads
        << " --seed " << q.seed;
    return RunPeerCommand("PyTorch", cmd.str(), q.timeout_s, &Result::pytorch, results);
  }
  cmd << CommandPrefix(q.timeout_s) << ShellQuote(q.python) << " " << ShellQuote(q.script)
      << " --model " << q.model << " --batch_size " << Joined(q.batches) << " --precision "
      << Joined(q.precisions) << " --order " << q.order << " --mode " << q.mode << " --iters "
      << q.iters << " --warmup " << q.warmup << " --device " << q.device << " --gpu " << q.gpu
      << " --threads " << q.threads << " --num_classes " << q.num_classes << " --image_size "
      << q.image_size << " --seed " << q.seed;
  return RunPeerCommand("PyTorch", cmd.str(), q.timeout_s, &Result::pytorch, results);
}

namespace {

// A folder of its own for the exported models, removed with them.
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/halfcaf_ort.XXXXXX";
    HALFCAF_ENFORCE(mkdtemp(&pattern[0]) != nullptr, "--compare ort: cannot make a folder like ",
                    pattern);
    path_ = pattern;
  }
  ~TempDir() {
    for (const auto& f : files_) std::remove(f.c_str());
    rmdir(path_.c_str());
  }
  std::string File(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

// The timed nets as ONNX models, one per batch size (the exporter's shapes are static), with the
// parameters the init net makes after SetGlobalSeed(seed): those of benchmark's forward session.
std::vector<std::string> ExportModels(const OrtRequest& q, TempDir* dir) {
  Workspace params;
  SetGlobalSeed(q.seed);
  params.RunNetOnce(q.init);
  std::vector<std::string> files;
  for (int64_t b : q.batches) {
    OnnxExportOptions o;
    o.graph_name = q.predict.name().empty() ? "halfcaf" : q.predict.name();
    o.input_dims[""] = {b, q.chw.at(0), q.chw.at(1), q.chw.at(2)};
    files.push_back(dir->File("model_b" + std::to_string(b) + ".onnx"));
    WriteFileAtomically(files.back(), ExportOnnx(q.init, q.predict, o, &params));
  }
  return files;
}

}  // namespace

bool RunOrtPeer(const OrtRequest& q, std::vector<Result>* results) {
  const std::string check =
      ShellQuote(q.python) + " -c 'import onnxruntime, numpy' >/dev/null 2>&1";
  if (std::system(check.c_str()) != 0) {
    std::cerr << "benchmark: --compare ort: no ONNX Runtime at " << q.python
              << "; run tools/setup_ort.sh (or give --ort_python); showing the halfcaf numbers "
                 "alone"
              << std::endl;
    return false;
  }
  TempDir dir;
  std::vector<std::string> files{q.onnx_file};
  if (q.onnx_file.empty()) {
    std::cerr << "benchmark: exporting the timed model to ONNX for the ONNX Runtime peer"
              << std::endl;
    try {
      files = ExportModels(q, &dir);
    } catch (const std::exception& e) {
      std::cerr << "benchmark: --compare ort: the model does not export to ONNX (" << e.what()
                << "); showing the halfcaf numbers alone" << std::endl;
      return false;
    }
  }
  std::ostringstream cmd;
  cmd << CommandPrefix(q.timeout_s) << ShellQuote(q.python) << " " << ShellQuote(q.script);
  for (const auto& f : files) cmd << " --onnx " << ShellQuote(f);
  cmd << " --batch_sizes " << Joined(q.batches) << " --precision " << Joined(q.precisions)
      << " --iters " << q.iters << " --warmup " << q.warmup << " --threads " << q.threads
      << " --input_shape " << Joined(q.chw) << " --seed " << q.seed;
  return RunPeerCommand("ONNX Runtime", cmd.str(), q.timeout_s, &Result::ort, results);
}

}  // namespace bench
}  // namespace halfcaf
