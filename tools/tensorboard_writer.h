// TensorBoard event files (train_net --tensorboard DIR): one file
// DIR/events.out.tfevents.<unix seconds>.<host>.halfcaf of TFRecord records, each an Event
// (proto/tensorboard.proto, TensorFlow's field numbers): first the file version, then one
// Summary of tagged scalars per call. A record is the data's length (uint64, little-endian), the
// masked CRC-32C of those 8 bytes, the data, and the data's masked CRC-32C. Debian packages no
// CRC-32C library for C++, so the (table-driven) checksum is here. Also histograms (weights and
// gradients) and PNG images (the GAN's sample grids).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace halfcaf {

// CRC-32C (Castagnoli) of `n` bytes, and TFRecord's mask of it.
uint32_t Crc32c(const void* data, size_t n);
uint32_t MaskedCrc32c(const void* data, size_t n);
// The framed record of `data`.
std::string TfRecord(const std::string& data);

class TensorBoardWriter {
 public:
  // Creates `dir` if needed and the event file in it; throws EnforceNotMet naming the path.
  explicit TensorBoardWriter(const std::string& dir);
  const std::string& path() const { return path_; }
  // One event at `step` with a scalar per (tag, value).
  void Scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values);
  // A histogram of the `n` values (`buckets` equal-width buckets from their min to their max;
  // values that are not finite are left out and counted in the scalar `<tag>/nonfinite` when there
  // are any). One event per call.
  void Histogram(int64_t step, const std::string& tag, const float* values, size_t n,
                 int buckets = 30);
  // An image: PNG bytes (its size and colour type are read from its header; throws when it is not
  // a PNG).
  void Image(int64_t step, const std::string& tag, const std::string& png);

 private:
  void Write(const std::string& event);
  std::string path_;
  std::ofstream out_;
};

}  // namespace halfcaf
