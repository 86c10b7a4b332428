#include "data/dataset_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/enforce.h"

namespace halfcaf {

namespace fs = std::filesystem;

namespace {

constexpr uint32_t kIdxImagesMagic = 0x00000803;  // unsigned bytes, 3 dims
constexpr uint32_t kIdxLabelsMagic = 0x00000801;  // unsigned bytes, 1 dim
constexpr int64_t kCifarRecord = 1 + 3 * 32 * 32;

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

uint32_t ReadBigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string SampleDimsString(int64_t n, const std::vector<int64_t>& chw) {
  return MakeString(n, " samples of ", DimsString(chw));
}

// Parses an idx header (magic, dims) and checks that exactly prod(dims) data bytes follow.
// Returns the dims; the data starts at 4 + 4 * ndims.
std::vector<int64_t> ParseIdxHeader(const std::vector<uint8_t>& buf, const std::string& path,
                                    const char* what, uint32_t magic, int ndims) {
  const size_t header = 4 + 4 * static_cast<size_t>(ndims);
  HALFCAF_ENFORCE(buf.size() >= 4, what, " file '", path, "' is truncated: ", buf.size(),
                  " bytes, too short for an idx header");
  const uint32_t got = ReadBigEndian32(buf.data());
  if (got != magic) {
    std::string hint;
    if (got == kIdxImagesMagic) hint = " (this is an idx3 images file)";
    if (got == kIdxLabelsMagic) hint = " (this is an idx1 labels file)";
    if (buf[0] == 0x1f && buf[1] == 0x8b) hint = " (a damaged gzip stream?)";
    HALFCAF_THROW(what, " file '", path, "' has wrong magic number ", Hex32(got), ", expected ",
                  Hex32(magic), hint);
  }
  HALFCAF_ENFORCE(buf.size() >= header, what, " file '", path, "' is truncated: ", buf.size(),
                  " bytes, the idx header needs ", header);
  std::vector<int64_t> dims;
  int64_t payload = 1;
  for (int d = 0; d < ndims; ++d) {
    dims.push_back(ReadBigEndian32(buf.data() + 4 + 4 * d));
    HALFCAF_ENFORCE(dims.back() > 0, what, " file '", path, "' has a zero dimension in its header ",
                    "(dim ", d, ")");
    HALFCAF_ENFORCE(!__builtin_mul_overflow(payload, dims.back(), &payload), what, " file '",
                    path, "' has header dims ", DimsString(dims), "... whose product overflows");
  }
  const int64_t have = static_cast<int64_t>(buf.size() - header);
  HALFCAF_ENFORCE(have >= payload, what, " file '", path, "' is truncated: header says ",
                  DimsString(dims), " (", payload, " bytes of data), but only ", have,
                  " bytes follow");
  HALFCAF_ENFORCE(have == payload, what, " file '", path, "' has ", have - payload,
                  " unexpected bytes after the ", DimsString(dims), " data");
  return dims;
}

class SyntheticDataSource final : public DataSource {
 public:
  SyntheticDataSource(const std::vector<int64_t>& chw, int num_classes, int64_t count,
                      uint64_t seed)
      : num_classes_(num_classes), seed_(seed) {
    size_ = count;
    sample_dims_ = chw;
    description_ = MakeString("synthetic data (", SampleDimsString(count, chw), ", ", num_classes,
                              " classes, seed ", seed, ")");
  }

  void ReadSample(int64_t i, uint8_t* chw) const override {
    const uint64_t tkey = Mix(seed_ ^ 0x5bd1e9955bd1e995ull) + static_cast<uint64_t>(Label(i));
    const uint64_t nkey = Mix(Mix(seed_ ^ 0x27d4eb2f165667c5ull) + static_cast<uint64_t>(i));
    const int64_t n = sample_numel();
    for (int64_t b = 0; b * 8 < n; ++b) {
      uint64_t t = Mix(Mix(tkey) + static_cast<uint64_t>(b));
      uint64_t z = Mix(nkey + static_cast<uint64_t>(b));
      for (int64_t k = b * 8; k < std::min(n, b * 8 + 8); ++k) {
        chw[k] = static_cast<uint8_t>(((t & 0xff) + (z & 0xff)) >> 1);
        t >>= 8;
        z >>= 8;
      }
    }
  }

  int32_t Label(int64_t i) const override {
    return static_cast<int32_t>(Mix(Mix(seed_ ^ 0x165667b19e3779f9ull) + static_cast<uint64_t>(i)) %
                                static_cast<uint64_t>(num_classes_));
  }

 private:
  // splitmix64's finaliser: a cheap, well-mixed hash.
  static uint64_t Mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }

