#include "operators/input/data_input_op.h"

#include <cmath>
#include <cstring>
#include <random>

#include "core/gradient.h"

namespace halfcaf {

namespace {

// SplitMix64's finaliser: a well-mixed 64-bit value from any 64-bit input.
uint64_t Mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform integer in [0, n) from a 64-bit engine, by rejection; unlike
// std::uniform_int_distribution its results are the same with every standard library.
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t n) {
  const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
  while (true) {
    const uint64_t r = rng();
    if (r >= threshold) return r % n;
  }
}

// Float list argument given as one float (f) or a list (floats); empty if absent.
std::vector<float> FloatOrFloats(const ArgumentHelper& args, const std::string& name, float dflt) {
  const Argument* a = args.Find(name);
  if (!a) return {dflt};
  if (a->floats_size() > 0) return std::vector<float>(a->floats().begin(), a->floats().end());
  if (a->has_f()) return {a->f()};
  if (a->has_i()) return {static_cast<float>(a->i())};
  HALFCAF_THROW("argument `", name, "` must be a float or a list of floats");
}

DataType OutputDType(const ArgumentHelper& args) {
  DataType t = DataType::FLOAT;
  if (args.HasSingleArgumentOfType<std::string>("dtype")) {
    t = DataTypeFromName(args.GetSingleArgument<std::string>("dtype", "float"));
  } else if (args.HasArgument("dtype")) {
    t = DataTypeFromInt(args.GetSingleArgument<int64_t>("dtype", 1));
  }
  HALFCAF_ENFORCE(t == DataType::FLOAT || t == DataType::FLOAT16 || t == DataType::BFLOAT16,
                  "DataInput: `dtype` must be float, float16 or bfloat16, got ", DataTypeName(t));
  return t;
}

bool IsNHWC(const ArgumentHelper& args) {
  const std::string order = args.GetSingleArgument<std::string>("order", "NCHW");
  HALFCAF_ENFORCE(order == "NCHW" || order == "NHWC",
                  "DataInput: `order` must be NCHW or NHWC, got '", order, "'");
  return order == "NHWC";
}

}  // namespace

