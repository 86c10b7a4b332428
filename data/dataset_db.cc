// The DataInput source for Caffe2 DBs (leveldb / lmdb) of {image, label} TensorProtos records.
#include <algorithm>
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

std::unique_ptr<DataSource> LoadDBDataset(const std::string& path, const std::string& db_type) {
  std::unique_ptr<db::DB> db = db::OpenDB(db_type, path, db::Mode::READ);
  std::unique_ptr<db::Cursor> cursor = db->NewCursor();
  std::vector<uint8_t> pixels;
  std::vector<int32_t> labels;
  std::vector<int64_t> stored_dims, chw;
  bool hwc = false;
  TensorProtos protos;
  Tensor image, label;
  for (cursor->SeekToFirst(); cursor->Valid(); cursor->Next()) {
    const std::string where = MakeString(db_type, " DB '", path, "', record '", cursor->key(), "'");
    HALFCAF_ENFORCE(protos.ParseFromString(cursor->value()), where, ": not a serialized "
                    "TensorProtos");
    HALFCAF_ENFORCE(protos.protos_size() >= 2, where, ": holds ", protos.protos_size(),
                    " tensor(s); a training record needs an image and a label");
    try {
      TensorFromProto(protos.protos(0), &image);
      TensorFromProto(protos.protos(1), &label);
    } catch (EnforceNotMet& e) {
      e.AddContext(where);
      throw;
    }
    HALFCAF_ENFORCE(image.dtype() == DataType::UINT8 || image.dtype() == DataType::BYTE, where,
                    ": the image (tensor 0) is ", image.DebugString(), "; expected uint8 pixels");
    HALFCAF_ENFORCE(label.numel() == 1 && label.dtype() == DataType::INT32, where,
                    ": the label (tensor 1) is ", label.DebugString(), "; expected one int32");
    if (labels.empty()) {
      stored_dims = image.dims();
      std::tie(chw, hwc) = ImageLayout(stored_dims, where);
    }
    HALFCAF_ENFORCE(image.dims() == stored_dims, where, ": image dims ", DimsString(image.dims()),
                    " differ from the first record's ", DimsString(stored_dims));
    HALFCAF_ENFORCE(label.data<int32_t>()[0] >= 0, where, ": negative label ",
                    label.data<int32_t>()[0]);
    const uint8_t* src = static_cast<const uint8_t*>(image.raw_data());
    const int64_t C = chw[0], HW = chw[1] * chw[2];
    const size_t at = pixels.size();
    pixels.resize(at + static_cast<size_t>(C * HW));
    uint8_t* dst = pixels.data() + at;
    if (!hwc) {
      std::copy(src, src + C * HW, dst);
    } else {
      for (int64_t p = 0; p < HW; ++p) {
        for (int64_t c = 0; c < C; ++c) dst[c * HW + p] = src[p * C + c];
      }
    }
    labels.push_back(label.data<int32_t>()[0]);
  }
  HALFCAF_ENFORCE(!labels.empty(), db_type, " DB '", path, "' holds no records");
  const int64_t n = static_cast<int64_t>(labels.size());
  return std::make_unique<InMemoryDataSource>(
      std::move(pixels), std::move(labels), chw,
      MakeString(db_type, " DB '", path, "' (", n, " samples of ", DimsString(chw),
                 hwc ? ", stored (H, W, C)" : "", ")"));
}

std::unique_ptr<DataSource> LoadDataSource(const std::string& format, const std::string& path) {
  if (format == "idx") return LoadIdxDataset(path);
  if (format == "cifar10") return LoadCifar10Dataset(path);
  HALFCAF_ENFORCE(format == "leveldb" || format == "lmdb", "unknown data format '", format,
                  "' (idx, cifar10, leveldb, lmdb)");
  return LoadDBDataset(path, format);
}

}  // namespace halfcaf
