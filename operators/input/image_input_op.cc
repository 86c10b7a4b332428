#include "operators/input/image_input_op.h"

#include <algorithm>
#include <cstring>

#include "core/gradient.h"
#include "core/half.h"
#include "operators/tensor/cast_op.h"

namespace halfcaf {

// ---- arguments ---------------------------------------------------------------------------------

namespace {

// Caffe2 features halfcaf's ImageInput does not implement: refused when asked for, so a net never
// trains silently without the augmentation it specified.
void RefuseUnsupported(const ArgumentHelper& args) {
  for (const char* name : {"color_jitter", "color_lighting", "scale_jitter_type"}) {
    const int v = args.GetSingleArgument<int>(name, 0);
    HALFCAF_ENFORCE(v == 0, "ImageInput: argument '", name, "' = ", v,
                    " is not supported by halfcaf (only 0)");
  }
  const std::vector<int> random_scale = args.GetRepeatedArgument<int>("random_scale", {-1, -1});
  HALFCAF_ENFORCE(random_scale.size() == 2 && random_scale[0] == -1 && random_scale[1] == -1,
                  "ImageInput: argument 'random_scale' = ", DimsString(random_scale),
                  " is not supported by halfcaf (random scaling is not implemented)");
  for (const char* name : {"bounding_ymin", "bounding_xmin", "bounding_height", "bounding_width"}) {
    const int v = args.GetSingleArgument<int>(name, -1);
    HALFCAF_ENFORCE(v < 0, "ImageInput: argument '", name, "' = ", v,
                    " is not supported by halfcaf (bounding boxes are not implemented)");
  }
  HALFCAF_ENFORCE(args.GetRepeatedArgument<int>("output_sizes").empty(),
                  "ImageInput: argument 'output_sizes' is not supported by halfcaf (only the data "
                  "and label outputs)");
}

// mean/std: `per_channel` values (1 or 3) if given, else the scalar; one value for every channel.
std::vector<float> PerChannel(const ArgumentHelper& args, const char* per_channel,
                              const char* scalar, float dflt, int channels) {
  std::vector<float> v = args.GetRepeatedArgument<float>(per_channel, {});
  if (v.empty()) v = {args.GetSingleArgument<float>(scalar, dflt)};
  HALFCAF_ENFORCE(v.size() == 1 || v.size() == 3, "ImageInput: argument '", per_channel,
                  "' must have 1 or 3 values (B, G, R), got ", v.size(), ": ", DimsString(v));
  HALFCAF_ENFORCE(v.size() == 1 || channels == 3 || args.GetSingleArgument<int>("color", 1) == 0,
                  "ImageInput: argument '", per_channel, "' has 3 values for a grey image");
  std::vector<float> out(channels);
  for (int c = 0; c < channels; ++c) out[c] = v.size() == 1 ? v[0] : v[c];
  return out;
}

}  // namespace

ImageInputConfig ImageInputConfig::Parse(const ArgumentHelper& args, bool has_input) {
  ImageInputConfig cfg;
  cfg.batch_size = args.GetSingleArgument<int64_t>("batch_size", 0);
  HALFCAF_ENFORCE(cfg.batch_size > 0, "ImageInput: argument 'batch_size' must be > 0, got ",
                  cfg.batch_size);
  cfg.crop = args.GetSingleArgument<int>("crop", -1);
  HALFCAF_ENFORCE(cfg.crop > 0, "ImageInput: argument 'crop' (the output side) is required and "
                  "must be > 0, got ", cfg.crop);
  cfg.scale = args.GetSingleArgument<int>("scale", -1);
  cfg.minsize = args.GetSingleArgument<int>("minsize", -1);
  HALFCAF_ENFORCE((cfg.scale > 0) != (cfg.minsize > 0),
                  "ImageInput: exactly one of the arguments 'scale' and 'minsize' must be > 0, "
                  "got scale = ", cfg.scale, ", minsize = ", cfg.minsize);
  const int side = cfg.scale > 0 ? cfg.scale : cfg.minsize;
  HALFCAF_ENFORCE(side >= cfg.crop, "ImageInput: argument '", cfg.scale > 0 ? "scale" : "minsize",
                  "' = ", side, " must be >= crop = ", cfg.crop);
  cfg.warp = args.GetSingleArgument<int>("warp", 0) != 0;
  cfg.mirror = args.GetSingleArgument<int>("mirror", 0) != 0;
  cfg.is_test = args.GetSingleArgument<int>("is_test", 0) != 0;
  const int color = args.GetSingleArgument<int>("color", 1);
  HALFCAF_ENFORCE(color == 0 || color == 1,
                  "ImageInput: argument 'color' must be 1 (3 channels, BGR) or 0 (grey), got ",
                  color);
  cfg.channels = color ? 3 : 1;
  const int label_type = args.GetSingleArgument<int>("label_type", 0);
  HALFCAF_ENFORCE(label_type == 0, "ImageInput: argument 'label_type' = ", label_type,
                  " is not supported by halfcaf; only 0 (one int32 label per image)");
  cfg.caffe_datum = args.GetSingleArgument<int>("use_caffe_datum", 0) != 0;
  RefuseUnsupported(args);
  cfg.mean = PerChannel(args, "mean_per_channel", "mean", 0.f, cfg.channels);
  const std::vector<float> stdev = PerChannel(args, "std_per_channel", "std", 1.f, cfg.channels);
  for (float s : stdev) {
    HALFCAF_ENFORCE(s != 0.f, "ImageInput: 'std' / 'std_per_channel' must be non-zero, got ",
                    DimsString(stdev));
    cfg.inv_std.push_back(1.f / s);
  }
  cfg.gpu_transform = args.GetSingleArgument<int>("use_gpu_transform", 0) != 0;
  cfg.output_type = ReadTypeArg(args, "output_type", DataType::FLOAT);
  HALFCAF_ENFORCE(cfg.output_type == DataType::FLOAT || cfg.output_type == DataType::FLOAT16,
                  "ImageInput: argument 'output_type' must be float or float16, got ",
                  DataTypeName(cfg.output_type));
  cfg.prefetch = !args.GetSingleArgument<bool>("no_prefetch", false);
  cfg.decode_threads = args.GetSingleArgument<int>("decode_threads", 4);
  HALFCAF_ENFORCE(cfg.decode_threads >= 1 && cfg.decode_threads <= 256,
                  "ImageInput: argument 'decode_threads' must be in [1, 256], got ",
                  cfg.decode_threads);
  if (!has_input) {
    HALFCAF_ENFORCE(!args.GetSingleArgument<std::string>("db", "").empty(),
                    "ImageInput without a DB reader input needs the argument 'db' (the path of "
                    "the DB; and 'db_type', default leveldb)");
  }
  return cfg;
}

std::vector<int64_t> ImageInputConfig::DataDims() const {
  if (gpu_transform) return {batch_size, channels, crop, crop};
  return {batch_size, crop, crop, channels};
}

// ---- DecodePool --------------------------------------------------------------------------------

DecodePool::DecodePool(int threads) {
  for (int t = 1; t < threads; ++t) workers_.emplace_back([this, t] { WorkerLoop(t); });
}

DecodePool::~DecodePool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& w : workers_) w.join();
}