DataInputOp::DataInputOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      source_path_(GetSingleArgument<std::string>("source", "")),
      format_(GetSingleArgument<std::string>("format", "")),
      batch_size_(GetSingleArgument<int64_t>("batch_size", 0)),
      shuffle_(GetSingleArgument<bool>("shuffle", true)),
      prefetch_(GetSingleArgument<bool>("prefetch", true)),
      nhwc_(IsNHWC(args_)),
      dtype_(OutputDType(args_)),
      crop_(GetSingleArgument<int64_t>("crop", 0)),
      pad_(GetSingleArgument<int64_t>("pad", 0)),
      mirror_(GetSingleArgument<bool>("mirror", false)),
      is_test_(GetSingleArgument<bool>("is_test", false)),
      num_shards_(GetSingleArgument<int64_t>("num_shards", 1)),
      shard_id_(GetSingleArgument<int64_t>("shard_id", 0)) {
  HALFCAF_ENFORCE(batch_size_ > 0, "DataInput: `batch_size` must be > 0, got ", batch_size_);
  HALFCAF_ENFORCE(num_shards_ >= 1 && shard_id_ >= 0 && shard_id_ < num_shards_,
                  "DataInput: expected num_shards >= 1 and 0 <= shard_id < num_shards, got "
                  "num_shards ", num_shards_, ", shard_id ", shard_id_);
  HALFCAF_ENFORCE(crop_ >= 0, "DataInput: `crop` must be >= 0 (0: no crop), got ", crop_);
  HALFCAF_ENFORCE(pad_ >= 0, "DataInput: `pad` must be >= 0, got ", pad_);
  uint64_t seed = 0;
  if (HasArgument("seed")) {
    seed = static_cast<uint64_t>(GetSingleArgument<int64_t>("seed", 0));
  } else if (def.device_option().has_random_seed()) {
    seed = def.device_option().random_seed();
  } else {
    seed = NextSeed();
  }
  produce_pos_.seed = consume_pos_.seed = seed;

  if (format_ == "synthetic") {
    const auto shape = GetRepeatedArgument<int64_t>("synthetic_shape");
    HALFCAF_ENFORCE(shape.size() == 3,
                    "DataInput: format synthetic needs `synthetic_shape` = 3 ints (C, H, W), got ",
                    DimsString(shape));
    const int num_classes = GetSingleArgument<int>("num_classes", 10);
    const int64_t count = GetSingleArgument<int64_t>("synthetic_count", 1024);
    source_ = MakeSyntheticDataset(shape, num_classes, count, seed);
  } else {
    HALFCAF_ENFORCE(format_ == "idx" || format_ == "cifar10" || format_ == "quickdraw" ||
                        format_ == "leveldb" || format_ == "lmdb",
                    "DataInput: `format` must be idx, cifar10, quickdraw, leveldb, lmdb or "
                    "synthetic, got '", format_, "'");
    HALFCAF_ENFORCE(!source_path_.empty(), "DataInput: format ", format_, " needs a `source` path");
    const std::string split = GetSingleArgument<std::string>("split", "train");
    const int64_t per_class = GetSingleArgument<int64_t>("per_class", 0);
    HALFCAF_ENFORCE(format_ == "quickdraw" || (!HasArgument("split") && !HasArgument("per_class")),
                    "DataInput: `split` and `per_class` are for format quickdraw; format ",
                    format_, " reads the whole `source` (give a test set as its own source)");
    source_ = LoadDataSourceShared(format_, source_path_, split, per_class);
  }
  HALFCAF_ENFORCE(source_->size() > 0, "DataInput: ", source_->description(), " is empty");

  const float scale = GetSingleArgument<float>("scale", 1.f / 255.f);
  std::vector<float> mean = FloatOrFloats(args_, "mean", 0.f);
  std::vector<float> stdev = FloatOrFloats(args_, "std", 1.f);
  const size_t channels = static_cast<size_t>(source_->sample_dims()[0]);
  for (auto* v : {&mean, &stdev}) {
    HALFCAF_ENFORCE(v->size() == 1 || v->size() == channels, "DataInput: `",
                    v == &mean ? "mean" : "std", "` needs 1 or ", channels,
                    " (one per channel) values, got ", v->size());
    if (v->size() == 1) v->assign(channels, v->front());
  }
  for (float s : stdev) {
    HALFCAF_ENFORCE(s != 0.f && std::isfinite(s),
                    "DataInput: `std` must be finite and non-zero, got ", s);
  }
  lut_f_.resize(channels * 256);
  for (size_t c = 0; c < channels; ++c) {
    for (int p = 0; p < 256; ++p) lut_f_[c * 256 + p] = (p * scale - mean[c]) / stdev[c];
  }
  lut_h_.resize(lut_f_.size());
  FloatToHalfArray(lut_f_.data(), lut_h_.data(), lut_f_.size());
  lut_b_.resize(lut_f_.size());
  FloatToBFloat16Array(lut_f_.data(), lut_b_.data(), lut_f_.size());
  sample_buf_.resize(static_cast<size_t>(source_->sample_numel()));
  const auto& d = source_->sample_dims();
  if (crop_ > 0) {
    HALFCAF_ENFORCE(crop_ <= d[1] + 2 * pad_ && crop_ <= d[2] + 2 * pad_, "DataInput: `crop` ",
                    crop_, " is larger than the ", d[1], "x", d[2], " samples of ",
                    source_->description(), pad_ > 0 ? MakeString(" padded by ", pad_) : "");
  }
  augment_ = pad_ > 0 || mirror_ || (crop_ > 0 && (crop_ != d[1] || crop_ != d[2]));
  if (augment_) {
    const auto out = OutputSampleDims();
    crop_buf_.resize(static_cast<size_t>(out[0] * out[1] * out[2]));
  }
}

std::vector<int64_t> DataInputOp::OutputSampleDims() const {
  const auto& d = source_->sample_dims();
  if (crop_ == 0) return d;
  return {d[0], crop_, crop_};
}

const uint8_t* DataInputOp::Augment(const uint8_t* chw, const DataReaderState& pos,
                                    int64_t index) {
  const auto& d = source_->sample_dims();
  const int64_t channels = d[0], h = d[1], w = d[2];
  const auto out = OutputSampleDims();
  const int64_t ch = out[1], cw = out[2];
  // The window's top-left corner in the padded image, and the flip.
  const int64_t room_y = h + 2 * pad_ - ch, room_x = w + 2 * pad_ - cw;
  int64_t y0 = room_y / 2, x0 = room_x / 2;
  bool flip = false;
  if (!is_test_) {
    const uint64_t r = Mix64(Mix64(Mix64(pos.seed) ^ static_cast<uint64_t>(pos.epoch)) ^
                             static_cast<uint64_t>(index));
    y0 = static_cast<int64_t>((r & 0xffffff) % static_cast<uint64_t>(room_y + 1));
    x0 = static_cast<int64_t>(((r >> 24) & 0xffffff) % static_cast<uint64_t>(room_x + 1));
    flip = mirror_ && ((r >> 63) & 1);
  }
  uint8_t* dst = crop_buf_.data();
  for (int64_t c = 0; c < channels; ++c) {
    const uint8_t* plane = chw + c * h * w;
    for (int64_t y = 0; y < ch; ++y) {
      const int64_t sy = y0 + y - pad_;
      for (int64_t x = 0; x < cw; ++x) {
        const int64_t sx = x0 + (flip ? cw - 1 - x : x) - pad_;
        *dst++ = (sy >= 0 && sy < h && sx >= 0 && sx < w) ? plane[sy * w + sx] : 0;
      }
    }
  }
  return crop_buf_.data();
}

