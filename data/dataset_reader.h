// Data sets for training input (used by the DataInput operator): every source yields samples as
// uint8 pixels in CHW order plus an int32 label. File-backed sets are read into memory once, as
// uint8 (Fashion-MNIST's 60000 28x28 images are 47 MB); conversion to float happens per batch.
//
//   idx      MNIST / Fashion-MNIST: images `<prefix>-images-idx3-ubyte[.gz]` (magic 0x00000803,
//            N x H x W) with labels beside it in `<prefix>-labels-idx1-ubyte[.gz]` (magic
//            0x00000801, N). Gzip-compressed or raw files are both accepted.
//   cifar10  CIFAR-10 binary batches: 3073-byte records (label byte 0..9, then 3 x 32 x 32 pixels
//            in CHW order). A file, or a folder: all data_batch_*.bin in it (the training set),
//            or test_batch.bin when there is no data_batch_*.bin.
//   leveldb / lmdb  a Caffe2 DB of TensorProtos records {image, label} as make_mnist_db writes
//            them (and Caffe2's tutorials read with TensorProtosDBInput): tensor 0 a uint8 image of
//            dims (C, H, W), (H, W, C) or (H, W), tensor 1 an int32 label (one value); read into
//            memory once, in key order (dataset_db.cc).
//   quickdraw  Quick, Draw!'s numpy bitmaps: a folder of <class>.npy files, one per class (at least
//            2), uint8 of shape (N, 784) or (N, 28, 28), 0 = background, 255 = stroke. Labels
//            follow the files' names in sorted order. Split "train" is each class's first images,
//            "test" its last min(1000, N / 10) (held out from "train"); `per_class` caps the
//            images taken per class. Samples interleave the classes (sample i is class
//            i % classes while every class has images left). Only the rows taken are read
//            (dataset_quickdraw.cc, data/npy.h).
//   synthetic  random but learnable samples of a given CHW shape and class count, generated on
//            the fly from (seed, sample index); nothing is held in memory.
//
// Every problem with a file (missing, truncated, wrong magic number, count mismatch, trailing
// bytes, bad label) throws EnforceNotMet naming the file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

class DataSource {
 public:
  virtual ~DataSource() = default;

  int64_t size() const { return size_; }
  // Dims of one sample: {C, H, W}.
  const std::vector<int64_t>& sample_dims() const { return sample_dims_; }
  int64_t sample_numel() const { return sample_dims_[0] * sample_dims_[1] * sample_dims_[2]; }
  // "idx 'path' (60000 samples of [1, 28, 28])": for messages and logs.
  const std::string& description() const { return description_; }

  // Copies sample i (0 <= i < size()) as C*H*W bytes in CHW order. Thread-safe (const).
  virtual void ReadSample(int64_t i, uint8_t* chw) const = 0;
  virtual int32_t Label(int64_t i) const = 0;

 protected:
  int64_t size_ = 0;
  std::vector<int64_t> sample_dims_;
  std::string description_;
};

// A data set held in memory: `pixels` is size * C*H*W bytes, CHW per sample.
class InMemoryDataSource : public DataSource {
 public:
  InMemoryDataSource(std::vector<uint8_t> pixels, std::vector<int32_t> labels,
                     std::vector<int64_t> sample_dims, std::string description);
  void ReadSample(int64_t i, uint8_t* chw) const override;
  int32_t Label(int64_t i) const override { return labels_[static_cast<size_t>(i)]; }
  const uint8_t* sample(int64_t i) const { return pixels_.data() + i * sample_numel(); }

 private:
  std::vector<uint8_t> pixels_;
  std::vector<int32_t> labels_;
};

// The labels file that goes with an idx images file: "train-images-idx3-ubyte.gz" ->
// "train-labels-idx1-ubyte.gz" in the same folder (the raw / .gz variant of the same name is used
// when only that one exists). Throws if the name does not follow the convention.
std::string IdxLabelsPath(const std::string& images_path);

// Loads an idx images file and its labels file (see IdxLabelsPath).
std::unique_ptr<DataSource> LoadIdxDataset(const std::string& images_path);
// Loads an idx images file and the given labels file.
std::unique_ptr<DataSource> LoadIdxDataset(const std::string& images_path,
                                           const std::string& labels_path);

// Loads CIFAR-10 binary batches from a file or a folder (see above).
std::unique_ptr<DataSource> LoadCifar10Dataset(const std::string& path);

// Loads the `split` ("train" or "test") of a Quick, Draw! numpy bitmap folder (see above): at most
// `per_class` images of each class (0: all the split has).
std::unique_ptr<DataSource> LoadQuickDrawDataset(const std::string& folder,
                                                 const std::string& split, int64_t per_class);

// Loads a Caffe2 DB of {image, label} TensorProtos records (see above). `db_type` is "leveldb" or
// "lmdb". The layout of 3-d images is told by which end holds the channels (1, 3 or 4): (C, H, W)
// when the first dim does and the last does not, (H, W, C) the other way round; anything else is
// an error naming the record.
std::unique_ptr<DataSource> LoadDBDataset(const std::string& path, const std::string& db_type);

// {image, label} TensorProtos records (as in a Caffe2 DB, see above) gathered into an in-memory
// data set: what LoadDBDataset does with each record it reads.
class ImageLabelRecords {
 public:
  // Adds one serialized record; `where` names it in errors. Throws on a malformed record, or one
  // whose image dims differ from the first record's.
  void Add(const std::string& value, const std::string& where);
  // The data set; `source` names it (e.g. "leveldb DB '/data/x'"). Throws if no record was added.
  std::unique_ptr<DataSource> Finish(const std::string& source);

 private:
  TensorProtos protos_;
  Tensor image_, label_;
  std::vector<uint8_t> pixels_;
  std::vector<int32_t> labels_;
  std::vector<int64_t> stored_dims_, chw_;
  bool hwc_ = false;
};

// A file-backed data set by format name: idx, cifar10, quickdraw, leveldb or lmdb (not
// synthetic). Throws on any other name. `split` and `per_class` choose the part of a quickdraw
// folder (LoadQuickDrawDataset); other formats have no parts and refuse values other than the
// defaults.
std::unique_ptr<DataSource> LoadDataSource(const std::string& format, const std::string& path,
                                           const std::string& split = "train",
                                           int64_t per_class = 0);
// The same, shared: while any holder keeps the returned set alive, loading the same format, path,
// split and per_class again returns it instead of reading the files a second time (e.g. a trainer
// reading the sample dims, then the DataInput op of the net it builds).
std::shared_ptr<const DataSource> LoadDataSourceShared(const std::string& format,
                                                       const std::string& path,
                                                       const std::string& split = "train",
                                                       int64_t per_class = 0);

// `count` synthetic samples of dims {C, H, W} with labels in [0, num_classes). Each class has a
// random template image; a sample is the mean of its class template and random noise, so a model
// can learn the task. Deterministic in (seed, index).
std::unique_ptr<DataSource> MakeSyntheticDataset(const std::vector<int64_t>& chw, int num_classes,
                                                 int64_t count, uint64_t seed);

// Reads a whole file, transparently gunzipping it when it is gzip-compressed. Throws naming the
// file if it cannot be opened or read (`what` says which kind of file, e.g. "idx images").
std::vector<uint8_t> ReadMaybeGzipFile(const std::string& path, const std::string& what);

}  // namespace halfcaf