void DecodePool::Work(int thread) {
  for (;;) {
    int item;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_ >= n_) return;
      item = next_++;
    }
    (*fn_)(item, thread);
  }
}

void DecodePool::WorkerLoop(int thread) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    Work(thread);
    std::lock_guard<std::mutex> lock(mu_);
    if (--busy_ == 0) done_cv_.notify_one();
  }
}

void DecodePool::Run(int n, const std::function<void(int, int)>& fn) {
  if (workers_.empty() || n <= 1) {
    for (int i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    next_ = 0;
    busy_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  Work(0);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return busy_ == 0; });
  fn_ = nullptr;
}

// ---- ImageBatchLoader --------------------------------------------------------------------------

namespace {

bool AnyCodec() {
  return image::FormatAvailable(image::Format::JPEG) || image::FormatAvailable(image::Format::PNG);
}

}  // namespace

ImageBatchLoader::ImageBatchLoader(const OperatorBase& op, std::mt19937* rng,
                                   bool device_transform)
    : cfg_(ImageInputConfig::Parse(ArgumentHelper(op.def()), op.InputSize() > 0)),
      rng_(rng),
      host_normalize_(!(device_transform && cfg_.gpu_transform)),
      pool_(static_cast<int>(std::min<int64_t>(cfg_.decode_threads, cfg_.batch_size))),
      prefetcher_(cfg_.prefetch,
                  {[this] { batch_.rng = *rng_; },
                   [this](const std::shared_ptr<const db::DBReader>& r) { Produce(*r); },
                   [this] { *rng_ = batch_.rng; }},
                  op.DebugName()) {
  HALFCAF_ENFORCE(AnyCodec(), "ImageInput: this build cannot decode images: ",
                  image::MissingFormatHint(image::Format::JPEG), "; for PNG also ",
                  image::MissingFormatHint(image::Format::PNG));
  if (op.InputSize() == 0) {
    try {
      own_reader_ = std::make_shared<const db::DBReader>(
          op.GetSingleArgument<std::string>("db_type", "leveldb"),
          op.GetSingleArgument<std::string>("db", ""), op.GetSingleArgument<int>("num_shards", 1),
          op.GetSingleArgument<int>("shard_id", 0));
    } catch (EnforceNotMet& e) {
      e.AddContext("ImageInput opening its own DB reader (args db, db_type, num_shards, "
                   "shard_id)");
      throw;
    }
  }
  scratch_.resize(static_cast<size_t>(pool_.threads()));
  keys_.resize(cfg_.batch_size);
  values_.resize(cfg_.batch_size);
  draws_.resize(cfg_.batch_size * 3);
  errors_.resize(cfg_.batch_size);
}

