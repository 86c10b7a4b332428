// The DataInput source for Caffe2 DBs (leveldb / lmdb) of {image, label} TensorProtos records,
// and the loaders by format name (LoadDataSource, LoadDataSourceShared).
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>

#include "core/enforce.h"
#include "core/tensor_proto.h"
#include "data/dataset_reader.h"
#include "data/db.h"

namespace halfcaf {

namespace {

bool IsChannelCount(int64_t d) { return d == 1 || d == 3 || d == 4; }

// Sample dims {C, H, W} and whether the stored image is (H, W, C), from the first record's image.
std::pair<std::vector<int64_t>, bool> ImageLayout(const std::vector<int64_t>& d,
                                                  const std::string& where) {
  if (d.size() == 2) return {{1, d[0], d[1]}, false};
  HALFCAF_ENFORCE(d.size() == 3, where, ": the image (tensor 0) has dims ", DimsString(d),
                  "; expected (C, H, W), (H, W, C) or (H, W)");
  const bool chw = IsChannelCount(d[0]) && !IsChannelCount(d[2]);
  const bool hwc = IsChannelCount(d[2]) && !IsChannelCount(d[0]);
  HALFCAF_ENFORCE(chw || hwc, where, ": cannot tell whether the image dims ", DimsString(d),
                  " are (C, H, W) or (H, W, C) (the channel count, 1, 3 or 4, must be at exactly "
                  "one end)");
  if (chw) return {{d[0], d[1], d[2]}, false};
  return {{d[2], d[0], d[1]}, true};
}

}  // namespace

void ImageLabelRecords::Add(const std::string& value, const std::string& where) {
  HALFCAF_ENFORCE(protos_.ParseFromString(value), where, ": not a serialized TensorProtos");
  HALFCAF_ENFORCE(protos_.protos_size() >= 2, where, ": holds ", protos_.protos_size(),
                  " tensor(s); a training record needs an image and a label");
  try {
    TensorFromProto(protos_.protos(0), &image_);
    TensorFromProto(protos_.protos(1), &label_);
  } catch (EnforceNotMet& e) {
    e.AddContext(where);
    throw;
  }
  HALFCAF_ENFORCE(image_.dtype() == DataType::UINT8 || image_.dtype() == DataType::BYTE, where,
                  ": the image (tensor 0) is ", image_.DebugString(), "; expected uint8 pixels");
  HALFCAF_ENFORCE(label_.numel() == 1 && label_.dtype() == DataType::INT32, where,
                  ": the label (tensor 1) is ", label_.DebugString(), "; expected one int32");
  if (labels_.empty()) {
    stored_dims_ = image_.dims();
    std::tie(chw_, hwc_) = ImageLayout(stored_dims_, where);
  }
  HALFCAF_ENFORCE(image_.dims() == stored_dims_, where, ": image dims ",
                  DimsString(image_.dims()), " differ from the first record's ",
                  DimsString(stored_dims_));
  HALFCAF_ENFORCE(label_.data<int32_t>()[0] >= 0, where, ": negative label ",
                  label_.data<int32_t>()[0]);
  const uint8_t* src = static_cast<const uint8_t*>(image_.raw_data());
  const int64_t C = chw_[0], HW = chw_[1] * chw_[2];
  const size_t at = pixels_.size();
  pixels_.resize(at + static_cast<size_t>(C * HW));
  uint8_t* dst = pixels_.data() + at;
  if (!hwc_) {
    std::copy(src, src + C * HW, dst);
  } else {
    for (int64_t p = 0; p < HW; ++p) {
      for (int64_t c = 0; c < C; ++c) dst[c * HW + p] = src[p * C + c];
    }
  }
  labels_.push_back(label_.data<int32_t>()[0]);
}

std::unique_ptr<DataSource> ImageLabelRecords::Finish(const std::string& source) {
  HALFCAF_ENFORCE(!labels_.empty(), source, " holds no records");
  const int64_t n = static_cast<int64_t>(labels_.size());
  const std::string description = MakeString(source, " (", n, " samples of ", DimsString(chw_),
                                             hwc_ ? ", stored (H, W, C)" : "", ")");
  return std::make_unique<InMemoryDataSource>(std::move(pixels_), std::move(labels_), chw_,
                                              description);
}

std::unique_ptr<DataSource> LoadDBDataset(const std::string& path, const std::string& db_type) {
  std::unique_ptr<db::DB> db = db::OpenDB(db_type, path, db::Mode::READ);
  std::unique_ptr<db::Cursor> cursor = db->NewCursor();
  ImageLabelRecords records;
  for (cursor->SeekToFirst(); cursor->Valid(); cursor->Next()) {
    records.Add(cursor->value(),
                MakeString(db_type, " DB '", path, "', record '", cursor->key(), "'"));
  }
  return records.Finish(MakeString(db_type, " DB '", path, "'"));
}

std::unique_ptr<DataSource> LoadDataSource(const std::string& format, const std::string& path,
                                           const std::string& split, int64_t per_class) {
  if (format == "quickdraw") return LoadQuickDrawDataset(path, split, per_class);
  HALFCAF_ENFORCE(format == "idx" || format == "cifar10" || format == "leveldb" || format == "lmdb",
                  "unknown data format '", format, "' (idx, cifar10, quickdraw, leveldb, lmdb)");
  HALFCAF_ENFORCE(split == "train" && per_class == 0, "data format '", format,
                  "' has no split or per_class (quickdraw has): got split '", split,
                  "', per_class ", per_class, "; give a test set as its own source");
  if (format == "idx") return LoadIdxDataset(path);
  if (format == "cifar10") return LoadCifar10Dataset(path);
  return LoadDBDataset(path, format);
}

std::shared_ptr<const DataSource> LoadDataSourceShared(const std::string& format,
                                                       const std::string& path,
                                                       const std::string& split,
                                                       int64_t per_class) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<const DataSource>> cache;
  const std::string key = MakeString(format, '\n', path, '\n', split, '\n', per_class);
  std::lock_guard<std::mutex> lock(mu);  // two loads of one set never run at once
  if (auto held = cache[key].lock()) return held;
  std::shared_ptr<const DataSource> loaded = LoadDataSource(format, path, split, per_class);
  cache[key] = loaded;
  return loaded;
}

}  // namespace halfcaf