DataInputOp::~DataInputOp() { StopWorker(); }

DataReaderState DataInputOp::GetState() const { return consume_pos_; }

int64_t DataInputOp::num_samples() const { return source_->size(); }

void DataInputOp::SetState(const DataReaderState& state) {
  HALFCAF_ENFORCE(state.epoch >= 0 && state.index >= 0 && state.index <= source_->size(),
                  "DataInput: bad state (epoch ", state.epoch, ", index ", state.index,
                  "): the index must be in [0, ", source_->size(), "] for ",
                  source_->description());
  StopWorker();
  produce_pos_ = consume_pos_ = state;
}

int64_t DataInputOp::SampleAt(int64_t epoch, int64_t pos, uint64_t seed) {
  if (!shuffle_) return pos;
  if (order_epoch_ != epoch || order_seed_ != seed || order_.empty()) {
    const int64_t n = source_->size();
    order_.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order_[i] = i;
    std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                      static_cast<uint32_t>(epoch), static_cast<uint32_t>(epoch >> 32)};
    std::mt19937_64 rng(seq);
    for (int64_t i = n - 1; i > 0; --i) {
      std::swap(order_[i], order_[UniformBelow(rng, static_cast<uint64_t>(i) + 1)]);
    }
    order_epoch_ = epoch;
    order_seed_ = seed;
  }
  return order_[static_cast<size_t>(pos)];
}

template <typename T>
void DataInputOp::Convert(const uint8_t* chw, const T* lut, T* out) const {
  const auto d = OutputSampleDims();
  const int64_t channels = d[0], hw = d[1] * d[2];
  if (!nhwc_) {
    for (int64_t c = 0; c < channels; ++c) {
      const T* l = lut + c * 256;
      const uint8_t* in = chw + c * hw;
      T* o = out + c * hw;
      for (int64_t k = 0; k < hw; ++k) o[k] = l[in[k]];
    }
  } else {
    for (int64_t c = 0; c < channels; ++c) {
      const T* l = lut + c * 256;
      const uint8_t* in = chw + c * hw;
      for (int64_t k = 0; k < hw; ++k) out[k * channels + c] = l[in[k]];
    }
  }
}

void DataInputOp::Produce(DataReaderState pos, Batch* batch) {
  const int64_t n = source_->size();
  const auto od = OutputSampleDims();
  const int64_t numel = od[0] * od[1] * od[2];
  const size_t elem = DataTypeSize(dtype_);
  batch->data.resize(static_cast<size_t>(batch_size_ * numel) * elem);
  batch->labels.resize(static_cast<size_t>(batch_size_));
  if (pos.index >= n) {
    ++pos.epoch;
    pos.index = 0;
  }
  batch->start = pos;
  // The global batch is num_shards * batch_size consecutive samples of the epoch's order; this
  // shard takes the shard_id-th slice of it.
  const int64_t first = shard_id_ * batch_size_, last = first + batch_size_;
  for (int64_t k = 0; k < num_shards_ * batch_size_; ++k) {
    if (pos.index >= n) {
      ++pos.epoch;
      pos.index = 0;
    }
    if (k < first || k >= last) {
      ++pos.index;
      continue;
    }
    const int64_t b = k - first;
    const int64_t s = SampleAt(pos.epoch, pos.index, pos.seed);
    source_->ReadSample(s, sample_buf_.data());
    const uint8_t* pixels =
        augment_ ? Augment(sample_buf_.data(), pos, pos.index) : sample_buf_.data();
    ++pos.index;
    batch->labels[b] = source_->Label(s);
    uint8_t* out = batch->data.data() + static_cast<size_t>(b * numel) * elem;
    if (dtype_ == DataType::FLOAT) {
      Convert(pixels, lut_f_.data(), reinterpret_cast<float*>(out));
    } else if (dtype_ == DataType::FLOAT16) {
      Convert(pixels, lut_h_.data(), reinterpret_cast<Half*>(out));
    } else {
      Convert(pixels, lut_b_.data(), reinterpret_cast<BFloat16*>(out));
    }
  }
  if (pos.index >= n) {
    ++pos.epoch;
    pos.index = 0;
  }
  batch->end = pos;
}