ImageBatchLoader::~ImageBatchLoader() { prefetcher_.Stop(); }

std::shared_ptr<const db::DBReader> ImageBatchLoader::Reader(const OperatorBase& op) const {
  if (op.InputSize() == 0) return own_reader_;
  const Blob& blob = op.InputBlob(0);
  HALFCAF_ENFORCE(blob.IsType<db::DBReader>(), "ImageInput: input 0 '", op.input_name(0),
                  "' is not a DB reader (make one with CreateDB); it holds ",
                  blob.empty() ? "nothing" : (blob.IsTensor() ? "a tensor" : "another object"));
  return blob.GetShared<db::DBReader>();
}

const ImageBatch& ImageBatchLoader::Next(const std::shared_ptr<const db::DBReader>& reader) {
  prefetcher_.Next(reader);
  return batch_;
}

void ImageBatchLoader::Produce(const db::DBReader& reader) {
  const int64_t hw = static_cast<int64_t>(cfg_.crop) * cfg_.crop;
  batch_.pixels.resize(static_cast<size_t>(cfg_.batch_size * hw * cfg_.channels));
  batch_.labels.Resize({cfg_.batch_size});
  Load(reader, &batch_.rng, batch_.pixels.data(), batch_.labels.mutable_data<int32_t>());
  if (!host_normalize_) return;
  batch_.data.Resize(cfg_.DataDims());
  const uint8_t* pixels = batch_.pixels.data();
  if (!cfg_.gpu_transform) {
    NormalizeImagesNHWC(pixels, cfg_.batch_size, hw, cfg_.channels, cfg_.mean, cfg_.inv_std,
                        batch_.data.mutable_data<float>());
  } else if (cfg_.output_type == DataType::FLOAT) {
    NormalizeImagesNCHW(pixels, cfg_.batch_size, hw, cfg_.channels, cfg_.mean, cfg_.inv_std,
                        batch_.data.mutable_data<float>());
  } else {
    NormalizeImagesNCHW(pixels, cfg_.batch_size, hw, cfg_.channels, cfg_.mean, cfg_.inv_std,
                        batch_.data.mutable_data<Half>());
  }
}

