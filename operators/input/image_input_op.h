// ImageInput (Caffe2's image reader, the input of its ImageNet / ResNet-50 nets): reads
// batch_size records from a DB, decodes the images, resizes, crops, mirrors and normalizes them.
//
//   input    0 (optional): a DBReader blob (CreateDB). Without an input the op opens its own
//            reader from the args db, db_type ("leveldb"), num_shards (1), shard_id (0).
//   outputs  data   float (N, crop, crop, C) NHWC; with use_gpu_transform (N, C, crop, crop) NCHW
//                   of output_type (float or float16)
//            label  int32 (N)
//   records  a serialized TensorProtos: protos(0) the image, either STRING with the encoded JPEG or
//            PNG file in string_data(0) (what make_image_db writes), or BYTE with raw 8-bit pixels,
//            dims (H, W) or (H, W, C) with C = 1 or 3 (BGR order; make_mnist_db's records fit);
//            protos(1) the label, INT32 with one value. With use_caffe_datum = 1 a record is a
//            Caffe Datum instead (Caffe's convert_imageset LMDBs): encoded = true and the JPEG /
//            PNG file in `data`, or raw pixels (C, H, W) channel-major BGR in `data`; `label`.
//
// Per image: decode to C = 3 channels in BGR order (color = 1, the order Caffe2 gets from
// OpenCV, so mean_per_channel / std_per_channel are given as B, G, R) or to one grey channel
// (color = 0); resize (bilinear) so the shorter side is `scale` (both sides with warp = 1), or,
// with `minsize` instead of `scale`, only enlarge images whose shorter side is below minsize;
// crop crop x crop, at a random position and mirrored left-right with probability 1/2 when
// mirror = 1 in training (is_test = 0), centred and never mirrored with is_test = 1; then
// value = (pixel - mean[c]) * (1 / std[c]). Random positions and mirroring come from the op's
// random generator (device_option.random_seed), drawn in record order, so a seeded run is
// repeatable whatever decode_threads is. Records are read in DB order, wrapping at the end.
//
// Prefetching (as Caffe2): after each run a background thread reads, decodes and crops the next
// batch (decode_threads threads) while the net runs; no_prefetch = 1 does it when the op runs.
// The batches are the same either way, random draws included (a prefetched batch draws from a
// copy of the op's generator, which takes the copy's state when the batch is consumed). An error
// in a record is raised by the run that consumes its batch. The worker holds the DB reader only
// while it reads; a batch prefetched from a reader that input 0 no longer holds (CreateDB ran
// again) is dropped and the run reads the new reader.
//
// The host side (reading, decoding, cropping, prefetching) is ImageBatchLoader, shared with the
// CUDA op (image_input_op_gpu.cc), which copies the batch to the GPU when it runs and, with
// use_gpu_transform, normalizes it there.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/operator.h"
#include "data/db.h"
#include "data/image_codec.h"
#include "data/prefetcher.h"

namespace halfcaf {

// ImageInput's arguments, checked (every bad value throws naming the argument).
struct ImageInputConfig {
  int64_t batch_size = 0;
  int crop = 0;
  int scale = -1;    // > 0: the shorter side becomes scale
  int minsize = -1;  // > 0 (scale not given): images smaller than this are enlarged
  bool warp = false, mirror = false, is_test = false;
  bool caffe_datum = false;           // records are Caffe Datum messages, not TensorProtos
  int channels = 3;                   // color ? 3 : 1
  std::vector<float> mean, inv_std;   // per output channel
  bool gpu_transform = false;         // NCHW output of output_type
  DataType output_type = DataType::FLOAT;
  int decode_threads = 4;
  bool prefetch = true;               // !no_prefetch

