#include "core/cpu_threads.h"

#include <sched.h>

#include <gtest/gtest.h>

namespace halfcaf {
namespace {

TEST(CpuThreadsTest, CgroupV2Quota) {
  EXPECT_EQ(CpuQuotaFromCpuMax("max 100000"), 0);  // no quota
  EXPECT_EQ(CpuQuotaFromCpuMax("200000 100000"), 2);
  EXPECT_EQ(CpuQuotaFromCpuMax("150000 100000"), 2);  // 1.5 CPUs: rounded up
  EXPECT_EQ(CpuQuotaFromCpuMax("50000 100000\n"), 1);
  EXPECT_EQ(CpuQuotaFromCpuMax(""), 0);  // no file
  EXPECT_EQ(CpuQuotaFromCpuMax("garbage"), 0);
  EXPECT_EQ(CpuQuotaFromCpuMax("12 0"), 0);
}

TEST(CpuThreadsTest, CgroupV1Quota) {
  EXPECT_EQ(CpuQuotaFromCfs("-1", "100000"), 0);
  EXPECT_EQ(CpuQuotaFromCfs("300000", "100000"), 3);
  EXPECT_EQ(CpuQuotaFromCfs("", ""), 0);
}

TEST(CpuThreadsTest, AvailableCpusIsWithinTheAffinityMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const int n = AvailableCpus();
  EXPECT_GE(n, 1);
  EXPECT_LE(n, CPU_COUNT(&set));
}

}  // namespace
}  // namespace halfcaf