void ImageBatchLoader::Load(const db::DBReader& reader, std::mt19937* rng, uint8_t* pixels,
                            int32_t* labels) {
  const int n = static_cast<int>(cfg_.batch_size);
  for (int i = 0; i < n; ++i) reader.Read(&keys_[i], &values_[i]);
  // Random numbers in record order, before the parallel part: the result does not depend on
  // which thread decodes which image.
  if (!cfg_.is_test) {
    for (auto& d : draws_) d = static_cast<uint32_t>((*rng)());
  }
  std::fill(errors_.begin(), errors_.end(), nullptr);
  pool_.Run(n, [&](int item, int thread) {
    try {
      LoadItem(reader, item, &scratch_[thread], pixels, labels);
    } catch (...) {
      errors_[item] = std::current_exception();
    }
  });
  for (const auto& e : errors_) {
    if (e) std::rethrow_exception(e);
  }
}

const image::Image* ImageBatchLoader::FromPixels(ThreadScratch* s, int src_channels) const {
  s->converted.channels = src_channels;
  if (src_channels == cfg_.channels) return &s->converted;
  image::ConvertChannels(s->converted, cfg_.channels, &s->decoded);
  return &s->decoded;
}

const image::Image* ImageBatchLoader::ParseTensorProtos(const std::string& value,
                                                        const std::string& where,
                                                        ThreadScratch* s, int32_t* label) const {
  HALFCAF_ENFORCE(s->protos.ParseFromString(value), where, " is not a serialized TensorProtos (",
                  value.size(), " bytes that do not parse; a Caffe Datum record needs "
                  "use_caffe_datum=1)");
  HALFCAF_ENFORCE(s->protos.protos_size() >= 2, where, " holds ", s->protos.protos_size(),
                  " tensor(s); ImageInput needs 2: the image and its label");
  const TensorProto& img = s->protos.protos(0);
  const TensorProto& lab = s->protos.protos(1);
  HALFCAF_ENFORCE(lab.data_type() == TensorProto::INT32 && lab.int32_data_size() == 1, where,
                  ": tensor 1 (the label) must be INT32 with one value, got ",
                  DataTypeName(static_cast<DataType>(lab.data_type())), " with ",
                  lab.int32_data_size(), " int32 value(s)");
  *label = lab.int32_data(0);
  if (img.data_type() == TensorProto::STRING) {
    HALFCAF_ENFORCE(img.string_data_size() == 1, where,
                    ": tensor 0 (the encoded image) must hold one string, got ",
                    img.string_data_size());
    const std::string& bytes = img.string_data(0);
    image::Decode(bytes.data(), bytes.size(), cfg_.channels, &s->decoded);
    return &s->decoded;
  }
  HALFCAF_ENFORCE(img.data_type() == TensorProto::BYTE, where, ": tensor 0 (the image) has type ",
                  DataTypeName(static_cast<DataType>(img.data_type())),
                  "; ImageInput reads STRING (an encoded JPEG or PNG file) or BYTE (raw pixels)");
  const int nd = img.dims_size();
  const int64_t src_c = nd == 3 ? img.dims(2) : 1;
  HALFCAF_ENFORCE((nd == 2 || nd == 3) && (src_c == 1 || src_c == 3) && img.dims(0) > 0 &&
                      img.dims(1) > 0,
                  where, ": tensor 0 (raw pixels) must have dims (H, W) or (H, W, C) with C "
                  "1 or 3, got ",
                  DimsString(std::vector<int64_t>(img.dims().begin(), img.dims().end())));
  const int64_t h = img.dims(0), w = img.dims(1);
  HALFCAF_ENFORCE(static_cast<int64_t>(img.byte_data().size()) == h * w * src_c, where,
                  ": tensor 0 has ", img.byte_data().size(), " bytes, expected ", h, " x ", w,
                  " x ", src_c);
  s->converted.height = static_cast<int>(h);
  s->converted.width = static_cast<int>(w);
  s->converted.pixels.assign(img.byte_data().begin(), img.byte_data().end());
  return FromPixels(s, static_cast<int>(src_c));
}

