#include "tools/tool_common.h"

#include <fcntl.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <google/protobuf/stubs/logging.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/cpu_threads.h"
#include "core/enforce.h"
#include "core/proto_io.h"
#include "core/signal_stack.h"
#include "core/tensor_proto.h"
#include "operators/nn/bf16_kernels.h"

namespace halfcaf {

namespace {

// libgomp's threads (halfcaf's parallel loops and oneDNN's) spin up to 300,000 times waiting for
// work by default. On a machine shared with other work a spinning thread holds a CPU another
// process needs, and every parallel region then waits for a thread the kernel descheduled:
// LeNet training ran 20x slower beside four busy processes (BENCHMARKS.md). Spinning 2,000 times
// (microseconds) and then sleeping keeps the quiet machine's speed and the loaded machine's
// sanity. libgomp reads the setting only when it loads, so a tool whose environment sets neither
// OMP_WAIT_POLICY nor GOMP_SPINCOUNT sets GOMP_SPINCOUNT and executes itself again (same pid,
// same arguments). Child processes (the benchmark peers) inherit it.
void PreferShortSpinning(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  setenv("GOMP_SPINCOUNT", "2000", 1);
  execv("/proc/self/exe", argv);
  // exec failed (no /proc): this process keeps libgomp's default; its children get the setting.
}

// --help: the usage line and the tool's own flags (those defined under tools/), in the order
// gflags lists them, without glog's and gflags' own (logging and completion flags, which would
// come first and make up most of the list). The build paths gflags records are left out too.
void PrintHelp(const char* usage) {
  std::vector<gflags::CommandLineFlagInfo> flags;
  gflags::GetAllFlags(&flags);
  std::cout << usage << "\n\nFlags:\n";
  for (const auto& f : flags) {
    if (f.filename.find("/tools/") == std::string::npos &&
        f.filename.rfind("tools/", 0) == std::string::npos) {
      continue;
    }
    std::cout << gflags::DescribeOneFlag(f);  // "    -name (description) type: T default: D"
  }
}

}  // namespace

int RunTool(const char* name, const char* usage, int argc, char** argv,
            const std::function<int()>& body) {
  PreferShortSpinning(argv);
  gflags::SetUsageMessage(usage);
  gflags::ParseCommandLineNonHelpFlags(&argc, &argv, true);
  std::string help;
  if (gflags::GetCommandLineOption("help", &help) && help == "true") {
    PrintHelp(usage);
    return 0;
  }
  gflags::HandleCommandLineHelpFlags();  // --helpfull, --version and the rest, as gflags does
  google::InitGoogleLogging(name);
  FLAGS_logtostderr = true;
  // Protobuf would print its own parse complaints; ours carry file:line:column instead.
  google::protobuf::SetLogHandler(nullptr);
  FitThreadsToAvailableCpus();  // a container's CPU quota, when smaller than the core count
  if (argc > 1) {
    std::cerr << name << ": error: unexpected argument '" << argv[1] << "' (see --help)\n";
    return 1;
  }
  try {
    return body();
  } catch (const EnforceNotMet& e) {
    std::cerr << name << ": error: " << e.what() << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << name << ": error: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << name << ": error: " << e.what() << "\n";
  }
  return 1;
}

namespace {

volatile sig_atomic_t g_stop_signal = 0;
const char* g_tool = "";

extern "C" void OnStopSignal(int sig) {
  if (g_stop_signal == 0) {
    g_stop_signal = sig;
    return;
  }
  // Second signal: no cleanup, only async-signal-safe calls.
  const char* msg = ": second signal, exiting at once\n";
  ssize_t ignored = ::write(STDERR_FILENO, g_tool, std::strlen(g_tool));
  ignored = ::write(STDERR_FILENO, msg, std::strlen(msg));
  (void)ignored;
  _exit(128 + sig);
}

std::string ProbeName(const std::filesystem::path& dir) {
  return (dir / (".halfcaf_probe." + std::to_string(getpid()))).string();
}

// Creates and removes a probe file in `dir`; returns the errno of a failure, or 0.
int Probe(const std::filesystem::path& dir) {
  const std::string probe = ProbeName(dir);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) return errno;
  ::close(fd);
  ::unlink(probe.c_str());
  return 0;
}

}  // namespace

void InstallStopSignals(const char* tool) {
  g_tool = tool;
  // On a stack of its own: a signal arriving inside one of oneDNN 2.6's SGEMM kernels would
  // otherwise write its frame into the heap (core/signal_stack.h). The tools call this from the
  // main thread, which a process-directed signal reaches first.
  HandleSignalOnOwnStack(SIGINT, OnStopSignal);
  HandleSignalOnOwnStack(SIGTERM, OnStopSignal);
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);
}

