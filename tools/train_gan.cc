// train_gan: trains the AC-GAN (models/acgan.h) with GanTrainer (models/gan_trainer.h) in FP32 or
// mixed precision, on Fashion-MNIST (idx files) or Quick, Draw! (a folder of <class>.npy), for a
// number of epochs or iterations or a wall-clock budget. Logs both losses, writes a PNG grid of
// samples (one row per class) every epoch and at the end, scores the generator with a classifier
// trained on the real data (GAN-test accuracy and the Frechet distance in its features; models/
// gan_metrics.h), and writes generated images as .npy for any other tool to score.
#include <gflags/gflags.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/argument.h"
#include "core/math.h"
#include "core/proto_io.h"
#include "data/dataset_reader.h"
#include "data/npy.h"
#include "models/gan_metrics.h"
#include "models/gan_trainer.h"
#include "tools/tensorboard_writer.h"
#include "tools/tool_common.h"

DEFINE_string(train_data, "", "training images: an idx images file (labels beside it), or with "
              "--data_format quickdraw a folder of Quick, Draw! <class>.npy bitmap files");
DEFINE_string(data_format, "idx", "idx, quickdraw or synthetic");
DEFINE_int64(per_class, 0, "quickdraw: images per class to train on (0: all but the held-out "
             "part)");
DEFINE_int32(num_classes, 10, "classes of the data set (the generator's conditions)");
DEFINE_int32(batch_size, 64, "real images per iteration (and generated images per step)");
DEFINE_double(epochs, 5.0, "epochs over the training set (ignored when --iters is given)");
DEFINE_int64(iters, 0, "iterations (a discriminator step and a generator step each)");
DEFINE_double(time_budget, 0, "stop after this many minutes of training (0: no limit); the "
              "scores are then computed as at the end of any run");
DEFINE_string(dtype, "float", "float (FP32), float16 or bfloat16 (mixed precision: 16-bit "
              "activations, gradients and weight copies, FP32 masters, BatchNorm and losses)");
DEFINE_string(loss_scale, "dynamic", "mixed precision: a number (static), dynamic or dynamic:S; "
              "each network has its own. Default: dynamic for float16, none for bfloat16");
DEFINE_double(initial_loss_scale, 65536.0, "starting value of a dynamic loss scale");
DEFINE_int64(scale_growth_interval, 1000, "clean steps before a dynamic scale doubles");
DEFINE_int64(max_skipped_steps, 32, "stop when one network's steps overflow this many times in a "
             "row (a diverged run); 0: never");
DEFINE_double(base_lr, 2e-4, "Adam's learning rate, both networks");
DEFINE_double(beta1, 0.5, "Adam's first-moment decay");
DEFINE_double(beta2, 0.999, "Adam's second-moment decay");
DEFINE_double(dropout, 0.25, "the discriminator's dropout");
DEFINE_uint32(seed, 1, "seed of the initialisation, data order and noise");
DEFINE_int32(threads, 0, "CPU threads for BLAS (0: all cores)");
DEFINE_int64(log_every, 100, "log every K iterations");
DEFINE_string(log_csv, "", "write the log lines as CSV");
DEFINE_string(tensorboard, "", "also write TensorBoard event files into this folder: the log "
              "lines' values (train/d_loss, train/g_loss, train/d_accuracy, train/iters_per_sec, "
              "loss scales and skipped steps in mixed precision, scores/gan_test_accuracy and "
              "scores/frechet when scored) and every sample grid (image \"samples\")");
DEFINE_string(summary_json, "", "write a summary JSON at the end");
DEFINE_string(out_dir, "runs/acgan", "sample grids go here: grid_epoch_<k>.png and grid.png");
DEFINE_int32(grid_per_class, 10, "images per class (row) in the grids; 0: no grids");
DEFINE_int64(samples, 0, "at the end, generate this many images per class into --samples_out");
DEFINE_string(samples_out, "", "folder for images.npy (float32 (N*classes, 1, 28, 28), values in "
              "[0, 1], 0 = background) and labels.npy (int64, the requested classes)");