const image::Image* ImageBatchLoader::ParseDatum(const std::string& value,
                                                 const std::string& where, ThreadScratch* s,
                                                 int32_t* label) const {
  Datum& d = s->datum;
  HALFCAF_ENFORCE(d.ParseFromString(value), where, " is not a serialized Caffe Datum (",
                  value.size(), " bytes that do not parse; use_caffe_datum=1 reads Datum "
                  "records)");
  *label = d.label();
  HALFCAF_ENFORCE(d.float_data_size() == 0, where, ": a Datum with float_data (",
                  d.float_data_size(), " floats) is not an image; ImageInput reads 8-bit "
                  "pixels or an encoded file in `data`");
  const std::string& bytes = d.data();
  if (d.encoded()) {
    image::Decode(bytes.data(), bytes.size(), cfg_.channels, &s->decoded);
    return &s->decoded;
  }
  const int64_t c = d.channels(), h = d.height(), w = d.width();
  HALFCAF_ENFORCE((c == 1 || c == 3) && h > 0 && w > 0, where, ": a raw Datum needs channels "
                  "1 or 3 and a positive height and width, got channels ", c, ", height ", h,
                  ", width ", w);
  HALFCAF_ENFORCE(static_cast<int64_t>(bytes.size()) == c * h * w, where, ": the Datum has ",
                  bytes.size(), " bytes of data, expected ", c, " x ", h, " x ", w);
  // Channel-major (C, H, W) -> interleaved (H, W, C).
  s->converted.height = static_cast<int>(h);
  s->converted.width = static_cast<int>(w);
  s->converted.pixels.resize(static_cast<size_t>(c * h * w));
  const auto* src = reinterpret_cast<const uint8_t*>(bytes.data());
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t i = 0; i < h * w; ++i) s->converted.pixels[i * c + ch] = src[ch * h * w + i];
  }
  return FromPixels(s, static_cast<int>(c));
}

void ImageBatchLoader::LoadItem(const db::DBReader& reader, int item, ThreadScratch* s,
                                uint8_t* pixels, int32_t* labels) {
  const std::string where =
      MakeString("ImageInput: record '", keys_[item], "' of ", reader.Describe());
  const image::Image* src = nullptr;
  try {
    src = cfg_.caffe_datum ? ParseDatum(values_[item], where, s, &labels[item])
                           : ParseTensorProtos(values_[item], where, s, &labels[item]);
  } catch (EnforceNotMet& e) {
    if (std::string(e.what()).find(where) == std::string::npos) e.AddContext(where);
    throw;
  }
  const int C = cfg_.channels;

  // Resize (as Caffe2: always to `scale`; with `minsize`, only to enlarge).
  const int h = src->height, w = src->width;
  int sh = h, sw = w;
  if (cfg_.scale > 0) {
    image::ScaledSize(h, w, cfg_.scale, cfg_.warp, &sh, &sw);
  } else {
    int mh, mw;
    image::ScaledSize(h, w, cfg_.minsize, cfg_.warp, &mh, &mw);
    if (mh > h || mw > w) {
      sh = mh;
      sw = mw;
    }
  }
  HALFCAF_ENFORCE(sh >= cfg_.crop && sw >= cfg_.crop, where, ": the image is ", h, " x ", w,
                  (sh != h || sw != w) ? MakeString(", resized to ", sh, " x ", sw) : "",
                  ", smaller than crop = ", cfg_.crop);

  // Crop window and mirroring.
  int y0, x0;
  bool flip = false;
  if (cfg_.is_test) {
    y0 = (sh - cfg_.crop) / 2;
    x0 = (sw - cfg_.crop) / 2;
  } else {
    const uint32_t* d = &draws_[static_cast<size_t>(item) * 3];
    y0 = static_cast<int>((static_cast<uint64_t>(d[0]) * (sh - cfg_.crop + 1)) >> 32);
    x0 = static_cast<int>((static_cast<uint64_t>(d[1]) * (sw - cfg_.crop + 1)) >> 32);
    flip = cfg_.mirror && (d[2] >> 31) != 0;
  }
  uint8_t* dst = pixels + static_cast<size_t>(item) * cfg_.crop * cfg_.crop * C;
  image::ResizeWindow(*src, sh, sw, y0, x0, cfg_.crop, cfg_.crop, flip, dst, &s->taps);
}

// ---- normalization -----------------------------------------------------------------------------

