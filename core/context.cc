#include "core/context.h"

#include <atomic>

namespace halfcaf {

namespace {
std::atomic<uint32_t> g_seed{1234567u};
}  // namespace

void SetGlobalSeed(uint32_t seed) { g_seed = seed; }

uint32_t NextSeed() {
  // Each new context draws a distinct but repeatable seed.
  return g_seed.fetch_add(0x9e3779b9u);
}

CPUContext::CPUContext(const DeviceOption& option)
    : rng_(option.has_random_seed() ? option.random_seed() : NextSeed()) {}

}  // namespace halfcaf