  int num_classes_;
  uint64_t seed_;
};

// Appends the records of one CIFAR-10 batch file.
void AppendCifarFile(const std::string& path, std::vector<uint8_t>* pixels,
                     std::vector<int32_t>* labels) {
  std::vector<uint8_t> buf = ReadMaybeGzipFile(path, "CIFAR-10 batch");
  const int64_t size = static_cast<int64_t>(buf.size());
  HALFCAF_ENFORCE(size > 0, "CIFAR-10 batch file '", path, "' is empty");
  HALFCAF_ENFORCE(size % kCifarRecord == 0, "CIFAR-10 batch file '", path,
                  "' is truncated or not a CIFAR-10 batch: ", size, " bytes is ",
                  size / kCifarRecord, " whole ", kCifarRecord, "-byte records plus ",
                  size % kCifarRecord, " bytes");
  const int64_t n = size / kCifarRecord;
  for (int64_t r = 0; r < n; ++r) {
    const uint8_t* rec = buf.data() + r * kCifarRecord;
    HALFCAF_ENFORCE(rec[0] < 10, "CIFAR-10 batch file '", path, "': record ", r, " has label ",
                    int{rec[0]}, ", expected 0..9");
    labels->push_back(rec[0]);
    pixels->insert(pixels->end(), rec + 1, rec + kCifarRecord);
  }
}

// data_batch_2.bin sorts before data_batch_10.bin.
int64_t BatchNumber(const std::string& name) {
  const size_t p = std::strlen("data_batch_");
  size_t q = p;
  while (q < name.size() && name[q] >= '0' && name[q] <= '9') ++q;
  return q > p && q - p < 10 ? std::stoll(name.substr(p, q - p)) : -1;
}

}  // namespace

InMemoryDataSource::InMemoryDataSource(std::vector<uint8_t> pixels, std::vector<int32_t> labels,
                                       std::vector<int64_t> sample_dims, std::string description)
    : pixels_(std::move(pixels)), labels_(std::move(labels)) {
  size_ = static_cast<int64_t>(labels_.size());
  sample_dims_ = std::move(sample_dims);
  description_ = std::move(description);
  // Samples of no pixels (a 0 in their dims) cannot be trained on.
  HALFCAF_ENFORCE(sample_dims_.size() == 3 && sample_dims_[0] > 0 && sample_dims_[1] > 0 &&
                      sample_dims_[2] > 0,
                  "in-memory data set: samples of ", SampleDimsString(size_, sample_dims_),
                  " have no pixels");
  HALFCAF_ENFORCE(static_cast<int64_t>(pixels_.size()) == size_ * sample_numel(),
                  "in-memory data set: ", pixels_.size(), " pixel bytes for ",
                  SampleDimsString(size_, sample_dims_));
}

void InMemoryDataSource::ReadSample(int64_t i, uint8_t* chw) const {
  std::memcpy(chw, sample(i), static_cast<size_t>(sample_numel()));
}

std::vector<uint8_t> ReadMaybeGzipFile(const std::string& path, const std::string& what) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  HALFCAF_ENFORCE(fs::exists(st), "cannot open ", what, " file '", path,
                  "': no such file or directory");
  HALFCAF_ENFORCE(!fs::is_directory(st), "cannot read ", what, " file '", path,
                  "': it is a directory");
  errno = 0;
  gzFile f = gzopen(path.c_str(), "rb");
  HALFCAF_ENFORCE(f != nullptr, "cannot open ", what, " file '", path,
                  "': ", errno ? std::strerror(errno) : "out of memory");
  std::vector<uint8_t> out;
  const uintmax_t on_disk = fs::file_size(path, ec);
  if (!ec) out.reserve(static_cast<size_t>(on_disk));
  constexpr unsigned kChunk = 1u << 20;
  std::string error;
  while (true) {
    const size_t old = out.size();
    out.resize(old + kChunk);
    const int got = gzread(f, out.data() + old, kChunk);
    if (got < 0) {
      int code = 0;
      const char* msg = gzerror(f, &code);
      error = code == Z_ERRNO ? std::strerror(errno) : (msg ? msg : "unknown error");
      // zlib prefixes its messages with the path, which the message below already names.
      if (error.rfind(path + ": ", 0) == 0) error = error.substr(path.size() + 2);
      out.resize(old);
      break;
    }
    out.resize(old + static_cast<size_t>(got));
    if (got == 0) break;
  }
  // A gzip stream cut short ends without an error from gzread in some zlib versions.
  int code = Z_OK;
  const char* msg = gzerror(f, &code);
  if (error.empty() && code != Z_OK) {
    error = msg ? msg : "unknown error";
    if (error.rfind(path + ": ", 0) == 0) error = error.substr(path.size() + 2);
  }
  gzclose(f);
  HALFCAF_ENFORCE(error.empty(), "error reading ", what, " file '", path,
                  "' (truncated or corrupt?): ", error);
  return out;
}

