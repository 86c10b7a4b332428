// Where a data reader is in its data set, and what a trainer needs of a reading operator beyond
// its output blobs to checkpoint and resume it exactly (DataInput implements it; models/trainer
// uses it without knowing the operator).
#pragma once

#include <cstdint>
#include <vector>

namespace halfcaf {

struct DataReaderState {
  int64_t epoch = 0;  // epoch of the next sample (0-based)
  int64_t index = 0;  // position of the next sample in that epoch's order
  uint64_t seed = 0;  // shuffle seed: epoch e's order is a function of (seed, e) only

  // {epoch, index, seed} as int64 values, e.g. to store in a checkpoint as an int64 tensor.
  std::vector<int64_t> ToVector() const;
  // Inverse of ToVector; throws unless `v` has 3 values with epoch, index >= 0.
  static DataReaderState FromVector(const std::vector<int64_t>& v);
  bool operator==(const DataReaderState& o) const {
    return epoch == o.epoch && index == o.index && seed == o.seed;
  }
  bool operator!=(const DataReaderState& o) const { return !(*this == o); }
};

// A reader whose position can be saved and restored.
class ResumableReader {
 public:
  virtual ~ResumableReader() = default;
  // Position of the next batch the reader will produce (prefetched batches do not count).
  virtual DataReaderState GetState() const = 0;
  // Continues from `state`; throws if the index is past the epoch.
  virtual void SetState(const DataReaderState& state) = 0;
  // Samples in one epoch of the data set.
  virtual int64_t num_samples() const = 0;
  // Samples per batch.
  virtual int64_t batch_size() const = 0;
};

}  // namespace halfcaf