void NormalizeImagesNHWC(const uint8_t* pixels, int64_t images, int64_t hw, int channels,
                         const std::vector<float>& mean, const std::vector<float>& inv_std,
                         float* out) {
  const int64_t n = images * hw;
  for (int64_t p = 0; p < n; ++p) {
    for (int c = 0; c < channels; ++c) {
      const int64_t i = p * channels + c;
      out[i] = (static_cast<float>(pixels[i]) - mean[c]) * inv_std[c];
    }
  }
}

template <typename T>
void NormalizeImagesNCHW(const uint8_t* pixels, int64_t images, int64_t hw, int channels,
                         const std::vector<float>& mean, const std::vector<float>& inv_std,
                         T* out) {
  for (int64_t n = 0; n < images; ++n) {
    const uint8_t* src = pixels + n * hw * channels;
    for (int c = 0; c < channels; ++c) {
      T* dst = out + (n * channels + c) * hw;
      for (int64_t p = 0; p < hw; ++p) {
        dst[p] = static_cast<T>((static_cast<float>(src[p * channels + c]) - mean[c]) *
                                inv_std[c]);
      }
    }
  }
}

template void NormalizeImagesNCHW<float>(const uint8_t*, int64_t, int64_t, int,
                                         const std::vector<float>&, const std::vector<float>&,
                                         float*);
template void NormalizeImagesNCHW<Half>(const uint8_t*, int64_t, int64_t, int,
                                        const std::vector<float>&, const std::vector<float>&,
                                        Half*);

// ---- ImageInput (CPU) --------------------------------------------------------------------------

ImageInputOp::ImageInputOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), loader_(*this, &context_.RandGenerator(), /*device_transform=*/false) {}

void ImageInputOp::RunOnDevice() {
  const std::shared_ptr<const db::DBReader> reader = loader_.Reader(*this);
  const ImageBatch& batch = loader_.Next(reader);
  Output(0)->CopyFrom(batch.data);
  Output(1)->CopyFrom(batch.labels);
  loader_.Ahead(reader);
}

REGISTER_CPU_OPERATOR(ImageInput, ImageInputOp);
NO_GRADIENT(ImageInput);

namespace {

std::vector<TensorShape> ImageInputShapes(const OperatorDef& def,
                                          const std::vector<TensorShape>& in) {
  std::vector<TensorShape> out(2);
  try {
    const ImageInputConfig cfg = ImageInputConfig::Parse(ArgumentHelper(def), !in.empty());
    out[0].dims = cfg.DataDims();
    out[0].dtype = cfg.OutputDataType();
    out[1].dims = {cfg.batch_size};
    out[1].dtype = DataType::INT32;
  } catch (const EnforceNotMet&) {
    // Bad arguments are reported when the op is created; nothing can be inferred here.
    out[0].unknown = out[1].unknown = true;
  }
  return out;
}

}  // namespace