int StopSignal() { return g_stop_signal; }

void CheckWritableFile(const std::string& path, const char* flag) {
  namespace fs = std::filesystem;
  const fs::path target = ResolveSymlinks(path);
  std::error_code ec;
  HALFCAF_ENFORCE(!fs::is_directory(target, ec), "--", flag, " ", path,
                  ": is a folder, expected a file name");
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  HALFCAF_ENFORCE(fs::is_directory(dir, ec), "--", flag, " ", path, ": the folder ", dir.string(),
                  " does not exist");
  const int err = Probe(dir);
  HALFCAF_ENFORCE(err == 0, "--", flag, " ", path, ": cannot write in ", dir.string(), " (",
                  std::strerror(err), ")");
}

void CheckWritableFolder(const std::string& dir, const char* flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  HALFCAF_ENFORCE(fs::is_directory(dir, ec), "--", flag, " ", dir, ": is not a folder");
  const int err = Probe(dir);
  HALFCAF_ENFORCE(err == 0, "--", flag, " ", dir, ": cannot write in it (", std::strerror(err),
                  ")");
}

void LockFolder(const std::string& dir, const char* tool) {
  const std::string path = dir + "/" + tool + ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  HALFCAF_ENFORCE(fd >= 0, path, ": cannot open the lock file (", std::strerror(errno), ")");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {0};
    const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
    ::close(fd);
    const std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    HALFCAF_ENFORCE(err != EWOULDBLOCK, dir, " is in use by another ", tool, " (pid ",
                    pid.empty() ? "unknown" : pid.substr(0, pid.find('\n')), ", lock file ", path,
                    "): give each run its own folder");
    HALFCAF_THROW(path, ": cannot lock (", std::strerror(err), ")");
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  bool ok = ::ftruncate(fd, 0) == 0;
  ok = ok && ::pwrite(fd, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size());
  HALFCAF_ENFORCE(ok, path, ": cannot write the lock file (", std::strerror(errno), ")");
  // fd stays open: the lock lasts as long as the process.
}

Placement ParsePlacement(const std::string& device, bool device_given, int gpu,
                         const std::string& gpus, int replicas) {
  HALFCAF_ENFORCE(device == "cpu" || device == "cuda", "--device must be cpu or cuda, got '",
                  device, "'");
  std::vector<int> ids;
  for (const auto& item : SplitList(gpus)) {
    size_t used = 0;
    int id = -1;
    try {
      id = std::stoi(item, &used);
    } catch (...) {
      used = 0;
    }
    HALFCAF_ENFORCE(used == item.size() && id >= 0, "--gpus: '", item, "' is not a GPU id");
    ids.push_back(id);
  }
  HALFCAF_ENFORCE(ids.empty() || device == "cuda" || !device_given,
                  "--gpus runs on CUDA devices, but --device is '", device, "'");
  HALFCAF_ENFORCE(replicas >= 0, "--replicas must be positive, got ", replicas);
  Placement p;
  if (device == "cuda") p.device = Device{DeviceType::CUDA, gpu};
  if (!ids.empty()) p.device = Device{DeviceType::CUDA, ids[0]};
  const int n = replicas > 0 ? replicas : std::max<int>(1, static_cast<int>(ids.size()));
  for (int i = 0; n > 1 && i < n; ++i) {
    p.replicas.push_back(ids.empty() ? p.device : Device{DeviceType::CUDA, ids[i % ids.size()]});
  }
  return p;
}

std::string PlacementString(const Placement& p) {
  if (p.replicas.empty()) return p.device.ToString();
  std::string s = std::to_string(p.replicas.size()) + " data-parallel replicas (";
  for (size_t i = 0; i < p.replicas.size(); ++i) s += (i ? ", " : "") + p.replicas[i].ToString();
  return s + ")";
}

void OutputBlobs(const Workspace& ws, const std::vector<std::string>& blobs,
                 const std::string& output) {
  for (const auto& b : blobs) {
    HALFCAF_ENFORCE(ws.HasBlob(b), "--output_blobs: blob '", b, "' does not exist");
  }
  if (!output.empty()) {
    HALFCAF_ENFORCE(!blobs.empty(), "--output needs --output_blobs");
    WriteBlobsToFile(ws, blobs, output);
    return;
  }
  for (const auto& b : blobs) {
    const Tensor& t = ws.GetTensor(b);
    TensorProto p;
    TensorToProto(t, b, &p);
    std::cout << b << ": " << t.DebugString() << "\n" << p.DebugString();
  }
}