DEFINE_string(classifier_net, "", "a classifier's forward net (e.g. models/lenet/"
              "lenet_train_net.pbtxt) trained on the real data by train_net; with "
              "--classifier_params, the generator is scored every epoch and at the end");
DEFINE_string(classifier_params, "", "its trained parameters (train_net's checkpoint.pb)");
DEFINE_string(feature_blob, "fc3", "the classifier's penultimate activation (LeNet: fc3)");
DEFINE_string(real_data, "", "real images the Frechet distance compares with (default: the "
              "test set beside --train_data, t10k-images-idx3-ubyte.gz; quickdraw: the held-out "
              "split)");
DEFINE_string(channels_last, "auto", "convolutions and the ops between them in NHWC (parameters "
              "stay NCHW): auto (bfloat16 on CPUs with BF16 kernels), on or off");
DEFINE_string(blocked_layout, "auto",
              "float32 on the CPU: convolutions, transposed convolutions, "
              "batch normalization and the ops between them on oneDNN's channel-blocked layout: "
              "auto, on or off");
DEFINE_string(recompute, "off", "make activations again in the backward passes instead of "
              "keeping them (less memory, the same training, more time): elementwise, all or off");
DEFINE_bool(optimize_memory, true,
            "memory planning: the temporaries of both networks' steps "
            "share buffers when their lifetimes do not overlap (models/memory_plan.h)");
DEFINE_int64(score_count, 10000, "images of each kind (real, generated) for the scores");

namespace halfcaf {
namespace {

using Clock = std::chrono::steady_clock;

// The real images the generated ones are compared with, as the classifier saw them ([0, 1]).
Tensor RealImages(int64_t count, Tensor* labels) {
  std::unique_ptr<DataSource> src;
  if (FLAGS_data_format == "quickdraw") {
    src = LoadQuickDrawDataset(FLAGS_real_data.empty() ? FLAGS_train_data : FLAGS_real_data,
                               "test", 0);
  } else {
    std::string path = FLAGS_real_data;
    if (path.empty()) {
      path = (std::filesystem::path(FLAGS_train_data).parent_path() / "t10k-images-idx3-ubyte.gz")
                 .string();
    }
    src = LoadIdxDataset(path);
  }
  const int64_t n = std::min(count, src->size());
  HALFCAF_ENFORCE(src->sample_dims() == (std::vector<int64_t>{1, 28, 28}), src->description(),
                  ": the real images must be 1 x 28 x 28");
  Tensor out({n, 1, 28, 28}, DataType::FLOAT);
  *labels = Tensor({n}, DataType::INT32);
  std::vector<uint8_t> px(784);
  for (int64_t i = 0; i < n; ++i) {
    src->ReadSample(i, px.data());
    labels->mutable_data<int32_t>()[i] = src->Label(i);
    for (int k = 0; k < 784; ++k) out.mutable_data<float>()[i * 784 + k] = px[k] / 255.f;
  }
  return out;
}

struct Scores {
  double gan_test_accuracy = NAN, frechet = NAN;
};

// The scorer and the real images' features, made once.
class Scoring {
 public:
  Scoring() {
    NetDef net;
    ReadProtoFromFile(FLAGS_classifier_net, &net);
    ClassifierScorerOptions o;
    o.feature_blob = FLAGS_feature_blob;
    scorer_ = std::make_unique<ClassifierScorer>(net, FLAGS_classifier_params, o);
    Tensor labels;
    const Tensor real = RealImages(FLAGS_score_count, &labels);
    const ClassifierScorer::Output out = scorer_->Run(real);
    real_features_ = out.features;
    real_accuracy_ = ScorePredictions(out.predictions, labels, FLAGS_num_classes).overall;
    real_count_ = real.dim(0);
  }
  Scores Score(GanTrainer* gan) {
    const int64_t per_class = std::max<int64_t>(1, real_count_ / FLAGS_num_classes);
    Tensor labels;
    const Tensor images = gan->SampleClasses(per_class, FLAGS_seed + 1000, &labels);
    const ClassifierScorer::Output out = scorer_->Run(images);
    Scores s;
    s.gan_test_accuracy = ScorePredictions(out.predictions, labels, FLAGS_num_classes).overall;
    s.frechet = FrechetDistance(real_features_, out.features);
    return s;
  }
  double real_accuracy() const { return real_accuracy_; }

