#include "core/cpu_threads.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/math.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace halfcaf {

namespace {

int CeilDiv(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return 0;
  return static_cast<int>((quota + period - 1) / period);
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

}  // namespace

int CpuQuotaFromCpuMax(const std::string& cpu_max) {
  std::istringstream in(cpu_max);
  std::string quota;
  long long period = 0;
  if (!(in >> quota >> period) || quota == "max") return 0;
  try {
    return CeilDiv(std::stoll(quota), period);
  } catch (const std::exception&) {
    return 0;
  }
}

int CpuQuotaFromCfs(const std::string& quota_us, const std::string& period_us) {
  try {
    return CeilDiv(std::stoll(quota_us), std::stoll(period_us));
  } catch (const std::exception&) {
    return 0;
  }
}

int AvailableCpus() {
  int cpus = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  if (cpus <= 0) cpus = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  int quota = CpuQuotaFromCpuMax(ReadSmallFile("/sys/fs/cgroup/cpu.max"));
  if (quota == 0) {
    quota = CpuQuotaFromCfs(ReadSmallFile("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
                            ReadSmallFile("/sys/fs/cgroup/cpu/cpu.cfs_period_us"));
  }
  return quota > 0 ? std::min(cpus, quota) : cpus;
}

int FitThreadsToAvailableCpus() {
  const int available = AvailableCpus();
  int current = math::CpuLoopThreads();
  if (std::getenv("OMP_NUM_THREADS") || std::getenv("OPENBLAS_NUM_THREADS")) return current;
  if (current > available) {
    math::SetBlasThreads(available);
    current = available;
  }
  return current;
}

}  // namespace halfcaf