void DataInputOp::RunOnDevice() {
  if (prefetch_) {
    if (!worker_.joinable()) StartWorker();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return slot_full_; });
    if (error_) {
      std::exception_ptr e = error_;
      error_ = nullptr;
      slot_full_ = false;
      cv_.notify_all();
      std::rethrow_exception(e);
    }
    std::swap(slot_, ready_);
    slot_full_ = false;
    cv_.notify_all();
  } else {
    Produce(produce_pos_, &ready_);
    produce_pos_ = ready_.end;
  }
  consume_pos_ = ready_.end;

  const auto d = OutputSampleDims();
  std::vector<int64_t> dims = nhwc_ ? std::vector<int64_t>{batch_size_, d[1], d[2], d[0]}
                                    : std::vector<int64_t>{batch_size_, d[0], d[1], d[2]};
  Tensor* data = Output(0, dims);
  std::memcpy(data->raw_mutable_data(dtype_), ready_.data.data(), ready_.data.size());
  Tensor* label = Output(1, {batch_size_});
  std::memcpy(label->mutable_data<int32_t>(), ready_.labels.data(),
              ready_.labels.size() * sizeof(int32_t));
  if (OutputSize() > 2) {
    int64_t* p = Output(2, {2})->mutable_data<int64_t>();
    p[0] = ready_.start.epoch;
    p[1] = ready_.start.index;
  }
}

void DataInputOp::StartWorker() {
  stop_ = false;
  slot_full_ = false;
  error_ = nullptr;
  worker_ = std::thread([this] { WorkerLoop(); });
}

void DataInputOp::StopWorker() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
  stop_ = false;
  slot_full_ = false;
  error_ = nullptr;
}

void DataInputOp::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !slot_full_; });
    if (stop_) return;
    const DataReaderState from = produce_pos_;
    lock.unlock();
    std::exception_ptr err;
    try {
      Produce(from, &slot_);
    } catch (...) {
      err = std::current_exception();
    }
    lock.lock();
    if (err) {
      error_ = err;
    } else {
      produce_pos_ = slot_.end;
    }
    slot_full_ = true;
    cv_.notify_all();
  }
}

namespace {

std::vector<TensorShape> DataInputShapes(const OperatorDef& def, const std::vector<TensorShape>&) {
  ArgumentHelper args(def);
  const int64_t n = args.GetSingleArgument<int64_t>("batch_size", 0);
  const std::string format = args.GetSingleArgument<std::string>("format", "");
  const DataType dtype = OutputDType(args);
  std::vector<int64_t> chw;
  if (format == "synthetic") chw = args.GetRepeatedArgument<int64_t>("synthetic_shape");
  if (format == "cifar10") chw = {3, 32, 32};
  if (format == "quickdraw") chw = {1, 28, 28};
  const int64_t crop = args.GetSingleArgument<int64_t>("crop", 0);
  if (chw.size() == 3 && crop > 0) chw = {chw[0], crop, crop};
  TensorShape data{{}, dtype, true};
  if (chw.size() == 3) {
    data.unknown = false;
    data.dims = IsNHWC(args) ? std::vector<int64_t>{n, chw[1], chw[2], chw[0]}
                             : std::vector<int64_t>{n, chw[0], chw[1], chw[2]};
  }
  return {data, TensorShape{{n}, DataType::INT32}, TensorShape{{2}, DataType::INT64}};
}

}  // namespace

REGISTER_CPU_OPERATOR(DataInput, DataInputOp);
NO_GRADIENT(DataInput);

