#include "core/scratch.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>

#include "core/allocator.h"
#include "core/enforce.h"

namespace halfcaf {

namespace {

std::atomic<size_t> g_held{0}, g_peak{0};

void Count(ptrdiff_t delta) {
  const size_t now = g_held.fetch_add(static_cast<size_t>(delta)) + static_cast<size_t>(delta);
  size_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
}

// One 64-byte aligned buffer that only grows.
class Buffer {
 public:
  ~Buffer() { Drop(); }
  void* Reserve(size_t bytes) {
    if (bytes <= bytes_) return data_;
    Drop();  // first, so the old and the new buffer never count (or exist) together
    const size_t rounded = (bytes + 63) / 64 * 64;
    ReserveCpuBytes(rounded, "operator scratch");
    data_ = std::aligned_alloc(64, rounded);
    if (data_ == nullptr) {
      ReleaseCpuBytes(rounded);
      HALFCAF_THROW("out of memory: operator scratch of ", rounded, " bytes");
    }
    bytes_ = rounded;
    Count(static_cast<ptrdiff_t>(rounded));
    return data_;
  }

 private:
  void Drop() {
    if (data_ == nullptr) return;
    std::free(data_);
    ReleaseCpuBytes(bytes_);
    Count(-static_cast<ptrdiff_t>(bytes_));
    data_ = nullptr;
    bytes_ = 0;
  }
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// The calling thread's pool: buffers[0 .. next) are in use by the running operator(s).
struct Pool {
  std::vector<std::unique_ptr<Buffer>> buffers;
  size_t next = 0;
  int depth = 0;  // open ScratchScopes
};

Pool& ThreadPool() {
  thread_local Pool pool;
  return pool;
}

}  // namespace

void* ScratchBytes(size_t nbytes, std::vector<float>* fallback) {
  Pool& p = ThreadPool();
  if (p.depth == 0) {
    fallback->resize((nbytes + sizeof(float) - 1) / sizeof(float));
    return fallback->data();
  }
  if (p.next == p.buffers.size()) p.buffers.push_back(std::make_unique<Buffer>());
  return p.buffers[p.next++]->Reserve(std::max<size_t>(nbytes, 1));
}

float* ScratchFloats(size_t n, std::vector<float>* fallback) {
  return static_cast<float*>(ScratchBytes(n * sizeof(float), fallback));
}

ScratchScope::ScratchScope() {
  Pool& p = ThreadPool();
  saved_ = p.next;
  ++p.depth;
}

ScratchScope::~ScratchScope() {
  Pool& p = ThreadPool();
  p.next = saved_;
  --p.depth;
}

void ReleaseScratch() {
  Pool& p = ThreadPool();
  p.buffers.resize(p.next);
}

size_t ScratchBytesHeld() { return g_held.load(); }
size_t ScratchBytesPeak() { return g_peak.load(); }

}  // namespace halfcaf
