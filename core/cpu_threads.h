// How many CPU threads the process should compute with: the CPUs it may run on (its affinity
// mask) and, in a container, its cgroup CPU quota (cgroup v2 cpu.max, v1 cpu.cfs_quota_us /
// cpu.cfs_period_us), whichever is lower. A pool sized to the machine's cores in a container
// allowed two of them runs many threads on two CPUs, and each parallel region waits for the
// slowest of them.
#pragma once

#include <string>

namespace halfcaf {

// The quota as whole CPUs, rounded up, from the text of cgroup v2's cpu.max ("150000 100000" ->
// 2; "max 100000" -> 0, no quota) or of v1's quota and period files (quota "-1": 0). 0 when the
// text does not parse.
int CpuQuotaFromCpuMax(const std::string& cpu_max);
int CpuQuotaFromCfs(const std::string& quota_us, const std::string& period_us);

// The CPUs this process may use now: its affinity mask's count, capped by its cgroup's quota.
int AvailableCpus();

// Sizes OpenMP's and OpenBLAS's thread pools to AvailableCpus() when they are larger and
// neither OMP_NUM_THREADS nor OPENBLAS_NUM_THREADS says otherwise; returns the thread count
// in effect (for a log line).
int FitThreadsToAvailableCpus();

}  // namespace halfcaf