OPERATOR_SCHEMA(DataInput)
    .NumInputs(0)
    .NumOutputs(2, 3)
    .TensorInferenceFunction(DataInputShapes)
    .CostInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      OpCost c;
      const auto shapes = DataInputShapes(def, in);
      if (!shapes[0].unknown) {
        const double numel = static_cast<double>(shapes[0].numel());
        c.flops = numel;       // one table look-up per value
        c.bytes_read = numel;  // uint8 pixels
        c.bytes_written = numel * DataTypeSize(shapes[0].dtype) + 4.0 * shapes[1].numel();
      }
      return c;
    })
    .SetDoc(
        "halfcaf extension (not in Caffe2): reads training batches from MNIST / Fashion-MNIST "
        "idx files, CIFAR-10 binary batches, Quick, Draw! numpy bitmaps (a folder of "
        "<class>.npy files), Caffe2 LevelDB / LMDB databases of {image, label} TensorProtos "
        "records, or a synthetic source. The data set is loaded into "
        "memory once as uint8; each batch is converted to (pixel * scale - mean) / std. Samples "
        "are visited in a new random order every epoch (shuffle=1), which depends only on the "
        "seed and the epoch number; a batch running past the end of an epoch continues with the "
        "next epoch. With prefetch=1 a background thread prepares the next batch (the batches "
        "are the same as without). Trainers save and restore the exact position through "
        "DataInputOp::GetState/SetState (operators/input/data_input_op.h). File problems (missing, "
        "truncated, wrong magic number, image/label count mismatch) fail when the op is created, "
        "naming the file. Augmentation for training: `pad` zero pixels around each sample, a "
        "random `crop` x `crop` window (crop 0 keeps the sample size, so pad alone shifts it "
        "randomly), and with mirror=1 a left-right flip with probability 1/2; the draws depend "
        "only on (seed, epoch, position), so they survive prefetch and resume. is_test=1 takes "
        "the centre window and never flips (for evaluation). Sharding (multi-process training): with "
        "num_shards = S, the global batch is S * batch_size consecutive samples of the epoch's "
        "order and shard i reads the i-th slice of it, so the shards of one run read disjoint "
        "parts of every epoch, together exactly the batches one reader with S * batch_size "
        "would read; the position (GetState) counts global samples, so a run resumes with any "
        "number of shards.")
    .Output(0, "data", "float or float16 (N, C, H, W), or (N, H, W, C) with order=NHWC")
    .Output(1, "label", "int32 (N): class of each sample")
    .Output(2, "position",
            "optional int64 (2): epoch and index within the epoch of the batch's first sample")
    .Arg("source",
         "string: idx: the images file, e.g. .../train-images-idx3-ubyte.gz (raw or gzipped; the "
         "labels file is found beside it, train-labels-idx1-ubyte[.gz]); cifar10: a batch file, "
         "or a folder (all data_batch_*.bin, else test_batch.bin); quickdraw: the folder of "
         "<class>.npy files (uint8 (N, 784) or (N, 28, 28); labels in file-name order); "
         "leveldb / lmdb: the DB folder or file; unused for synthetic")
    .Arg("format", "string: idx, cifar10, quickdraw, leveldb or lmdb (a Caffe2 DB of {image, "
                   "label} TensorProtos, e.g. from make_mnist_db) or synthetic")
    .Arg("split",
         "string, default train (quickdraw only): train reads each class's first images, test "
         "its last min(1000, N/10), which train never reads; samples interleave the classes")
    .Arg("per_class",
         "int, default 0 (quickdraw only): at most this many images of each class from the split "
         "(0: all of it)")
    .Arg("batch_size", "int, required: N")
    .Arg("shuffle", "int, default 1: visit samples in a new random order each epoch")
    .Arg("seed",
         "int: shuffle (and synthetic data) seed; default: the device option's random_seed, "
         "else the process seed")
    .Arg("scale", "float, default 1/255: pixels are multiplied by it first")
    .Arg("mean", "float or floats (one per channel), default 0: subtracted after scaling")
    .Arg("std", "float or floats (one per channel), default 1: divides after the mean")
    .Arg("order", "string, default NCHW: or NHWC")
    .Arg("dtype", "float (default), float16 or bfloat16 (name or TensorProto enum value)")
    .Arg("synthetic_shape", "ints (C, H, W): sample shape for format synthetic")
    .Arg("num_classes", "int, default 10: labels are 0..num_classes-1 (synthetic)")
    .Arg("synthetic_count", "int, default 1024: samples per epoch (synthetic)")
    .Arg("prefetch", "int, default 1: prepare the next batch on a background thread")
    .Arg("crop", "int, default 0: output samples are crop x crop (0: the samples' own size)")
    .Arg("pad", "int, default 0: zero pixels added on every side before cropping")
    .Arg("mirror", "int, default 0: flip each sample left-right with probability 1/2")
    .Arg("is_test", "int, default 0: centre crop and no flip (evaluation)")
    .Arg("num_shards", "int, default 1: readers sharing each global batch (one per process)")
    .Arg("shard_id", "int, default 0: this reader's slice of the global batch, 0..num_shards-1");

}  // namespace halfcaf
