#include "core/scratch.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
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

// One 64-byte aligned buffer that only grows (until Release).
class Buffer {
 public:
  ~Buffer() { Release(); }
  size_t bytes() const { return bytes_; }
  void* Reserve(size_t bytes) {
    if (bytes <= bytes_) return data_;
    Release();  // first, so the old and the new buffer never count (or exist) together
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
  void Release() {
    if (data_ == nullptr) return;
    std::free(data_);
    ReleaseCpuBytes(bytes_);
    Count(-static_cast<ptrdiff_t>(bytes_));
    data_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// The calling thread's pool. `taken` lists the buffers handed out to the running operator(s),
// in order; a closing scope gives back those taken since it opened.
struct Pool {
  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<char> in_use;
  std::vector<size_t> taken;
  int depth = 0;
};

Pool& ThreadPool() {
  thread_local Pool pool;
  return pool;
}

// The free buffer for a request of `need` bytes: the smallest that holds it; else the largest
// (grown), so that big requests keep going to the same few buffers and small ones do not grow
// them; else a new one. The pool then holds about the most any one operator asks for at once,
// not the sum over request positions of the largest request at each.
size_t PickBuffer(Pool* p, size_t need) {
  size_t fit = SIZE_MAX, largest = SIZE_MAX;
  for (size_t i = 0; i < p->buffers.size(); ++i) {
    if (p->in_use[i]) continue;
    const size_t cap = p->buffers[i]->bytes();
    if (cap >= need && (fit == SIZE_MAX || cap < p->buffers[fit]->bytes())) fit = i;
    if (largest == SIZE_MAX || cap > p->buffers[largest]->bytes()) largest = i;
  }
  if (fit != SIZE_MAX) return fit;
  if (largest != SIZE_MAX) return largest;
  p->buffers.push_back(std::make_unique<Buffer>());
  p->in_use.push_back(0);
  return p->buffers.size() - 1;
}

}  // namespace

void* ScratchBytes(size_t nbytes, std::vector<float>* fallback) {
  Pool& p = ThreadPool();
  if (p.depth == 0) {
    fallback->resize((nbytes + sizeof(float) - 1) / sizeof(float));
    return fallback->data();
  }
  const size_t need = std::max<size_t>(nbytes, 1);
  const size_t i = PickBuffer(&p, need);
  p.in_use[i] = 1;
  p.taken.push_back(i);
  return p.buffers[i]->Reserve(need);
}

float* ScratchFloats(size_t n, std::vector<float>* fallback) {
  return static_cast<float*>(ScratchBytes(n * sizeof(float), fallback));
}

ScratchScope::ScratchScope() {
  Pool& p = ThreadPool();
  saved_ = p.taken.size();
  ++p.depth;
}

ScratchScope::~ScratchScope() {
  Pool& p = ThreadPool();
  while (p.taken.size() > saved_) {
    p.in_use[p.taken.back()] = 0;
    p.taken.pop_back();
  }
  --p.depth;
}

void ReleaseScratch() {
  Pool& p = ThreadPool();
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    if (!p.in_use[i]) p.buffers[i]->Release();
  }
}

size_t ScratchBytesHeld() { return g_held.load(); }
size_t ScratchBytesPeak() { return g_peak.load(); }

}  // namespace halfcaf
