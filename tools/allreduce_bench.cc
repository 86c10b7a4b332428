// allreduce_bench: all-reduce bandwidth against message size for 2-4 processes on this machine
// (Gloo over TCP on the loopback interface, a file store in a temporary folder), FP32 against
// FP16, next to a plain memcpy of the same bytes.
//
//   allreduce_bench --processes 2,3,4 --min_bytes 4096 --max_bytes 268435456
//
// Per row: bytes per process, time per all-reduce, algorithm bandwidth (bytes / time) and bus
// bandwidth (bytes * 2 (n-1) / n / time: what each process sends and receives in a ring or
// halving-doubling exchange), and memcpy bandwidth of the same bytes for scale.
#include <sys/wait.h>
#include <unistd.h>

#include <gflags/gflags.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/half.h"
#include "core/strings.h"
#include "distributed/common_world.h"
#include "tools/tool_common.h"

DEFINE_string(processes, "2,3,4", "comma-separated world sizes to measure");
DEFINE_int64(min_bytes, 4096, "smallest message, bytes per process");
DEFINE_int64(max_bytes, 256 << 20, "largest message, bytes per process (sizes grow 4x)");
DEFINE_string(dtypes, "float,float16", "float and/or float16");
DEFINE_string(algorithm, "halving_doubling", "halving_doubling, ring, ring_chunked or bcube");
DEFINE_string(interface, "lo", "network interface");
DEFINE_double(seconds, 0.5, "time to spend per message size (at least 2 iterations)");
DEFINE_int32(timeout_ms, 120000, "Gloo timeout");

namespace halfcaf {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double MemcpyGBs(size_t bytes) {
  std::vector<char> a(bytes, 1), b(bytes, 0);
  int iters = 0;
  const auto start = Clock::now();
  do {
    std::memcpy(b.data(), a.data(), bytes);
    ++iters;
  } while (Seconds(start, Clock::now()) < 0.1 || iters < 2);
  return static_cast<double>(bytes) * iters / Seconds(start, Clock::now()) / 1e9;
}

// One rank: every size and dtype; rank 0 prints.
int RunRank(const std::string& store, int rank, int size, AllreduceAlgorithm algorithm) {
  CommonWorldOptions o;
  o.rank = rank;
  o.size = size;
  o.timeout_ms = FLAGS_timeout_ms;
  o.interface = FLAGS_interface;
  o.name = "bench" + std::to_string(size);
  auto world = CommonWorld::Create(store, o);
  for (const std::string& dt : SplitList(FLAGS_dtypes)) {
    const DataType dtype = dt == "float16" ? DataType::FLOAT16 : DataType::FLOAT;
    for (int64_t bytes = FLAGS_min_bytes; bytes <= FLAGS_max_bytes; bytes *= 4) {
      const int64_t count = bytes / static_cast<int64_t>(DataTypeSize(dtype));
      Tensor t(std::vector<int64_t>{count}, dtype);
      if (dtype == DataType::FLOAT) {
        std::fill_n(t.mutable_data<float>(), count, 1e-3f);
      } else {
        std::fill_n(t.mutable_data<Half>(), count, Half(1e-3f));
      }
      Allreducer reducer(world, algorithm);
      reducer.Run({&t});  // builds the algorithm, warms up
      // Rank 0 decides the iteration count from the warm-up, so all ranks run the same number.
      Tensor iters_t(std::vector<int64_t>{1}, DataType::FLOAT);
      world->Barrier();
      auto start = Clock::now();
      reducer.Run({&t});
      const double once = Seconds(start, Clock::now());
      iters_t.mutable_data<float>()[0] =
          rank == 0 ? static_cast<float>(std::clamp(FLAGS_seconds / once, 2.0, 1000.0)) : 0.f;
      Allreducer(world).Run({&iters_t});
      const int iters = static_cast<int>(iters_t.data<float>()[0]);
      world->Barrier();
      start = Clock::now();
      for (int i = 0; i < iters; ++i) reducer.Run({&t});
      world->Barrier();
      const double s = Seconds(start, Clock::now()) / iters;
      if (rank == 0) {
        const double algbw = static_cast<double>(bytes) / s / 1e9;
        std::printf("%9d %-8s %12lld %10.3f %10.3f %10.3f %10.2f %7d\n", size, dt.c_str(),
                    static_cast<long long>(bytes), s * 1e3, algbw,
                    algbw * 2.0 * (size - 1) / size, MemcpyGBs(static_cast<size_t>(bytes)),
                    iters);
        std::fflush(stdout);
      }
    }
  }
  world->Close();
  return 0;
}

int Main() {
  const AllreduceAlgorithm algorithm = ParseAllreduceAlgorithm(FLAGS_algorithm);
  char tmpl[] = "/tmp/allreduce_bench_XXXXXX";
  const char* dir = mkdtemp(tmpl);
  HALFCAF_ENFORCE(dir != nullptr, "cannot create a temporary folder");
  std::printf("# Gloo all-reduce (%s) over TCP on '%s', %ld CPUs\n", FLAGS_algorithm.c_str(),
              FLAGS_interface.c_str(), sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("%9s %-8s %12s %10s %10s %10s %10s %7s\n", "processes", "dtype", "bytes", "ms",
              "algbw_GB/s", "busbw_GB/s", "memcpy_GB/s", "iters");
  std::fflush(stdout);
  int failures = 0;
  for (const std::string& p : SplitList(FLAGS_processes)) {
    const int size = std::stoi(p);
    HALFCAF_ENFORCE(size >= 2, "--processes: expected sizes of 2 or more, got ", size);
    std::vector<pid_t> pids;
    for (int rank = 0; rank < size; ++rank) {
      const pid_t pid = fork();
      if (pid == 0) {
        int rc = 1;
        try {
          rc = RunRank(std::string(dir) + "/store", rank, size, algorithm);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "allreduce_bench: rank %d: %s\n", rank, e.what());
        }
        std::fflush(stdout);
        _exit(rc);
      }
      pids.push_back(pid);
    }
    for (pid_t pid : pids) {
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
    }
  }
  std::system((std::string("rm -rf ") + dir).c_str());
  HALFCAF_ENFORCE(failures == 0, failures, " benchmark process(es) failed");
  return 0;
}

}  // namespace
}  // namespace halfcaf

int main(int argc, char** argv) {
  return halfcaf::RunTool("allreduce_bench",
                          "allreduce_bench [--processes 2,3,4] [--min_bytes 4096] "
                          "[--max_bytes 268435456] [--dtypes float,float16] [--algorithm A]",
                          argc, argv, halfcaf::Main);
}
