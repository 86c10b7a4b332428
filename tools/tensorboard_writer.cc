#include "tools/tensorboard_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/enforce.h"
#include "proto/tensorboard.pb.h"

namespace halfcaf {
namespace {

std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected poly
    t[i] = c;
  }
  return t;
}

double WallTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void MakeDirs(const std::string& dir) {
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at != dir.size() && dir[at] != '/') continue;
    const std::string part = dir.substr(0, at);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      HALFCAF_THROW("--tensorboard: cannot create the folder ", part, ": ", std::strerror(errno));
    }
  }
}

}  // namespace

uint32_t Crc32c(const void* data, size_t n) {
  static const std::array<uint32_t, 256> table = MakeTable();
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t MaskedCrc32c(const void* data, size_t n) {
  const uint32_t crc = Crc32c(data, n);
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

std::string TfRecord(const std::string& data) {
  auto put = [](std::string* s, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  };
  std::string length;
  put(&length, data.size(), 8);
  std::string out = length;
  put(&out, MaskedCrc32c(length.data(), length.size()), 4);
  out += data;
  put(&out, MaskedCrc32c(data.data(), data.size()), 4);
  return out;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  HALFCAF_ENFORCE(!dir.empty(), "--tensorboard needs a folder");
  MakeDirs(dir);
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  path_ = dir + "/events.out.tfevents." +
          std::to_string(static_cast<int64_t>(WallTime())) + "." + host + ".halfcaf";
  out_.open(path_, std::ios::binary | std::ios::trunc);
  HALFCAF_ENFORCE(out_.good(), "--tensorboard: cannot write ", path_);
  tensorboard::Event version;
  version.set_wall_time(WallTime());
  version.set_file_version("brain.Event:2");
  Write(version.SerializeAsString());
}

namespace {

// An event at `step`, stamped now, for one call's summary values.
tensorboard::Event StepEvent(int64_t step) {
  tensorboard::Event event;
  event.set_wall_time(WallTime());
  event.set_step(step);
  return event;
}

}  // namespace

void TensorBoardWriter::Scalars(int64_t step,
                                const std::vector<std::pair<std::string, double>>& values) {
  tensorboard::Event event = StepEvent(step);
  for (const auto& tv : values) {
    tensorboard::SummaryValue* v = event.mutable_summary()->add_value();
    v->set_tag(tv.first);
    v->set_simple_value(static_cast<float>(tv.second));
  }
  Write(event.SerializeAsString());
}

void TensorBoardWriter::Histogram(int64_t step, const std::string& tag, const float* values,
                                  size_t n, int buckets) {
  HALFCAF_ENFORCE(buckets > 0, "TensorBoardWriter::Histogram: buckets must be positive");
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0, sum_sq = 0;
  size_t finite = 0;
  for (size_t i = 0; i < n; ++i) {
    const double v = values[i];
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
    sum_sq += v * v;
    ++finite;
  }
  tensorboard::Event event = StepEvent(step);
  tensorboard::SummaryValue* sv = event.mutable_summary()->add_value();
  sv->set_tag(tag);
  tensorboard::HistogramProto* h = sv->mutable_histo();
  h->set_num(static_cast<double>(finite));
  h->set_sum(sum);
  h->set_sum_squares(sum_sq);
  if (finite == 0) {
    h->set_min(0);
    h->set_max(0);
  } else {
    h->set_min(lo);
    h->set_max(hi);
    // One bucket when every value is the same; else `buckets` of equal width.
    const int k = hi > lo ? buckets : 1;
    std::vector<double> counts(static_cast<size_t>(k), 0);
    const double width = (hi - lo) / k;
    for (size_t i = 0; i < n; ++i) {
      const double v = values[i];
      if (!std::isfinite(v)) continue;
      const int b = k == 1 ? 0 : std::min(k - 1, static_cast<int>((v - lo) / width));
      counts[static_cast<size_t>(b)] += 1;
    }
    for (int b = 0; b < k; ++b) {
      h->add_bucket_limit(b == k - 1 ? hi : lo + (b + 1) * width);
      h->add_bucket(counts[static_cast<size_t>(b)]);
    }
  }
  if (finite < n) {
    tensorboard::SummaryValue* bad = event.mutable_summary()->add_value();
    bad->set_tag(tag + "/nonfinite");
    bad->set_simple_value(static_cast<float>(n - finite));
  }
  Write(event.SerializeAsString());
}

void TensorBoardWriter::Image(int64_t step, const std::string& tag, const std::string& png) {
  // The signature, then the IHDR chunk: length, "IHDR", width, height (big-endian), bit depth,
  // colour type (0 grey, 2 RGB, 4 grey + alpha, 6 RGBA).
  HALFCAF_ENFORCE(png.size() >= 26 && png.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0 &&
                      png.compare(12, 4, "IHDR") == 0,
                  "TensorBoard image '", tag, "': not a PNG");
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(png[at + i]);
    return static_cast<int>(v);
  };
  const int width = be32(16), height = be32(20);
  const int colour = static_cast<uint8_t>(png[25]);
  const int channels = colour == 0 ? 1 : colour == 2 ? 3 : colour == 4 ? 2 : 4;
  tensorboard::Event event = StepEvent(step);
  tensorboard::SummaryValue* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  tensorboard::SummaryImage* img = v->mutable_image();
  img->set_height(height);
  img->set_width(width);
  img->set_colorspace(channels);
  img->set_encoded_image_string(png);
  Write(event.SerializeAsString());
}

void TensorBoardWriter::Write(const std::string& event) {
  const std::string record = TfRecord(event);
  out_.write(record.data(), static_cast<std::streamsize>(record.size()));
  out_.flush();  // TensorBoard reads the file while training runs
  HALFCAF_ENFORCE(out_.good(), "--tensorboard: writing ", path_, " failed");
}

}  // namespace halfcaf