 private:
  std::unique_ptr<ClassifierScorer> scorer_;
  Tensor real_features_;
  int64_t real_count_ = 0;
  double real_accuracy_ = 0;
};

// The grid at `path` and, with --tensorboard, as the image "samples" at `iter`.
void WriteGrid(GanTrainer* gan, const std::string& path, int64_t iter, TensorBoardWriter* tb) {
  if (FLAGS_grid_per_class <= 0) return;
  Tensor labels;
  // The same noise every time, so successive grids show the same draws as training goes on.
  const Tensor images = gan->SampleClasses(FLAGS_grid_per_class, FLAGS_seed + 7, &labels);
  const std::string png = EncodeSampleGrid(images, FLAGS_num_classes);
  WriteFileAtomically(path, png);
  if (tb) tb->Image(iter, "samples", png);
}

void WriteSamples(GanTrainer* gan) {
  Tensor labels;
  const Tensor images = gan->SampleClasses(FLAGS_samples, FLAGS_seed + 2000, &labels);
  Tensor labels64({labels.numel()}, DataType::INT64);
  for (int64_t i = 0; i < labels.numel(); ++i) {
    labels64.mutable_data<int64_t>()[i] = labels.data<int32_t>()[i];
  }
  std::filesystem::create_directories(FLAGS_samples_out);
  WriteNpy(images, FLAGS_samples_out + "/images.npy");
  WriteNpy(labels64, FLAGS_samples_out + "/labels.npy");
}

GanTrainerOptions OptionsFromFlags() {
  GanTrainerOptions o = GanTrainerOptions::Default();
  HALFCAF_ENFORCE(FLAGS_data_format == "idx" || FLAGS_data_format == "quickdraw" ||
                      FLAGS_data_format == "synthetic",
                  "--data_format must be idx, quickdraw or synthetic, got '", FLAGS_data_format,
                  "'");
  o.train_data = FLAGS_train_data;
  o.data_format = FLAGS_data_format;
  if (FLAGS_data_format == "quickdraw") {
    o.reader_args = {MakeArgument("split", std::string("train")),
                     MakeArgument("per_class", FLAGS_per_class)};
  } else if (FLAGS_data_format == "synthetic") {
    o.reader_args = {MakeArgument("synthetic_shape", std::vector<int64_t>{1, 28, 28}),
                     MakeArgument("num_classes", FLAGS_num_classes),
                     MakeArgument("synthetic_count", int64_t{1024})};
  }
  HALFCAF_ENFORCE(FLAGS_batch_size >= 1 && FLAGS_batch_size <= 65536,
                  "--batch_size must be in [1, 65536], got ", FLAGS_batch_size);
  o.model.batch_size = FLAGS_batch_size;
  o.model.num_classes = FLAGS_num_classes;
  o.model.dropout = CheckedFloat("dropout", FLAGS_dropout, 0, 1, /*hi_open=*/true);
  for (OptimizerOptions* opt : {&o.d_optimizer, &o.g_optimizer}) {
    opt->base_lr = CheckedFloat("base_lr", FLAGS_base_lr, 0, 1e6);
    opt->beta1 = CheckedFloat("beta1", FLAGS_beta1, 0, 1, true);
    opt->beta2 = CheckedFloat("beta2", FLAGS_beta2, 0, 1, true);
  }
  const PrecisionSetting ps = ParsePrecision(
      FLAGS_dtype, FLAGS_loss_scale, !gflags::GetCommandLineFlagInfoOrDie("loss_scale").is_default,
      FLAGS_initial_loss_scale);
  o.precision = ps.precision;
  o.dynamic_loss_scale = ps.loss_scale.dynamic;
  o.loss_scale = ps.loss_scale.scale;
  o.scale_growth_interval = FLAGS_scale_growth_interval;
  o.max_skipped_steps = FLAGS_max_skipped_steps;
  o.seed = FLAGS_seed;
  o.channels_last = FLAGS_channels_last;
  o.blocked_layout = FLAGS_blocked_layout;
  o.recompute = FLAGS_recompute;
  o.optimize_memory = FLAGS_optimize_memory;
  return o;
}

int Main() {
  HALFCAF_ENFORCE(!FLAGS_train_data.empty() || FLAGS_data_format == "synthetic",
                  "--train_data is required (e.g. /usr/share/datasets/fashion-mnist/"
                  "train-images-idx3-ubyte.gz)");
  HALFCAF_ENFORCE(FLAGS_log_every > 0, "--log_every must be positive");
  CheckNonNegative({{"iters", FLAGS_iters},
                    {"max_skipped_steps", FLAGS_max_skipped_steps},
                    {"grid_per_class", FLAGS_grid_per_class},
                    {"per_class", FLAGS_per_class}});
  HALFCAF_ENFORCE(FLAGS_scale_growth_interval >= 1, "--scale_growth_interval must be >= 1, got ",
                  FLAGS_scale_growth_interval);
  CheckedFloat("epochs", FLAGS_epochs, 0, 1e9);
  CheckedFloat("time_budget", FLAGS_time_budget, 0, 1e9);
  HALFCAF_ENFORCE(FLAGS_samples >= 0 && (FLAGS_samples == 0 || !FLAGS_samples_out.empty()),
                  "--samples N needs --samples_out DIR");
  HALFCAF_ENFORCE(FLAGS_classifier_net.empty() == FLAGS_classifier_params.empty(),
                  "--classifier_net and --classifier_params go together");
  HALFCAF_ENFORCE(FLAGS_score_count >= 2, "--score_count must be at least 2");
  const GanTrainerOptions options = OptionsFromFlags();
  if (FLAGS_grid_per_class > 0) {
    std::error_code ec;
    std::filesystem::create_directories(FLAGS_out_dir, ec);
    HALFCAF_ENFORCE(!ec, "--out_dir ", FLAGS_out_dir, ": cannot create the folder (",
                    ec.message(), ")");
    CheckWritableFolder(FLAGS_out_dir, "out_dir");
  }
  if (!FLAGS_log_csv.empty()) CheckWritableFile(FLAGS_log_csv, "log_csv");
  if (!FLAGS_summary_json.empty()) CheckWritableFile(FLAGS_summary_json, "summary_json");
  InstallStopSignals("train_gan");
  math::SetBlasThreads(FLAGS_threads);

  GanTrainer gan(options);
  gan.Initialize();
  std::unique_ptr<Scoring> scoring;
  if (!FLAGS_classifier_net.empty()) {  // errors before training
    scoring = std::make_unique<Scoring>();
    std::cout << "train_gan: the classifier scores " << Fmt(scoring->real_accuracy())
              << " on the real images" << std::endl;
  }
  const int64_t n = gan.train_set_size();
  const int64_t per_epoch = std::max<int64_t>(1, n / FLAGS_batch_size);
  const int64_t total = FLAGS_iters > 0 ? FLAGS_iters
                                        : std::max<int64_t>(1, static_cast<int64_t>(std::ceil(
                                                                   FLAGS_epochs * per_epoch)));
  const std::string slow = CpuPrecisionWarning(options.precision, options.device.type);
  if (!slow.empty()) std::cout << "train_gan: warning: " << slow << std::endl;
  std::cout << "train_gan: AC-GAN, "
            << (options.precision == DataType::FLOAT
                    ? std::string("float32")
                    : "mixed precision (" + std::string(DataTypeName(options.precision)) +
                          (options.dynamic_loss_scale ? ", dynamic loss scales from "
                                                      : ", static loss scales ") +
                          Fmt(options.loss_scale, 8) + ")")
            << (gan.channels_last() ? ", channels last" : "")
            << (gan.channel_blocked() ? ", channel-blocked" : "")
            << (options.recompute != "off" ? ", recomputing " + options.recompute : "") << ", " << n
            << " training images, batch " << FLAGS_batch_size << ", " << total << " iterations"
            << (FLAGS_time_budget > 0 ? " or " + Fmt(FLAGS_time_budget) + " minutes"
                                      : std::string())
            << std::endl;
  if (options.optimize_memory)
    std::cout << "train_gan: " << gan.memory_plan().Summary() << std::flush;
  std::unique_ptr<TensorBoardWriter> tb;
  if (!FLAGS_tensorboard.empty()) tb.reset(new TensorBoardWriter(FLAGS_tensorboard));
  std::ofstream csv;
  if (!FLAGS_log_csv.empty()) {
    csv.open(FLAGS_log_csv);
    csv << "iter,epoch,d_loss,g_loss,d_accuracy,iters_per_sec,d_loss_scale,g_loss_scale,"
           "d_skipped,g_skipped,gan_test_accuracy,frechet\n";
  }
  const auto t0 = Clock::now();
  auto window = t0;
  double train_seconds = 0;  // without scoring and grids
  GanStats last;
  Scores scores;
  auto minutes = [&] { return train_seconds / 60.0; };
  auto line = [&](int64_t iter, const Scores* s) {
    const double secs = std::chrono::duration<double>(Clock::now() - window).count();
    last = gan.ReadStats();
    const double epoch = static_cast<double>(iter) / per_epoch;
    std::cout << "iter " << iter << "  epoch " << std::fixed << std::setprecision(2) << epoch
              << std::defaultfloat << "  d_loss " << Fmt(last.d_loss) << "  g_loss "
              << Fmt(last.g_loss) << "  d_acc " << Fmt(last.d_accuracy) << "  "
              << Fmt(last.steps / std::max(secs, 1e-9), 4) << " it/s";
    if (options.precision != DataType::FLOAT) {
      std::cout << "  loss_scale " << Fmt(last.d_loss_scale, 8) << "/" << Fmt(last.g_loss_scale, 8)
                << "  skipped " << last.d_skipped << "/" << last.g_skipped;
    }
    if (s) {
      std::cout << "  gan_test_acc " << Fmt(s->gan_test_accuracy) << "  frechet "
                << Fmt(s->frechet);
    }
    std::cout << std::endl;
    if (tb) {
      std::vector<std::pair<std::string, double>> v = {
          {"train/d_loss", last.d_loss}, {"train/g_loss", last.g_loss},
          {"train/d_accuracy", last.d_accuracy},
          {"train/iters_per_sec", last.steps / std::max(secs, 1e-9)}};
      if (options.precision != DataType::FLOAT) {
        v.insert(v.end(), {{"train/d_loss_scale", last.d_loss_scale},
                           {"train/g_loss_scale", last.g_loss_scale},
                           {"train/d_skipped_steps", static_cast<double>(last.d_skipped)},
                           {"train/g_skipped_steps", static_cast<double>(last.g_skipped)}});
      }
      if (s) {
        v.insert(v.end(), {{"scores/gan_test_accuracy", s->gan_test_accuracy},
                           {"scores/frechet", s->frechet}});
      }
      tb->Scalars(iter, v);
    }
    if (csv.is_open()) {
      csv << iter << "," << epoch << std::setprecision(9) << "," << last.d_loss << ","
          << last.g_loss << "," << last.d_accuracy << "," << last.steps / std::max(secs, 1e-9)
          << "," << last.d_loss_scale << "," << last.g_loss_scale << "," << last.d_skipped << ","
          << last.g_skipped << "," << (s ? s->gan_test_accuracy : NAN) << ","
          << (s ? s->frechet : NAN) << std::setprecision(6) << std::endl;
    }
  };
  bool out_of_time = false;
  while (gan.iteration() < total && StopSignal() == 0 && !out_of_time) {
    const auto s0 = Clock::now();
    gan.Step();
    train_seconds += std::chrono::duration<double>(Clock::now() - s0).count();
    const int64_t iter = gan.iteration();
    out_of_time = FLAGS_time_budget > 0 && minutes() >= FLAGS_time_budget;
    const bool epoch_end = iter % per_epoch == 0;
    const bool end = iter >= total || out_of_time;
    if (epoch_end && !end) {
      // Each epoch: a grid and the scores.
      WriteGrid(&gan, FLAGS_out_dir + "/grid_epoch_" + std::to_string(iter / per_epoch) + ".png",
                iter, tb.get());
      if (scoring) scores = scoring->Score(&gan);
      line(iter, scoring ? &scores : nullptr);
      window = Clock::now();
    } else if (iter % FLAGS_log_every == 0 || end) {
      line(iter, nullptr);
      window = Clock::now();
    }
  }
  const int stopped_by = StopSignal();
  if (stopped_by != 0) {
    // What was trained is still scored and written; a second signal exits at once.
    std::cerr << "train_gan: stopped by signal " << stopped_by << " at iteration "
              << gan.iteration() << "; writing the grid, samples and scores of what was trained"
              << std::endl;
    if (gan.iteration() % FLAGS_log_every != 0) line(gan.iteration(), nullptr);
  }
  WriteGrid(&gan, FLAGS_out_dir + "/grid.png", gan.iteration(), tb.get());
  if (scoring) {
    scores = scoring->Score(&gan);
    std::cout << "scores: GAN-test accuracy " << Fmt(scores.gan_test_accuracy)
              << "  Frechet distance " << Fmt(scores.frechet) << " (classifier "
              << FLAGS_classifier_params << ", " << FLAGS_score_count << " images each)"
              << std::endl;
  }
  if (FLAGS_samples > 0) WriteSamples(&gan);
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const int64_t iters = gan.iteration();
  std::cout << "done: " << iters << " iterations in " << Fmt(train_seconds) << " s of training ("
            << Fmt(iters / std::max(train_seconds, 1e-9), 4) << " it/s, "
            << Fmt(iters * FLAGS_batch_size / std::max(train_seconds, 1e-9), 5)
            << " real images/s), " << last.d_skipped + last.g_skipped << " skipped steps"
            << (out_of_time ? ", time budget reached" : "") << std::endl;
  if (!FLAGS_summary_json.empty()) {
    std::ostringstream js;
    js << std::setprecision(9) << "{\n"
       << "  \"framework\": \"halfcaf\",\n"
       << "  \"dtype\": \"" << FLAGS_dtype << "\",\n"
       << "  \"batch_size\": " << FLAGS_batch_size << ",\n"
       << "  \"iterations\": " << iters << ",\n"
       << "  \"epochs\": " << static_cast<double>(iters) / per_epoch << ",\n"
       << "  \"train_seconds\": " << train_seconds << ",\n"
       << "  \"wall_seconds\": " << wall << ",\n"
       << "  \"iters_per_sec\": " << iters / std::max(train_seconds, 1e-9) << ",\n"
       << "  \"final_d_loss\": " << last.d_loss << ",\n"
       << "  \"final_g_loss\": " << last.g_loss << ",\n"
       << "  \"d_skipped_steps\": " << last.d_skipped << ",\n"
       << "  \"g_skipped_steps\": " << last.g_skipped << ",\n"
       << "  \"gan_test_accuracy\": " << (scoring ? scores.gan_test_accuracy : -1) << ",\n"
       << "  \"frechet_distance\": " << (scoring ? scores.frechet : -1) << ",\n"
       << "  \"stopped_by_signal\": " << stopped_by << "\n}\n";
    WriteFileAtomically(FLAGS_summary_json, js.str());
  }
  return stopped_by != 0 ? 128 + stopped_by : 0;
}

}  // namespace
}  // namespace halfcaf

int main(int argc, char** argv) {
  return halfcaf::RunTool("train_gan",
                          "train_gan --train_data PATH [--data_format idx|quickdraw] "
                          "[--dtype float|float16|bfloat16] [--epochs E | --iters N] "
                          "[--time_budget MIN] [--classifier_net NET --classifier_params CKPT] "
                          "[--samples N --samples_out DIR] ... (see --help)",
                          argc, argv, halfcaf::Main);
}
