// DataInput (a halfcaf extension, not a Caffe2 operator): reads training batches from a data set
// on disk (MNIST / Fashion-MNIST idx files, CIFAR-10 binary batches, Quick, Draw! numpy bitmaps,
// Caffe2 DBs) or from a synthetic source.
//
//   outputs  data      float or float16, (N, C, H, W) or (N, H, W, C); N = batch_size
//            label     int32 (N)
//            position  optional, int64 (2): epoch and index in the epoch of the batch's first
//            sample
//   args     source, format ("idx" | "cifar10" | "quickdraw" | "leveldb" | "lmdb" |
//            "synthetic"), split ("train" | "test"; quickdraw), per_class (0 = all; quickdraw),
//            batch_size, shuffle (1), seed, scale (1/255), mean (0), std (1), order ("NCHW"),
//            dtype ("float"; or float16, bfloat16), synthetic_shape (C, H, W), num_classes (10),
//            synthetic_count (1024), prefetch (1), crop (0), pad (0), mirror (0), is_test (0),
//            num_shards (1), shard_id (0)
//
// A pixel p (uint8) becomes (p * scale - mean[c]) / std[c]. The whole data set is loaded once as
// uint8; batches are converted as they are made. Samples are visited in a fresh random order each
// epoch (shuffle=1); epoch e's order depends only on (seed, e). A batch that runs past the end of
// an epoch continues with the first samples of the next one. With prefetch=1 a background thread
// prepares the next batch while the current one is in use; prefetching never changes the batches.
//
// Augmentation (training): each sample is padded by `pad` zero pixels on every side, a random
// crop x crop window is cut from it (crop 0: the padded size, so pad alone gives random shifts),
// and with mirror=1 it is flipped left-right with probability 1/2. The draws of a sample depend
// only on (seed, epoch, position in the epoch), so augmented batches are the same with or without
// prefetch and after a resume. With is_test=1 (evaluation) the window is the centre one (of the
// unpadded image) and nothing is flipped.
//
// Sharding: with num_shards = S, each global batch is S * batch_size consecutive samples of the
// epoch's order and shard i reads slice i of it (shards read disjoint parts of every epoch);
// positions count global samples, so a checkpoint resumes with any number of shards.
//
// Checkpoint / resume: GetState() is the position of the next batch Run() will produce;
// SetState() on a fresh op (same data set and arguments) makes the following batches identical to
// those the saved op would have produced.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/operator.h"
#include "data/dataset_reader.h"
#include "data/reader_state.h"

namespace halfcaf {

class DataInputOp final : public Operator<CPUContext>, public ResumableReader {
 public:
  DataInputOp(const OperatorDef& def, Workspace* ws);
  ~DataInputOp() override;

  void RunOnDevice() override;

  // ResumableReader. SetState drops any prefetched batch.
  DataReaderState GetState() const override;
  void SetState(const DataReaderState& state) override;
  int64_t num_samples() const override;
  int64_t batch_size() const override { return batch_size_; }

  const DataSource& source() const { return *source_; }

 private:
  // A prepared batch: converted data (bytes of the output dtype), labels, and where it starts and
  // where the next batch starts.
  struct Batch {
    std::vector<uint8_t> data;
    std::vector<int32_t> labels;
    DataReaderState start, end;
  };

  void BuildLookupTables(const std::vector<float>& mean, const std::vector<float>& stdev);
  // Fills `batch` with batch_size_ samples starting at `from`. Only one thread calls it at a time.
  void Produce(DataReaderState from, Batch* batch);
  // Index in the data set of the sample at `pos` (epoch order, shuffled or not).
  int64_t SampleAt(int64_t epoch, int64_t pos, uint64_t seed);
  // The augmented sample at `pos` (crop / pad / mirror) from `chw` into `crop_buf_`.
  const uint8_t* Augment(const uint8_t* chw, const DataReaderState& pos, int64_t index);
  // Output sample dims {C, H, W} (after cropping).
  std::vector<int64_t> OutputSampleDims() const;
  template <typename T>
  void Convert(const uint8_t* chw, const T* lut, T* out) const;

  void StartWorker();
  void StopWorker();
  void WorkerLoop();

  // Arguments.
  std::string source_path_, format_;
  int64_t batch_size_;
  bool shuffle_, prefetch_, nhwc_;
  DataType dtype_;
  int64_t crop_, pad_;
  bool mirror_, is_test_;
  int64_t num_shards_, shard_id_;
  bool augment_ = false;  // any of crop / pad / mirror changes the samples
  std::shared_ptr<const DataSource> source_;  // shared with other readers of the same files

  // Per channel: value of each of the 256 pixel levels, in float and in float16.
  std::vector<float> lut_f_;
  std::vector<Half> lut_h_;
  std::vector<BFloat16> lut_b_;

  // Producer side (the worker thread with prefetch, else Run).
  std::vector<uint8_t> sample_buf_, crop_buf_;
  std::vector<int64_t> order_;
  int64_t order_epoch_ = -1;
  uint64_t order_seed_ = 0;
  DataReaderState produce_pos_;

  // Consumer side.
  DataReaderState consume_pos_;
  Batch ready_;

  // Prefetch hand-off: one slot, guarded by mu_.
  std::thread worker_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool slot_full_ = false;
  Batch slot_;
  std::exception_ptr error_;
};

}  // namespace halfcaf
