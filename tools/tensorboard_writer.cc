#include "tools/tensorboard_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

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

void TensorBoardWriter::Scalars(int64_t step,
                                const std::vector<std::pair<std::string, double>>& values) {
  tensorboard::Event event;
  event.set_wall_time(WallTime());
  event.set_step(step);
  for (const auto& tv : values) {
    tensorboard::SummaryValue* v = event.mutable_summary()->add_value();
    v->set_tag(tv.first);
    v->set_simple_value(static_cast<float>(tv.second));
  }
  Write(event.SerializeAsString());
}

void TensorBoardWriter::Write(const std::string& event) {
  const std::string record = TfRecord(event);
  out_.write(record.data(), static_cast<std::streamsize>(record.size()));
  out_.flush();  // TensorBoard reads the file while training runs
  HALFCAF_ENFORCE(out_.good(), "--tensorboard: writing ", path_, " failed");
}

}  // namespace halfcaf