  // `has_input`: the op has a DBReader input (else it needs the arg `db`).
  static ImageInputConfig Parse(const ArgumentHelper& args, bool has_input);
  // (N, crop, crop, C), or (N, C, crop, crop) with the GPU transform.
  std::vector<int64_t> DataDims() const;
  DataType OutputDataType() const { return gpu_transform ? output_type : DataType::FLOAT; }
};

// A fixed set of worker threads that run the items of a batch in parallel with the caller.
class DecodePool {
 public:
  explicit DecodePool(int threads);
  ~DecodePool();
  DecodePool(const DecodePool&) = delete;
  DecodePool& operator=(const DecodePool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls fn(item, thread) for every item in [0, n), thread in [0, threads()); returns when all
  // are done. fn must not throw.
  void Run(int n, const std::function<void(int, int)>& fn);

 private:
  void WorkerLoop(int thread);
  void Work(int thread);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int, int)>* fn_ = nullptr;
  int n_ = 0, next_ = 0, busy_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

// One batch prepared on the host.
struct ImageBatch {
  std::mt19937 rng;             // the op's generator, advanced past this batch's draws
  std::vector<uint8_t> pixels;  // the crops, uint8 (N, crop, crop, C)
  Tensor labels;                // int32 (N)
  Tensor data;                  // output 0's values, when normalized on the host
};

// Reads, decodes and crops batches on the host, one batch ahead on a background thread (the part
// the CPU and CUDA ops share). Per run: r = Reader(op); b = Next(r); copy b to the outputs;
// Ahead(r).
class ImageBatchLoader {
 public:
  // Parses the op's arguments; opens the op's own DB reader when it has no input. `rng` is the
  // op's generator. With `device_transform` (CUDA) and use_gpu_transform the op normalizes the
  // crops itself; else each batch's `data` is normalized on the host.
  ImageBatchLoader(const OperatorBase& op, std::mt19937* rng, bool device_transform);
  ~ImageBatchLoader();

  const ImageInputConfig& config() const { return cfg_; }
  // The reader to use: input 0's (checked to be a DBReader) or the op's own.
  std::shared_ptr<const db::DBReader> Reader(const OperatorBase& op) const;
  // The next batch from `reader`: the prefetched one, or (none, or prefetched from another reader)
  // read now. Throws naming the record key on any bad record.
  const ImageBatch& Next(const std::shared_ptr<const db::DBReader>& reader);
  // With prefetch, starts preparing the following batch from `reader` in the background. Call it
  // when done with the batch Next returned.
  void Ahead(std::shared_ptr<const db::DBReader> reader) { prefetcher_.Ahead(std::move(reader)); }

 private:
  // Fills batch_ from `reader` (on the prefetch thread, or in Next).
  void Produce(const db::DBReader& reader);
  // Reads batch_size records from `reader` and writes the crops as uint8 (N, crop, crop, C) to
  // `pixels` and the labels to `labels`. Throws naming the record key on any bad record.
  void Load(const db::DBReader& reader, std::mt19937* rng, uint8_t* pixels, int32_t* labels);

  // Scratch for one decoding thread.
  struct ThreadScratch {
    TensorProtos protos;
    Datum datum;
    image::Image decoded, converted;
    std::vector<float> taps;
  };
  // The record's image (decoded / converted to cfg_.channels, in `s`) and its label.
  const image::Image* ParseTensorProtos(const std::string& value, const std::string& where,
                                        ThreadScratch* s, int32_t* label) const;
  const image::Image* ParseDatum(const std::string& value, const std::string& where,
                                 ThreadScratch* s, int32_t* label) const;
  // Raw 8-bit pixels, HWC, into s->converted and then cfg_.channels.
  const image::Image* FromPixels(ThreadScratch* s, int src_channels) const;
  void LoadItem(const db::DBReader& reader, int item, ThreadScratch* s, uint8_t* pixels,
                int32_t* labels);

  ImageInputConfig cfg_;
  std::mt19937* rng_;  // the op's
  bool host_normalize_;
  std::shared_ptr<const db::DBReader> own_reader_;
  DecodePool pool_;
  std::vector<ThreadScratch> scratch_;
  std::vector<std::string> keys_, values_;
  std::vector<uint32_t> draws_;  // per item: y offset, x offset, mirror
  std::vector<std::exception_ptr> errors_;
  ImageBatch batch_;
  BatchPrefetcher<db::DBReader> prefetcher_;  // last: stopped before the rest goes
};

// value = (pixel - mean[c]) * inv_std[c] over (n pixels, channels) uint8 HWC data: to float NHWC,
// or to T (float / Half) NCHW (the layout of the GPU transform).
void NormalizeImagesNHWC(const uint8_t* pixels, int64_t images, int64_t hw, int channels,
                         const std::vector<float>& mean, const std::vector<float>& inv_std,
                         float* out);
template <typename T>
void NormalizeImagesNCHW(const uint8_t* pixels, int64_t images, int64_t hw, int channels,
                         const std::vector<float>& mean, const std::vector<float>& inv_std,
                         T* out);

class ImageInputOp final : public Operator<CPUContext> {
 public:
  ImageInputOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  ImageBatchLoader loader_;
};

}  // namespace halfcaf
