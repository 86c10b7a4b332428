// Helpers for the ImageInput / make_image_db tests: images with known pixel patterns (so crop
// positions, mirroring and channel order can be read back from the output), records and DBs of
// them, and a temporary folder.
#pragma once

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/enforce.h"
#include "data/db.h"
#include "data/image_codec.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {
namespace testing {

// A fresh folder under the test temp dir, removed at the end of the test.
class ImageTempDir {
 public:
  ImageTempDir() {
    std::string tmpl = ::testing::TempDir() + "/halfcaf_image_XXXXXX";
    path_ = mkdtemp(&tmpl[0]);
  }
  ~ImageTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The DB type tests use: LMDB if built, else LevelDB, else "" (tests skip).
inline std::string TestDBType() {
  if (db::DBTypeAvailable("lmdb")) return "lmdb";
  if (db::DBTypeAvailable("leveldb")) return "leveldb";
  return "";
}

inline bool HaveJpeg() { return image::FormatAvailable(image::Format::JPEG); }
inline bool HavePng() { return image::FormatAvailable(image::Format::PNG); }

// Pattern image `id` (< 16), h x w (h <= 24, w <= 32), BGR: B = 6 x + 2 id, G = 8 y + 2 id,
// R = 220 - 3 x - 3 y + id, all in [0, 255]: smooth (JPEG keeps it within a few levels), and a
// pixel's position can be read from its B and G values.
inline uint8_t PatternValue(int id, int y, int x, int c) {
  return static_cast<uint8_t>(c == 0 ? 6 * x + 2 * id
                                     : (c == 1 ? 8 * y + 2 * id : 220 - 3 * x - 3 * y + id));
}

inline image::Image PatternImage(int id, int h, int w, int channels = 3) {
  image::Image img;
  img.height = h;
  img.width = w;
  img.channels = 3;
  img.pixels.resize(static_cast<size_t>(h) * w * 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) img.pixels[(y * w + x) * 3 + c] = PatternValue(id, y, x, c);
    }
  }
  if (channels == 3) return img;
  image::Image grey;
  image::ConvertChannels(img, 1, &grey);
  return grey;
}

// A record: protos(0) STRING (encoded bytes) or BYTE (raw pixels, dims (H, W, C)); protos(1)
// INT32 label.
inline std::string EncodedRecord(const std::string& encoded, int label) {
  TensorProtos protos;
  TensorProto* image = protos.add_protos();
  image->set_data_type(TensorProto::STRING);
  image->add_string_data(encoded);
  TensorProto* l = protos.add_protos();
  l->set_data_type(TensorProto::INT32);
  l->add_int32_data(label);
  std::string out;
  protos.SerializeToString(&out);
  return out;
}

inline std::string RawRecord(const image::Image& img, int label, bool hw_only = false) {
  TensorProtos protos;
  TensorProto* image = protos.add_protos();
  image->set_data_type(TensorProto::BYTE);
  image->add_dims(img.height);
  image->add_dims(img.width);
  if (!hw_only) image->add_dims(img.channels);
  image->set_byte_data(img.pixels.data(), img.pixels.size());
  TensorProto* l = protos.add_protos();
  l->set_data_type(TensorProto::INT32);
  l->add_int32_data(label);
  std::string out;
  protos.SerializeToString(&out);
  return out;
}

// A Caffe Datum record: the encoded file (`encoded` non-empty), or `img`'s pixels channel-major.
inline std::string DatumRecord(const image::Image& img, int label,
                               const std::string& encoded = "") {
  Datum d;
  d.set_label(label);
  if (!encoded.empty()) {
    d.set_encoded(true);
    d.set_data(encoded);
  } else {
    d.set_channels(img.channels);
    d.set_height(img.height);
    d.set_width(img.width);
    std::string chw(img.pixels.size(), '\0');
    const size_t hw = static_cast<size_t>(img.height) * img.width;
    for (size_t i = 0; i < hw; ++i) {
      for (int c = 0; c < img.channels; ++c) {
        chw[c * hw + i] = static_cast<char>(img.pixels[i * img.channels + c]);
      }
    }
    d.set_data(chw);
  }
  std::string out;
  d.SerializeToString(&out);
  return out;
}

inline std::string RecordKey(int i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08d", i);
  return buf;
}

inline void WriteImageDB(const std::string& type, const std::string& path,
                         const std::vector<std::pair<std::string, std::string>>& records) {
  std::unique_ptr<db::DB> d = db::OpenDB(type, path, db::Mode::NEW);
  std::unique_ptr<db::Transaction> txn = d->NewTransaction();
  for (const auto& r : records) txn->Put(r.first, r.second);
  txn->Commit();
}

// n records of pattern images (id = label = i) encoded by `encode`.
inline std::vector<std::pair<std::string, std::string>> PatternRecords(
    int n, int h, int w, const std::function<std::string(const image::Image&)>& encode) {
  std::vector<std::pair<std::string, std::string>> out;
  for (int i = 0; i < n; ++i) {
    out.emplace_back(RecordKey(i), EncodedRecord(encode(PatternImage(i, h, w)), i));
  }
  return out;
}

}  // namespace testing
}  // namespace halfcaf