void CheckNonNegative(const std::vector<std::pair<const char*, int64_t>>& flags) {
  for (const auto& f : flags) {
    HALFCAF_ENFORCE(f.second >= 0, "--", f.first, " must be >= 0, got ", f.second);
  }
}

float CheckedFloat(const char* flag, double v, double lo, double hi, bool hi_open) {
  HALFCAF_ENFORCE(std::isfinite(v) && v >= lo && (hi_open ? v < hi : v <= hi), "--", flag,
                  " must be a finite number in [", lo, ", ", hi, hi_open ? ")" : "]", ", got ", v);
  return static_cast<float>(v);
}

std::vector<int64_t> ParsePositiveInts(const std::string& s, const char* flag) {
  std::vector<int64_t> out;
  for (const auto& item : SplitList(s)) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (...) {
      used = 0;
    }
    HALFCAF_ENFORCE(used == item.size() && used > 0, "--", flag, ": '", item,
                    "' is not an integer");
    HALFCAF_ENFORCE(v > 0, "--", flag, ": values must be positive, got ", v);
    out.push_back(v);
  }
  HALFCAF_ENFORCE(!out.empty(), "--", flag, " is empty");
  return out;
}

std::string Fmt(double v, int precision) {
  std::ostringstream ss;
  ss << std::setprecision(precision) << v;
  return ss.str();
}

PrecisionSetting ParsePrecision(const std::string& dtype, const std::string& loss_scale,
                                bool loss_scale_given, double initial_loss_scale) {
  HALFCAF_ENFORCE(dtype == "float" || dtype == "float16" || dtype == "bfloat16",
                  "--dtype must be float, float16 or bfloat16, got '", dtype, "'");
  PrecisionSetting out;
  out.precision = DataTypeFromName(dtype);
  if (out.precision != DataType::FLOAT) {
    out.loss_scale = ParseLossScale(loss_scale, loss_scale_given, out.precision, initial_loss_scale);
  }
  return out;
}

std::string CpuPrecisionWarning(DataType precision, DeviceType device) {
  if (device != DeviceType::CPU) return "";
  if (precision == DataType::FLOAT16) {
    return "float16 on the CPU trains about half as fast as float32 (no CPU kernel computes in "
           "float16: each op converts to float and back); the float16 recipe is for GPUs, use "
           "--dtype bfloat16 or float here";
  }
  if (precision != DataType::BFLOAT16) return "";
  if (!CpuBFloat16KernelsEnabled()) {
    return "bfloat16 will train slower than float32 on this machine: oneDNN's BF16 kernels are "
           "off (" + CpuBFloat16KernelsMissing() + "), so each op computes in float32 over "
           "converted copies; use --dtype float for speed";
  }
  const BFloat16ConvMath& m = CpuBFloat16ConvMath();
  if (m.in_bfloat16) return "";
  return "bfloat16 will not train faster than float32 here, and may train slower: this CPU's "
         "BF16 convolution kernels are slower than its FP32 ones (" +
         m.why +
         "), so "
         "convolutions compute in float32 over the bfloat16 tensors, converting them, and "
         "float32 training has a channel-blocked path that bfloat16 has not; use "
         "--dtype float for speed (bfloat16 still halves activation memory)";
}

LossScaleSetting ParseLossScale(const std::string& flag, bool given, DataType precision,
                                double initial) {
  const std::string ls = precision == DataType::BFLOAT16 && !given ? "1" : flag;
  LossScaleSetting out;
  if (ls.rfind("dynamic", 0) == 0) {
    out.dynamic = true;
    out.scale = static_cast<float>(initial);
    if (ls.size() > 7) {
      HALFCAF_ENFORCE(ls[7] == ':', "--loss_scale: expected dynamic or dynamic:S, got '", ls, "'");
      try {
        out.scale = std::stof(ls.substr(8));
      } catch (...) {
        HALFCAF_THROW("--loss_scale: '", ls.substr(8), "' is not a number");
      }
    }
  } else {
    try {
      out.scale = std::stof(ls);
    } catch (...) {
      HALFCAF_THROW("--loss_scale must be a number, dynamic or dynamic:S, got '", ls, "'");
    }
  }
  HALFCAF_ENFORCE(out.scale > 0 && std::isfinite(out.scale),
                  "--loss_scale must be positive and finite, got ", out.scale);
  return out;
}

}  // namespace halfcaf