std::string IdxLabelsPath(const std::string& images_path) {
  const fs::path p(images_path);
  std::string name = p.filename().string();
  const size_t img = name.find("images");
  const size_t idx3 = name.find("idx3");
  HALFCAF_ENFORCE(img != std::string::npos && idx3 != std::string::npos, "idx images file '",
                  images_path,
                  "' does not follow the naming <prefix>-images-idx3-ubyte[.gz], so its labels "
                  "file cannot be found");
  name.replace(img, 6, "labels");
  name.replace(name.find("idx3"), 4, "idx1");
  const fs::path primary = p.parent_path() / name;
  std::error_code ec;
  if (fs::exists(primary, ec)) return primary.string();
  // Images gzipped and labels not (or the other way round).
  const bool gz = name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0;
  const fs::path other = p.parent_path() / (gz ? name.substr(0, name.size() - 3) : name + ".gz");
  if (fs::exists(other, ec)) return other.string();
  return primary.string();
}

std::unique_ptr<DataSource> LoadIdxDataset(const std::string& images_path) {
  std::error_code ec;
  HALFCAF_ENFORCE(!fs::is_directory(images_path, ec), "idx source '", images_path,
                  "' is a folder: give the images file, e.g. ",
                  (fs::path(images_path) / "train-images-idx3-ubyte.gz").string());
  return LoadIdxDataset(images_path, IdxLabelsPath(images_path));
}

std::unique_ptr<DataSource> LoadIdxDataset(const std::string& images_path,
                                           const std::string& labels_path) {
  std::vector<uint8_t> ibuf = ReadMaybeGzipFile(images_path, "idx images");
  const std::vector<int64_t> idims =
      ParseIdxHeader(ibuf, images_path, "idx images", kIdxImagesMagic, 3);
  std::vector<uint8_t> lbuf = ReadMaybeGzipFile(labels_path, "idx labels");
  const std::vector<int64_t> ldims =
      ParseIdxHeader(lbuf, labels_path, "idx labels", kIdxLabelsMagic, 1);
  HALFCAF_ENFORCE(idims[0] == ldims[0], "image/label count mismatch: idx images file '",
                  images_path, "' holds ", idims[0], " images but idx labels file '", labels_path,
                  "' holds ", ldims[0], " labels");
  // Drop the headers in place rather than copying 47 MB.
  ibuf.erase(ibuf.begin(), ibuf.begin() + 16);
  ibuf.shrink_to_fit();
  std::vector<int32_t> labels(lbuf.begin() + 8, lbuf.end());
  const std::vector<int64_t> chw = {1, idims[1], idims[2]};
  std::string desc = MakeString("idx '", images_path, "' (", SampleDimsString(idims[0], chw), ")");
  return std::make_unique<InMemoryDataSource>(std::move(ibuf), std::move(labels), chw,
                                              std::move(desc));
}

std::unique_ptr<DataSource> LoadCifar10Dataset(const std::string& path) {
  std::error_code ec;
  HALFCAF_ENFORCE(fs::exists(path, ec), "cannot open CIFAR-10 source '", path,
                  "': no such file or directory");
  std::vector<std::string> files;
  if (fs::is_directory(path, ec)) {
    std::vector<std::pair<int64_t, std::string>> batches;
    bool has_test = false;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("data_batch_", 0) == 0 && name.size() > 4 &&
          name.compare(name.size() - 4, 4, ".bin") == 0) {
        batches.emplace_back(BatchNumber(name), entry.path().string());
      }
      if (name == "test_batch.bin") has_test = true;
    }
    HALFCAF_ENFORCE(!ec, "cannot list CIFAR-10 folder '", path, "': ", ec.message());
    std::sort(batches.begin(), batches.end());
    for (const auto& b : batches) files.push_back(b.second);
    if (files.empty() && has_test) files.push_back((fs::path(path) / "test_batch.bin").string());
    HALFCAF_ENFORCE(!files.empty(), "CIFAR-10 folder '", path,
                    "' holds no data_batch_*.bin and no test_batch.bin");
  } else {
    files.push_back(path);
  }
  std::vector<uint8_t> pixels;
  std::vector<int32_t> labels;
  for (const auto& f : files) AppendCifarFile(f, &pixels, &labels);
  const std::vector<int64_t> chw = {3, 32, 32};
  std::string desc = MakeString("cifar10 '", path, "' (", files.size(), " file(s), ",
                                SampleDimsString(static_cast<int64_t>(labels.size()), chw), ")");
  return std::make_unique<InMemoryDataSource>(std::move(pixels), std::move(labels), chw,
                                              std::move(desc));
}

std::unique_ptr<DataSource> MakeSyntheticDataset(const std::vector<int64_t>& chw, int num_classes,
                                                 int64_t count, uint64_t seed) {
  HALFCAF_ENFORCE(chw.size() == 3 && chw[0] > 0 && chw[1] > 0 && chw[2] > 0,
                  "synthetic data needs a CHW shape of 3 positive ints, got ", DimsString(chw));
  HALFCAF_ENFORCE(num_classes > 0, "synthetic data needs num_classes > 0, got ", num_classes);
  HALFCAF_ENFORCE(count > 0, "synthetic data needs a positive sample count, got ", count);
  return std::make_unique<SyntheticDataSource>(chw, num_classes, count, seed);
}

}  // namespace halfcaf