OPERATOR_SCHEMA(ImageInput)
    .NumInputs(0, 1)
    .NumOutputs(2)
    .TensorInferenceFunction(ImageInputShapes)
    .CostInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      OpCost c;
      const auto shapes = ImageInputShapes(def, in);
      if (!shapes[0].unknown) {
        const double numel = static_cast<double>(shapes[0].numel());
        c.flops = 10 * numel;  // bilinear resampling and normalization per output value
        c.bytes_written = numel * DataTypeSize(shapes[0].dtype) + 4.0 * shapes[1].numel();
      }
      return c;
    })
    .SetDoc(
        "Caffe2's image reader: reads batch_size records from a DB (input 0, a DB reader made by "
        "CreateDB; or, without an input, its own reader from the arguments db, db_type, "
        "num_shards, shard_id), decodes, resizes, crops and normalizes the images. Each record "
        "is a serialized TensorProtos: tensor 0 the image, a STRING holding an encoded JPEG or "
        "PNG file (as make_image_db writes) or BYTE raw pixels with dims (H, W) or (H, W, C); "
        "tensor 1 the label, INT32 with one value; with use_caffe_datum = 1 a Caffe Datum (an "
        "encoded file, or raw channel-major pixels, and its label), as in Caffe's "
        "convert_imageset DBs. Images are decoded to 3 channels in BGR "
        "order (color = 1, as Caffe2 via OpenCV; mean_per_channel and std_per_channel are B, G, "
        "R) or to grey (color = 0; Y = 0.299 R + 0.587 G + 0.114 B). Each image is resized "
        "(bilinear) so its shorter side is `scale` (both sides with warp), or, given `minsize` "
        "instead, enlarged only when its shorter side is below minsize; then a crop x crop "
        "window is taken: at a random position, mirrored left-right with probability 1/2 when "
        "mirror = 1, in training (is_test = 0); centred, never mirrored, with is_test = 1. "
        "Values are (pixel - mean[c]) / std[c]. Output 0 is float NHWC (N, crop, crop, C); "
        "with use_gpu_transform it is NCHW (N, C, crop, crop) of output_type (on CUDA the "
        "normalization then runs on the GPU; on CPU the same values are computed on the host). "
        "Random positions and mirroring come from the op's random generator "
        "(device_option.random_seed) in record order, so seeded runs repeat exactly. Records "
        "are read in DB order, wrapping at the end; images are decoded by decode_threads "
        "threads. As in Caffe2, the next batch is read and decoded on a background thread while "
        "the net runs (unless no_prefetch); the batches, random crops and mirroring included, "
        "are the same as without prefetching. If CreateDB ran again, a batch prefetched from "
        "the old reader is dropped and the run reads the new one. A record that is not a "
        "TensorProtos, an image that does not decode, a bad label, or an image smaller than "
        "crop after resizing fails naming the record's key, at the run that consumes its "
        "batch. "
        "Caffe2's color_jitter, color_lighting, scale_jitter_type, random_scale, bounding "
        "boxes, extra outputs, multi-label types and Caffe datum records are not supported and "
        "are refused.")
    .Input(0, "db_reader", "optional: the DB reader blob made by CreateDB")
    .Output(0, "data", "float (N, crop, crop, C) NHWC, or NCHW of output_type with "
                       "use_gpu_transform")
    .Output(1, "label", "int32 (N)")
    .Arg("batch_size", "int, required (> 0): images per batch")
    .Arg("crop", "int, required (> 0): side of the square output images")
    .Arg("scale", "int: resize so the shorter side is scale (>= crop); exactly one of scale and "
                  "minsize")
    .Arg("minsize", "int: enlarge images whose shorter side is below minsize (>= crop) to "
                    "minsize; larger images are not resized")
    .Arg("warp", "int, default 0: resize both sides to scale (ignoring the aspect ratio)")
    .Arg("mirror", "int, default 0: in training, mirror each image left-right with "
                   "probability 1/2")
    .Arg("is_test", "int, default 0: centre crop, no mirroring")
    .Arg("color", "int, default 1: 1 = 3 channels (BGR), 0 = grey")
    .Arg("mean", "float, default 0: subtracted from every channel")
    .Arg("std", "float, default 1: every channel is divided by it")
    .Arg("mean_per_channel", "floats (1 or 3, B, G, R): per-channel mean; overrides mean")
    .Arg("std_per_channel", "floats (1 or 3, B, G, R): per-channel std; overrides std")
    .Arg("label_type", "int, default 0: only 0 (one int32 label per image) is supported")
    .Arg("use_caffe_datum", "int, default 0: 1 = records are Caffe Datum messages (Caffe's "
                            "convert_imageset DBs): an encoded file, or raw (C, H, W) BGR pixels")
    .Arg("use_gpu_transform", "int, default 0: output NCHW of output_type")
    .Arg("output_type", "string, default float: float or float16 (with use_gpu_transform)")
    .Arg("decode_threads", "int, default 4: threads that decode a batch")
    .Arg("no_prefetch", "bool, default false: read and decode a batch when the op runs instead "
                        "of on a background thread one batch ahead")
    .Arg("db", "string: the DB path when there is no input")
    .Arg("db_type", "string, default leveldb: the DB type when there is no input")
    .Arg("num_shards", "int, default 1: with no input, readers splitting the DB")
    .Arg("shard_id", "int, default 0: with no input, this reader's shard");

}  // namespace halfcaf
