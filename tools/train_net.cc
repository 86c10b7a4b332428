// train_net: trains a forward net (protobuf text or binary, with a loss) from its init net, in
// FP32 or mixed precision, logging progress and writing checkpoints that resume exactly.
#include <gflags/gflags.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <limits>
#include <memory>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "core/float_io.h"
#include "core/math.h"
#include "core/proto_io.h"
#include "core/trace.h"
#include "data/dataset_reader.h"
#include "models/imported_model.h"
#include "models/optimizer.h"
#include "models/trainer.h"
#include "onnx/onnx_import.h"
#include "tools/multi_process.h"
#include "tools/progress_bar.h"
#include "tools/tensorboard_writer.h"
#include "tools/tool_common.h"

DEFINE_string(net, "", "forward net with a loss (text or binary NetDef), or an ONNX model "
              "(.onnx) to fine-tune (its initializers are the starting point; no --init_net)");
DEFINE_string(logits, "", "--net model.onnx: the blob the loss reads (default: the input of its "
              "final Softmax, else its only output)");
DEFINE_string(init_net, "", "init net filling the parameters");
DEFINE_string(test_net, "", "optional forward net for evaluation (default: --net in test mode)");
DEFINE_string(train_data, "", "training data: idx images file, CIFAR-10 batch file or folder, "
              "Quick, Draw! folder of <class>.npy files, or a Caffe2 LevelDB / LMDB folder");
DEFINE_string(test_data, "", "test data, same format (evaluated at --test_every and at the end); "
              "quickdraw: the held-out split of this folder (give the --train_data folder)");
DEFINE_string(data_format, "idx", "idx | cifar10 | quickdraw | leveldb | lmdb | synthetic "
              "(leveldb/lmdb: {image, label} TensorProtos records as make_mnist_db writes)");
DEFINE_string(synthetic_shape, "1,28,28", "C,H,W of synthetic samples");
DEFINE_int64(synthetic_count, 1024, "samples in the synthetic data set");
DEFINE_int32(num_classes, 10, "classes of synthetic data; with --net model.onnx, also the "
             "classifier's width (a final FC of another width is replaced by a fresh one)");
DEFINE_string(order, "NCHW", "data layout given to the net: NCHW or NHWC");
DEFINE_double(data_scale, 1.0 / 255.0, "pixels are multiplied by this");
DEFINE_string(data_mean, "0", "then this is subtracted: one value, or one per channel (a,b,c)");
DEFINE_string(data_std, "1", "then the result is divided by this: one value, or one per channel");
DEFINE_int32(crop, 0, "augmentation: train on random crop x crop windows (evaluation: the centre "
             "window); 0 keeps the samples' size");
DEFINE_int32(pad, 0, "augmentation: zero pixels added around each training sample before the "
             "random window is cut (with --crop 0: random shifts)");
DEFINE_bool(mirror, false, "augmentation: flip training samples left-right with probability 1/2");
DEFINE_bool(shuffle, true,
            "visit the training samples in a new random order each epoch (false: in the data "
            "set's own order, every epoch)");
DEFINE_int32(batch_size, 64, "images per iteration");
DEFINE_double(epochs, 1.0, "epochs to train (ignored when --iters is given)");
DEFINE_int64(iters, 0, "total iterations to train (overrides --epochs)");
DEFINE_double(base_lr, 0.01, "learning rate at multiplier 1");
DEFINE_string(lr_policy, "fixed",
              "fixed, step, multistep, exp, inv, poly or cosine (to --min_lr over --max_iter "
              "iterations, then restarting: PyTorch's CosineAnnealingLR up to T_max)");
DEFINE_int64(stepsize, 0, "step policy: iterations per decay");
DEFINE_string(stepsizes, "", "multistep policy: comma-separated iterations");
DEFINE_double(gamma, 0.1, "decay factor (step, multistep, exp, inv)");
DEFINE_double(power, 1.0, "exponent (inv, poly)");
DEFINE_int64(max_iter, 0, "poly and cosine: the schedule's length (default: the run's)");
DEFINE_double(min_lr, 0.0, "cosine: the learning rate at the end of each period");
DEFINE_int64(warmup_iters, 0, "linear learning-rate warm-up length");
DEFINE_double(warmup_start, 0.0, "warm-up multiplier at iteration 0");
DEFINE_string(optimizer, "momentum",
              "sgd (no momentum), momentum, nesterov, lars (momentum SGD with each weight's rate "
              "scaled by --lars_trust |w| / (|g| + weight_decay |w|)), or PyTorch's adam, adamw "
              "(--beta1, --beta2; --weight_decay is Adam's L2 term, AdamW's decoupled decay), "
              "adagrad, rmsprop (--alpha, --momentum) or adadelta (--rho; --base_lr 1 is "
              "PyTorch's default), each with --epsilon");
DEFINE_double(momentum, 0.9,
              "momentum (momentum, nesterov and lars; rmsprop's is 0 unless given)");
DEFINE_bool(nesterov, false, "Nesterov momentum (the same as --optimizer nesterov)");
DEFINE_double(beta1, 0.9, "Adam / AdamW: decay of the first moment");
DEFINE_double(beta2, 0.999, "Adam / AdamW: decay of the second moment");
DEFINE_double(epsilon, -1,
              "adaptive optimizers: added to the square root of the second moment (Adam: after "
              "its bias correction); default PyTorch's: 1e-8 (adam, adamw, rmsprop), 1e-10 "
              "(adagrad), 1e-6 (adadelta, inside the root)");
DEFINE_double(alpha, 0.99, "rmsprop: decay of the squared-gradient average");
DEFINE_double(rho, 0.9, "adadelta: decay of the running averages");
DEFINE_double(lars_trust, 0.001, "lars: trust coefficient");
DEFINE_double(weight_decay, 0.0, "L2 weight decay (weights only)");
DEFINE_bool(weight_decay_all, false, "also decay biases and BatchNorm parameters");
DEFINE_string(freeze, "",
              "freeze the parameters whose names match this regex (ECMAScript, searched anywhere "
              "in the name; e.g. '^(conv|res)' or 'layer[1-3]\\.'): never updated, no optimizer "
              "state; gradients still flow through them to the parameters before them. BatchNorm "
              "running statistics of frozen layers still follow the batches");
DEFINE_string(param_groups, "",
              "parameter groups, 'REGEX:LR_MULT[:DECAY_MULT];...' (Caffe's lr_mult / decay_mult): a "
              "parameter takes the first group its name matches (after --freeze), others lr_mult 1");
DEFINE_string(dtype, "float", "float (FP32 training), float16 or bfloat16 (mixed precision: "
              "16-bit activations, gradients and Conv/FC weight copies, FP32 masters)");
DEFINE_string(loss_scale, "dynamic",
              "mixed precision: a number for a static scale, `dynamic`, or `dynamic:S` for a "
              "dynamic scale starting at S. Default: dynamic for float16; none (a static 1) for "
              "bfloat16, whose range is float's (overflowing steps are still skipped)");
DEFINE_double(initial_loss_scale, 65536.0, "starting value of a dynamic loss scale");
DEFINE_int64(scale_growth_interval, 1000, "clean steps before a dynamic scale doubles");
DEFINE_string(device, "cpu", "cpu or cuda");
DEFINE_int32(gpu, 0, "CUDA device id");
DEFINE_string(gpus, "", "data parallel on these CUDA devices, e.g. 0,1,2,3 (implies --device cuda)");
DEFINE_int32(replicas, 0, "data-parallel replicas (default: one per --gpus entry, else 1); replica "
             "i runs on the i-th listed GPU (cycling), on --gpu, or on the CPU; --batch_size is "
             "the total over all replicas");
DEFINE_string(net_type, "", "executor of the training net: simple, dag, or empty = dag when the "
              "replicas span two or more GPUs (their work is then queued concurrently), else simple");
DEFINE_int32(threads, 0, "CPU threads for BLAS (0: all cores)");
DEFINE_uint32(seed, 1, "seed for initialisation and data order");
DEFINE_string(data_blob, "data", "the net's data blob");
DEFINE_string(label_blob, "label", "the net's label blob");
DEFINE_string(loss_blob, "loss", "the net's loss blob");
DEFINE_string(accuracy_blob, "accuracy", "the net's accuracy blob (optional)");
DEFINE_string(checkpoint_dir, "", "folder for checkpoint.pb (created if missing; one run at a time: "
              "a second train_net on the same folder stops at start; temp files left there by "
              "killed runs are removed). A checkpoint holding inf or NaN is never written: the "
              "run stops and the last good one is kept");
DEFINE_int64(checkpoint_every, 0, "write a checkpoint every K iterations (and at the end)");
DEFINE_bool(resume, false, "continue from <checkpoint_dir>/checkpoint.pb");
DEFINE_int64(log_every, 100, "log every K iterations");
DEFINE_string(tensorboard, "", "also write the log lines' values as TensorBoard event files into "
              "this folder (tags train/loss, train/accuracy, train/lr, train/images_per_sec, "
              "train/loss_scale, train/skipped_steps, test/loss, test/accuracy)");
DEFINE_string(trace, "", "write a timeline of the run (every net and operator run, the data "
              "prefetch and gradient-exchange threads; Chrome trace-event JSON for Perfetto UI or "
              "chrome://tracing) to this file; process k > 0 of a multi-process run writes "
              "<name>.rank<k>.json");
DEFINE_int64(trace_iters, 0, "--trace: only the first N training iterations (the file is written "
             "then, and training goes on); 0: the whole run");
DEFINE_int64(tensorboard_histograms, 0, "--tensorboard: every N iterations also histograms of "
             "every trained parameter (params/<name>) and of its gradient in that step "
             "(grads/<name>, divided by the loss scale); 0: none");
DEFINE_int64(test_every, 0, "evaluate the test set every K iterations (0: only at the end)");
DEFINE_string(log_csv, "", "write the log lines as CSV (it keeps being written when stdout "
              "is closed, e.g. train_net | head)");
DEFINE_string(summary_json, "", "write a summary JSON at the end");
// Output paths (--log_csv, --summary_json, --checkpoint_dir) are checked writable at start-up; a
// symbolic link is written through (the file it points to is replaced, the link kept).
DEFINE_int64(max_skipped_steps, 32, "mixed precision: stop with an error when this many consecutive "
             "steps overflow and are skipped (a diverged run); 0 = never. Dynamic scaling from "
             "the default 65536 reaches 1 after 16 overflows");
DEFINE_string(write_plan, "", "write the run (the init net, then the training iterations with "
              "the test set evaluated every --test_every and at the end) as one Caffe2 PlanDef to "
              "this file (text when it ends in .pbtxt) and exit without training: run_plan --plan "
              "FILE then trains exactly as train_net would (the same losses and weights), leaving "
              "the mean test loss and accuracy in blobs test/loss and test/accuracy. One process; "
              "not with --resume");
DEFINE_bool(prefetch, true, "prepare the next batch on a background thread");
DEFINE_bool(optimize_memory, true, "memory planning: the nets' temporaries (activations, their "
            "gradients, casts) share buffers when their lifetimes do not overlap");
DEFINE_bool(print_memory_plan, false, "print which blobs share each buffer");
DEFINE_string(channels_last, "auto", "run the convolutions and the ops between them in NHWC "
              "(parameters stay NCHW): auto (for bfloat16 on CPUs with BF16 kernels), on or off");
DEFINE_string(blocked_layout, "auto", "float32 on the CPU: convolutions, batch normalization and "
              "the element-wise ops between them on oneDNN's channel-blocked layout (no reorders "
              "at each op; parameters stay NCHW): auto, on or off");
DEFINE_string(conv_algorithm, "direct", "float32 on the CPU: direct, or winograd for the 3 x 3, "
              "stride 1 convolutions (oneDNN's Winograd kernels, AVX-512: faster, ~1e-5 apart)");
DEFINE_string(recompute, "off", "make activations again in the backward pass instead of "
              "keeping them (less memory, the same gradients, more time): elementwise (batch "
              "normalization, element-wise ops), all (convolutions too) or off");
namespace halfcaf {
namespace {

// The comma-separated list of flag --`flag`, each item read whole by `parse` (std::stoll-like).
template <typename T, typename Parse>
std::vector<T> ParseList(const std::string& s, const char* flag, const char* what, Parse parse) {
  std::vector<T> out;
  for (const auto& item : SplitList(s)) {
    try {
      size_t used = 0;
      out.push_back(parse(item, &used));
      HALFCAF_ENFORCE(used == item.size(), "");
    } catch (...) {
      HALFCAF_THROW("--", flag, ": '", item, "' is not ", what);
    }
  }
  return out;
}

std::vector<int64_t> ParseInts(const std::string& s, const char* flag) {
  return ParseList<int64_t>(s, flag, "an integer",
                            [](const std::string& x, size_t* used) { return std::stoll(x, used); });
}

std::vector<float> ParseFloats(const std::string& s, const char* flag) {
  std::vector<float> out = ParseList<float>(
      s, flag, "a number", [](const std::string& x, size_t* used) { return std::stof(x, used); });
  HALFCAF_ENFORCE(!out.empty(), "--", flag, " needs one value or one per channel");
  for (float v : out) HALFCAF_ENFORCE(std::isfinite(v), "--", flag, ": ", v, " is not finite");
  return out;
}

// --freeze REGEX and --param_groups 'REGEX:LR_MULT[:DECAY_MULT];...' as the trainer's groups.
std::vector<ParamGroup> ParseParamGroups(const std::string& freeze, const std::string& groups) {
  std::vector<ParamGroup> out;
  if (!freeze.empty()) out.push_back(ParamGroup{freeze, 0.f, 0.f, true});
  std::string rest = groups;
  while (!rest.empty()) {
    const size_t semi = rest.find(';');
    const std::string item = rest.substr(0, semi);
    rest = semi == std::string::npos ? "" : rest.substr(semi + 1);
    if (item.empty()) continue;
    // The multipliers are the last one or two ':'-separated fields; the regex may hold ':'.
    const size_t c2 = item.rfind(':');
    HALFCAF_ENFORCE(c2 != std::string::npos && c2 > 0, "--param_groups: '", item,
                    "' is not REGEX:LR_MULT[:DECAY_MULT]");
    const size_t c1 = item.rfind(':', c2 - 1);
    // A multiplier: a whole finite number >= 0.
    auto multiplier = [](const std::string& v, float* out) {
      char* end = nullptr;
      const float f = std::strtof(v.c_str(), &end);
      if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(f) || f < 0) return false;
      *out = f;
      return true;
    };
    ParamGroup g;
    float lr = 1, decay = 1;
    if (c1 != std::string::npos && multiplier(item.substr(c1 + 1, c2 - c1 - 1), &lr) &&
        multiplier(item.substr(c2 + 1), &decay)) {
      g.pattern = item.substr(0, c1);
    } else {
      HALFCAF_ENFORCE(multiplier(item.substr(c2 + 1), &lr), "--param_groups: '", item, "': '",
                      item.substr(c2 + 1), "' is not a multiplier (a number >= 0)");
      g.pattern = item.substr(0, c2);
    }
    g.lr_mult = lr;
    g.decay_mult = decay;
    out.push_back(g);
  }
  return out;
}

void CheckFlagsInRange() {
  const double kBig = 3.4e38;  // what a float holds
  CheckNonNegative({{"iters", FLAGS_iters},
                    {"stepsize", FLAGS_stepsize},
                    {"warmup_iters", FLAGS_warmup_iters},
                    {"test_every", FLAGS_test_every},
                    {"max_iter", FLAGS_max_iter},
                    {"checkpoint_every", FLAGS_checkpoint_every},
                    {"max_skipped_steps", FLAGS_max_skipped_steps},
                    {"tensorboard_histograms", FLAGS_tensorboard_histograms},
                    {"trace_iters", FLAGS_trace_iters}});
  HALFCAF_ENFORCE(FLAGS_scale_growth_interval >= 1, "--scale_growth_interval must be >= 1, got ",
                  FLAGS_scale_growth_interval);
  HALFCAF_ENFORCE(FLAGS_num_classes >= 1, "--num_classes must be >= 1, got ", FLAGS_num_classes);
  HALFCAF_ENFORCE(FLAGS_threads >= 0, "--threads must be >= 0, got ", FLAGS_threads);
  HALFCAF_ENFORCE(FLAGS_tensorboard_histograms == 0 || !FLAGS_tensorboard.empty(),
                  "--tensorboard_histograms needs --tensorboard DIR (where to write them)");
  HALFCAF_ENFORCE(FLAGS_trace_iters == 0 || !FLAGS_trace.empty(),
                  "--trace_iters needs --trace FILE");
  CheckedFloat("epochs", FLAGS_epochs, 0, 1e12);
  HALFCAF_ENFORCE(FLAGS_iters > 0 || FLAGS_epochs > 0, "--epochs must be positive, got ",
                  FLAGS_epochs);
  CheckedFloat("data_scale", FLAGS_data_scale, -kBig, kBig);
  CheckedFloat("initial_loss_scale", FLAGS_initial_loss_scale, 1e-30, kBig);
}

// The training set, loaded early when the schedule's length comes from it; kept until the trainer
// has loaded it too (LoadDataSourceShared then returns this one instead of reading it again).
std::shared_ptr<const DataSource> g_early_train_set;

// The run's length in iterations: --iters, or --epochs over the training set.
int64_t RunIterations(const TrainerOptions& o) {
  if (FLAGS_iters > 0) return FLAGS_iters;
  int64_t n = FLAGS_synthetic_count;
  if (o.data_format != "synthetic") {
    g_early_train_set = LoadDataSourceShared(o.data_format, o.train_data);
    n = g_early_train_set->size();
  }
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(FLAGS_epochs * n / FLAGS_batch_size)));
}

TrainerOptions OptionsFromFlags() {
  TrainerOptions o;
  o.train_data = FLAGS_train_data;
  o.test_data = FLAGS_test_data;
  o.data_format = FLAGS_data_format;
  HALFCAF_ENFORCE(o.data_format == "idx" || o.data_format == "cifar10" ||
                      o.data_format == "quickdraw" || o.data_format == "leveldb" ||
                      o.data_format == "lmdb" || o.data_format == "synthetic",
                  "--data_format must be idx, cifar10, quickdraw, leveldb, lmdb or synthetic, "
                  "got '", o.data_format, "'");
  HALFCAF_ENFORCE(o.data_format == "synthetic" || !o.train_data.empty(),
                  "--train_data is required (or --data_format synthetic)");
  o.synthetic_shape = ParseInts(FLAGS_synthetic_shape, "synthetic_shape");
  HALFCAF_ENFORCE(FLAGS_synthetic_count >= 1, "--synthetic_count must be >= 1, got ",
                  FLAGS_synthetic_count);
  o.synthetic_count = FLAGS_synthetic_count;
  o.num_classes = FLAGS_num_classes;
  o.order = FLAGS_order;
  o.data_scale = static_cast<float>(FLAGS_data_scale);
  o.data_mean = ParseFloats(FLAGS_data_mean, "data_mean");
  o.data_std = ParseFloats(FLAGS_data_std, "data_std");
  HALFCAF_ENFORCE(FLAGS_crop >= 0 && FLAGS_pad >= 0, "--crop and --pad must be >= 0, got ",
                  FLAGS_crop, " and ", FLAGS_pad);
  o.crop = FLAGS_crop;
  o.pad = FLAGS_pad;
  o.mirror = FLAGS_mirror;
  o.shuffle = FLAGS_shuffle;
  o.batch_size = FLAGS_batch_size;
  o.prefetch = FLAGS_prefetch;
  o.net_type = FLAGS_net_type;
  o.data_blob = FLAGS_data_blob;
  o.label_blob = FLAGS_label_blob;
  o.loss_blob = FLAGS_loss_blob;
  o.accuracy_blob = FLAGS_accuracy_blob;
  o.optimizer.base_lr = CheckedFloat("base_lr", FLAGS_base_lr, 0, 3.4e38);
  o.optimizer.lr_policy = FLAGS_lr_policy;
  o.optimizer.stepsize = FLAGS_stepsize;
  o.optimizer.stepsizes = ParseInts(FLAGS_stepsizes, "stepsizes");
  o.optimizer.gamma = CheckedFloat("gamma", FLAGS_gamma, 0, 3.4e38);
  o.optimizer.power = CheckedFloat("power", FLAGS_power, -1e6, 1e6);
  if (FLAGS_lr_policy == "poly" || FLAGS_lr_policy == "cosine") {
    o.optimizer.max_iter = FLAGS_max_iter > 0 ? FLAGS_max_iter : RunIterations(o);
  }
  o.optimizer.min_lr = CheckedFloat("min_lr", FLAGS_min_lr, 0, 3.4e38);
  o.optimizer.warmup_iters = FLAGS_warmup_iters;
  o.optimizer.warmup_start = CheckedFloat("warmup_start", FLAGS_warmup_start, 0, 1);
  o.optimizer.momentum = CheckedFloat("momentum", FLAGS_momentum, 0, 1, /*hi_open=*/true);
  if (FLAGS_optimizer == "rmsprop" && gflags::GetCommandLineFlagInfoOrDie("momentum").is_default) {
    o.optimizer.momentum = 0.f;  // PyTorch's RMSprop default
  }
  o.optimizer.nesterov = FLAGS_nesterov;
  o.optimizer.type = FLAGS_optimizer;
  HALFCAF_ENFORCE(std::find(std::begin(kOptimizerTypes), std::end(kOptimizerTypes),
                            FLAGS_optimizer) != std::end(kOptimizerTypes),
                  "--optimizer must be one of ", OptimizerTypeList(), ", got '", FLAGS_optimizer,
                  "'");
  HALFCAF_ENFORCE(!FLAGS_nesterov || FLAGS_optimizer == "momentum" ||
                      FLAGS_optimizer == "nesterov" || FLAGS_optimizer == "lars",
                  "--nesterov is for the momentum and lars optimizers, not --optimizer ",
                  FLAGS_optimizer);
  o.optimizer.beta1 = CheckedFloat("beta1", FLAGS_beta1, 0, 1, /*hi_open=*/true);
  o.optimizer.beta2 = CheckedFloat("beta2", FLAGS_beta2, 0, 1, /*hi_open=*/true);
  o.optimizer.epsilon = FLAGS_epsilon < 0 ? -1.f : CheckedFloat("epsilon", FLAGS_epsilon, 0, 1);
  o.optimizer.alpha = CheckedFloat("alpha", FLAGS_alpha, 0, 1);
  o.optimizer.rho = CheckedFloat("rho", FLAGS_rho, 0, 1);
  o.optimizer.lars_trust = CheckedFloat("lars_trust", FLAGS_lars_trust, 0, 1e6);
  o.optimizer.weight_decay = CheckedFloat("weight_decay", FLAGS_weight_decay, 0, 1e6);
  o.optimizer.weight_decay_on_bias_and_bn = FLAGS_weight_decay_all;
  o.param_groups = ParseParamGroups(FLAGS_freeze, FLAGS_param_groups);
  const PrecisionSetting ps = ParsePrecision(
      FLAGS_dtype, FLAGS_loss_scale, !gflags::GetCommandLineFlagInfoOrDie("loss_scale").is_default,
      FLAGS_initial_loss_scale);
  o.precision = ps.precision;
  o.dynamic_loss_scale = ps.loss_scale.dynamic;
  o.loss_scale = ps.loss_scale.scale;
  o.scale_growth_interval = FLAGS_scale_growth_interval;
  o.max_skipped_steps = FLAGS_max_skipped_steps;
  const Placement place =
      ParsePlacement(FLAGS_device, !gflags::GetCommandLineFlagInfoOrDie("device").is_default,
                     FLAGS_gpu, FLAGS_gpus, FLAGS_replicas);
  o.device = place.device;
  o.replicas = place.replicas;
  HALFCAF_ENFORCE(o.replicas.empty() || FLAGS_batch_size % static_cast<int>(o.replicas.size()) == 0,
                  "--batch_size (", FLAGS_batch_size, ") must be a multiple of the number of "
                  "replicas (", o.replicas.size(), ")");
  o.seed = FLAGS_seed;
  o.optimize_memory = FLAGS_optimize_memory;
  o.channels_last = FLAGS_channels_last;
  o.blocked_layout = FLAGS_blocked_layout;
  o.conv_algorithm = FLAGS_conv_algorithm;
  o.recompute = FLAGS_recompute;
  return o;
}

class Logger {
 public:
  // `leader`: this process logs (rank 0 of a multi-process run, or the only one).
  Logger(const std::string& csv_path, bool leader, const std::string& tensorboard_dir = "") {
    if (!tensorboard_dir.empty()) tb_.reset(new TensorBoardWriter(tensorboard_dir));
    if (!csv_path.empty()) {
      csv_.open(csv_path);
      HALFCAF_ENFORCE(csv_.good(), csv_path, ": cannot write the CSV log");
      csv_ << "iter,epoch,loss,accuracy,lr,images_per_sec,loss_scale,skipped_steps,"
              "test_loss,test_accuracy\n";
    }
    leader_ = leader;
  }

  void Line(int64_t iter, double epoch, double loss, double acc, double lr, double ips,
            double scale, int64_t skipped, const EvalStats* test, const std::string& extra) {
    ClearProgress();
    std::cout << "iter " << iter << "  epoch " << std::fixed << std::setprecision(2) << epoch
              << std::defaultfloat << "  loss " << Fmt(loss);
    if (!std::isnan(acc)) std::cout << "  acc " << Fmt(acc);  // NaN: the net has none
    std::cout << "  lr " << Fmt(lr) << "  " << Fmt(ips, 5) << " img/s";
    if (scale != 1 || skipped) std::cout << "  loss_scale " << Fmt(scale, 8) << "  skipped " << skipped;
    if (test) std::cout << "  test_loss " << Fmt(test->loss) << "  test_acc " << Fmt(test->accuracy);
    std::cout << extra << std::endl;
    if (!std::cout && !stdout_closed_) {
      // SIGPIPE is ignored: a reader that went away (train_net | head) does not stop training.
      stdout_closed_ = true;
      std::cerr << "train_net: note: standard output is closed (broken pipe); training goes on"
                << (csv_.is_open() ? ", logging to --log_csv" : "") << std::endl;
    }
    if (tb_) {
      std::vector<std::pair<std::string, double>> v = {
          {"train/loss", loss}, {"train/lr", lr}, {"train/images_per_sec", ips},
          {"train/loss_scale", scale}, {"train/skipped_steps", static_cast<double>(skipped)}};
      if (!std::isnan(acc)) v.push_back({"train/accuracy", acc});
      if (test) v.insert(v.end(), {{"test/loss", test->loss}, {"test/accuracy", test->accuracy}});
      tb_->Scalars(iter, v);
    }
    if (csv_.is_open()) {
      csv_ << iter << "," << std::setprecision(6) << epoch << std::setprecision(9) << "," << loss
           << ",";
      if (!std::isnan(acc)) csv_ << acc;
      csv_ << "," << lr << "," << ips << "," << scale << "," << skipped << ",";
      if (test) csv_ << test->loss << "," << test->accuracy;
      else csv_ << ",";
      csv_ << "\n";
      csv_.flush();
    }
  }

  // `loss`: that of the last log line, when there was one.
  void Progress(int64_t iter, int64_t total, bool has_loss, double loss) {
    if (!leader_) return;
    if (!bar_) bar_.reset(new ProgressBar("train_net", total, "it"));
    bar_->Update(iter, has_loss ? "loss " + Fmt(loss) : std::string());
  }

  void ClearProgress() {
    if (bar_) bar_->Clear();
  }

  TensorBoardWriter* tensorboard() { return tb_.get(); }

 private:
  std::ofstream csv_;
  std::unique_ptr<TensorBoardWriter> tb_;
  std::unique_ptr<ProgressBar> bar_;
  bool leader_ = false, stdout_closed_ = false;
};

// Output paths are checked before any work, so a typo does not cost a whole run; the checkpoint
// folder is locked for this run and cleared of the temp files of killed runs.
void PrepareOutputs(bool leader) {
  if (!leader) return;  // other ranks of a multi-process run write nothing
  if (!FLAGS_log_csv.empty()) CheckWritableFile(FLAGS_log_csv, "log_csv");
  if (!FLAGS_summary_json.empty()) CheckWritableFile(FLAGS_summary_json, "summary_json");
  if (!FLAGS_write_plan.empty()) CheckWritableFile(FLAGS_write_plan, "write_plan");
  if (FLAGS_checkpoint_dir.empty()) return;
  std::error_code ec;
  if (!FLAGS_resume) {
    std::filesystem::create_directories(FLAGS_checkpoint_dir, ec);
    HALFCAF_ENFORCE(!ec, "--checkpoint_dir ", FLAGS_checkpoint_dir, ": cannot create the folder (",
                    ec.message(), ")");
  }
  HALFCAF_ENFORCE(!FLAGS_resume ||
                      std::filesystem::exists(FLAGS_checkpoint_dir + "/checkpoint.pb", ec),
                  "--resume: ", FLAGS_checkpoint_dir, "/checkpoint.pb does not exist, so there is "
                  "nothing to resume from");
  CheckWritableFolder(FLAGS_checkpoint_dir, "checkpoint_dir");
  LockFolder(FLAGS_checkpoint_dir, "train_net");
  for (const auto& name : RemoveStaleTempFiles(FLAGS_checkpoint_dir + "/checkpoint.pb")) {
    std::cerr << "train_net: note: removed " << name << ", left by a run that was killed"
              << std::endl;
  }
}

// One batch of input must fit in memory: a clear error naming the flags instead of an
// allocation failure deep in the first step.
void CheckBatchFits(const TrainerOptions& o) {
  if (o.data_format != "synthetic") return;
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t values = FLAGS_batch_size;
  for (int64_t d : o.synthetic_shape) {
    HALFCAF_ENFORCE(d > 0, "--synthetic_shape needs positive sizes, got ", FLAGS_synthetic_shape);
    values = values > kMax / d ? kMax : values * d;
  }
  const double bytes = static_cast<double>(values) * DataTypeSize(o.precision);
  const double memory = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  HALFCAF_ENFORCE(values < kMax, "--batch_size ", FLAGS_batch_size, " with --synthetic_shape ",
                  FLAGS_synthetic_shape, ": one input batch would hold more than 2^63 values");
  HALFCAF_ENFORCE(bytes <= memory, "--batch_size ", FLAGS_batch_size, " with --synthetic_shape ",
                  FLAGS_synthetic_shape, ": one input batch needs ", HumanBytes(bytes),
                  ", more than this machine's ", HumanBytes(memory), " of memory");
}

// Writes the checkpoint; when that fails the error says which checkpoint is left.
void SaveCheckpoint(Trainer* trainer, const std::string& ckpt, int64_t* saved_iter) {
  try {
    trainer->SaveCheckpoint(ckpt);
    *saved_iter = trainer->iteration();
  } catch (EnforceNotMet& e) {
    std::error_code ec;
    e.AddContext("checkpoint of iteration " + std::to_string(trainer->iteration()) +
                 " not written (" +
                 (*saved_iter >= 0 ? ckpt + " still holds iteration " + std::to_string(*saved_iter)
                  : std::filesystem::exists(ckpt, ec) ? "the earlier " + ckpt + " is kept"
                                                     : "there is no earlier checkpoint") +
                 ")");
    throw;
  }
}

// After SIGINT / SIGTERM: the step finished and the checkpoint is written; says how to go on.
int Interrupted(int sig, int64_t iter, int64_t total, const std::string& ckpt) {
  std::cout << std::flush;
  std::cerr << "train_net: stopped by " << (sig == SIGINT ? "SIGINT" : "SIGTERM")
            << " after iteration " << iter << " of " << total << "; "
            << (ckpt.empty() ? "no --checkpoint_dir, so nothing was saved"
                             : "checkpoint written to " + ckpt +
                                   "; to continue, run the same command with --resume")
            << std::endl;
  return 128 + sig;
}

// Values of a tensor on any device, as floats on the host.
std::vector<float> HostFloats(const Tensor& t) {
  Tensor cpu;
  cpu.CopyFrom(t);
  std::vector<float> scratch;
  const float* p = ReadAsFloat(cpu, &scratch);
  return std::vector<float>(p, p + cpu.numel());
}

// --tensorboard_histograms: each trained parameter and its last gradient, unscaled by
// `grad_scale` (the loss scale that step ran with).
void WriteHistograms(Trainer* trainer, float grad_scale, int64_t iter, TensorBoardWriter* tb) {
  const Workspace& ws = *trainer->workspace();
  for (const ParamGradient& pg : trainer->param_gradients()) {
    const std::vector<float> p = HostFloats(ws.GetTensor(trainer->ReplicaBlob(pg.param)));
    tb->Histogram(iter, "params/" + pg.param, p.data(), p.size());
    std::vector<float> g = HostFloats(ws.GetTensor(trainer->ReplicaBlob(pg.grad)));
    for (float& v : g) v /= grad_scale;
    tb->Histogram(iter, "grads/" + pg.param, g.data(), g.size());
  }
}

// --trace's file for process `rank`: the path itself for rank 0, else "<stem>.rank<k><ext>".
std::string RankPath(const std::string& path, int rank) {
  if (path.empty() || rank == 0) return path;
  const std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + ".rank" + std::to_string(rank) +
                             p.extension().string()))
      .string();
}

int Main() {
  HALFCAF_ENFORCE(!FLAGS_net.empty(), "--net is required");
  const bool onnx_model = IsOnnxPath(FLAGS_net);
  HALFCAF_ENFORCE(onnx_model || !FLAGS_init_net.empty(), "--init_net is required");
  HALFCAF_ENFORCE(!onnx_model || FLAGS_init_net.empty(), "--net ", FLAGS_net, " is an ONNX model, "
                  "which holds its own parameters: leave out --init_net");
  HALFCAF_ENFORCE(FLAGS_batch_size > 0, "--batch_size must be positive, got ", FLAGS_batch_size);
  HALFCAF_ENFORCE(FLAGS_log_every > 0, "--log_every must be positive");
  HALFCAF_ENFORCE(!FLAGS_resume || !FLAGS_checkpoint_dir.empty(), "--resume needs --checkpoint_dir");
  CheckFlagsInRange();
  TrainerOptions options = OptionsFromFlags();
  CheckBatchFits(options);
  const Shards shards = ShardsFromFlags();
  HALFCAF_ENFORCE(FLAGS_batch_size % shards.size == 0, "--batch_size (", FLAGS_batch_size,
                  ") is the global batch of the ", shards.size, " processes: it must be a "
                  "multiple of their number");
  const bool leader = shards.rank == 0;
  if (!leader) SilenceStdout();  // rank 0 logs; the others speak only on errors
  InstallStopSignals("train_net");
  PrepareOutputs(leader);
  math::SetBlasThreads(FLAGS_threads);
  JoinRun(shards, "train_net", &options);
  ScopedTrace trace(RankPath(FLAGS_trace, shards.rank));

  NetDef init, forward;
  if (onnx_model) {
    // Imported for the per-replica batch, so shape arithmetic folds for it.
    const int64_t replicas = std::max<int64_t>(static_cast<int64_t>(options.replicas.size()), 1);
    OnnxImportOptions io;
    io.batch_size = FLAGS_batch_size / shards.size / replicas;
    ImportedTrainingOptions to;
    to.label_blob = options.label_blob;
    to.loss_blob = options.loss_blob;
    to.accuracy_blob = options.accuracy_blob;
    to.logits = FLAGS_logits;
    to.num_classes = gflags::GetCommandLineFlagInfoOrDie("num_classes").is_default
                         ? 0 : FLAGS_num_classes;
    const TrainableNets t = MakeTrainable(ImportOnnxFile(FLAGS_net, io), to);
    init = t.init;
    forward = t.forward;
    options.data_blob = t.data_blob;
    options.blob_dims = t.blob_dims;
    if (leader) {
      std::cout << "train_net: " << FLAGS_net << ": input '" << t.data_blob << "', loss on '"
                << t.logits << "'"
                << (t.replaced_classifier ? ", classifier replaced for --num_classes" : "")
                << ", " << t.batch_norms << " BatchNorm layer" << (t.batch_norms == 1 ? "" : "s")
                << " trained" << std::endl;
      if (t.folded_convs > 0) {
        std::cerr << "train_net: warning: " << t.folded_convs << " convolution"
                  << (t.folded_convs == 1 ? " has" : "s have")
                  << " BatchNorm folded in by the exporter (PyTorch's eval-mode export), so it "
                     "does not train as BatchNorm; to fine-tune it, export with "
                     "training=torch.onnx.TrainingMode.TRAINING" << std::endl;
      }
    }
  } else {
    ReadProtoFromFile(FLAGS_init_net, &init);
    ReadProtoFromFile(FLAGS_net, &forward);
  }
  if (!FLAGS_test_net.empty()) ReadProtoFromFile(FLAGS_test_net, &options.test_forward);
  Trainer trainer(init, forward, options);
  const std::string ckpt = FLAGS_checkpoint_dir.empty() ? "" : FLAGS_checkpoint_dir + "/checkpoint.pb";
  HALFCAF_ENFORCE(FLAGS_write_plan.empty() || (!FLAGS_resume && shards.size == 1),
                  "--write_plan writes a run from the init net in one process: not with --resume "
                  "or several processes");
  if (FLAGS_resume) {
    trainer.Resume(ckpt);
  } else {
    trainer.Initialize();
  }
  const int64_t n_train = trainer.train_set_size();
  const int64_t total = FLAGS_iters > 0
                            ? FLAGS_iters
                            : static_cast<int64_t>(std::ceil(FLAGS_epochs * n_train /
                                                             FLAGS_batch_size));
  if (!FLAGS_write_plan.empty()) {
    const PlanDef plan = trainer.TrainingPlan(total, FLAGS_test_every);
    WriteProtoToFile(plan, FLAGS_write_plan, PathWantsText(FLAGS_write_plan));
    std::cout << "train_net: wrote the plan of " << total << " iterations to " << FLAGS_write_plan
              << " (run it with run_plan --plan " << FLAGS_write_plan << ")" << std::endl;
    return 0;
  }
  std::string placement = PlacementString({options.device, options.replicas});
  if (shards.size > 1) {
    placement = std::to_string(shards.size) + " processes (" + placement + " each, gradients "
                "all-reduced over Gloo, " + options.allreduce_algorithm + ")";
  }
  const size_t all_replicas = std::max<size_t>(options.replicas.size(), 1) * shards.size;
  if (all_replicas > 1) {
    placement += ", " + std::to_string(FLAGS_batch_size / all_replicas) + " images each";
  }
  const std::string slow = CpuPrecisionWarning(options.precision, options.device.type);
  if (!slow.empty()) std::cout << "train_net: warning: " << slow << std::endl;
  std::cout << "train_net: "
            << (options.mixed_precision()
                    ? "mixed precision (" + std::string(DataTypeName(options.precision)) + ")"
                    : std::string("float32"))
            << (trainer.ConvolutionSummary().empty() ? "" : ", " + trainer.ConvolutionSummary())
            << (options.recompute != "off" ? ", recomputing " + options.recompute : "")
            << " on " << placement << ", " << n_train << " training samples, batch "
            << FLAGS_batch_size << ", "
            << total << " iterations"
            << (options.mixed_precision() ? ", loss scale " + std::string(options.dynamic_loss_scale
                                                                     ? "dynamic from "
                                                                     : "static ") +
                                      Fmt(options.loss_scale, 8)
                                : std::string())
            << (FLAGS_resume ? ", resumed at iteration " + std::to_string(trainer.iteration())
                             : std::string())
            << std::endl;
  if (!trainer.frozen_params().empty()) {
    const auto& f = trainer.frozen_params();
    std::cout << "train_net: " << f.size() << " parameter" << (f.size() == 1 ? "" : "s")
              << " frozen (--freeze '" << FLAGS_freeze << "'):";
    for (size_t k = 0; k < f.size() && k < 8; ++k) std::cout << " " << f[k];
    std::cout << (f.size() > 8 ? " ..." : "") << std::endl;
  }
  if (options.optimize_memory) {
    std::cout << "train_net: " << trainer.train_memory_plan().Summary(FLAGS_print_memory_plan)
              << std::flush;
  }

  Logger log(leader ? FLAGS_log_csv : "", leader, leader ? FLAGS_tensorboard : "");
  double exchange_s = 0, exposed_s = 0;
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto window_start = t0;
  int64_t images = 0;
  // Read at each log line only (Trainer::ReadStats): the steps in between read nothing back from
  // the device, so the loss check and a label error found on the device (CUDA) show at the next
  // log line, up to --log_every iterations late.
  StepStats last;
  bool has_test = !FLAGS_test_data.empty() || options.data_format == "synthetic";
  int64_t saved_iter = FLAGS_resume ? trainer.iteration() : -1;
  const int64_t first_iter = trainer.iteration();
  // Every process stops at the same step (a signal may reach only some of them).
  auto stopping = [&] { return trainer.AnyShard(StopSignal() != 0); };
  while (trainer.iteration() < total && !stopping()) {
    const bool histograms = log.tensorboard() && FLAGS_tensorboard_histograms > 0 &&
                            (trainer.iteration() + 1) % FLAGS_tensorboard_histograms == 0;
    const float grad_scale = histograms ? trainer.LossScale() : 1.f;
    {
      trace::Span step("step", "train step");
      step.Arg("iteration", trainer.iteration() + 1);
      trainer.Step();
    }
    if (histograms) WriteHistograms(&trainer, grad_scale, trainer.iteration(), log.tensorboard());
    images += FLAGS_batch_size;
    const int64_t iter = trainer.iteration();
    if (FLAGS_trace_iters > 0 && iter - first_iter == FLAGS_trace_iters) {
      log.ClearProgress();
      trace.Finish();
    }
    log.Progress(iter, total, last.steps > 0, last.mean_loss);
    const bool end = iter >= total;
    EvalStats test;
    const bool do_test = has_test && FLAGS_test_every > 0 && iter % FLAGS_test_every == 0;
    if (do_test) test = trainer.Evaluate();
    if (iter % FLAGS_log_every == 0 || end || do_test) {
      last = trainer.ReadStats();
      HALFCAF_ENFORCE((std::isfinite(last.mean_loss) && std::isfinite(last.loss)) ||
                          options.mixed_precision(),
                      "the loss became ", std::isfinite(last.loss) ? last.mean_loss : last.loss,
                      " by iteration ", iter, " (checked every --log_every ", FLAGS_log_every,
                      " iterations; try a lower --base_lr)");
      const double secs = std::chrono::duration<double>(Clock::now() - window_start).count();
      std::string extra;
      if (shards.size > 1 && last.steps > 0) {
        exchange_s += last.exchange_s;
        exposed_s += last.exposed_s;
        extra = "  exchange " + Fmt(1e3 * last.exchange_s / last.steps, 3) + " ms/step (" +
                Fmt(last.exchange_bytes / last.steps / 1048576.0, 3) + " MB), exposed " +
                Fmt(1e3 * last.exposed_s / last.steps, 3) + " ms";
      }
      log.Line(iter, static_cast<double>(iter) * FLAGS_batch_size / n_train, last.mean_loss,
               last.has_accuracy ? last.mean_accuracy : std::nan(""), last.lr, last.steps * FLAGS_batch_size / std::max(secs, 1e-9),
               last.loss_scale, last.skipped_steps, do_test ? &test : nullptr, extra);
      trainer.CheckSkippedSteps();
      window_start = Clock::now();
    }
    if (leader && !ckpt.empty() && FLAGS_checkpoint_every > 0 &&
        iter % FLAGS_checkpoint_every == 0) {
      SaveCheckpoint(&trainer, ckpt, &saved_iter);
    }
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  log.ClearProgress();
  trace.Finish();
  if (leader && !ckpt.empty()) SaveCheckpoint(&trainer, ckpt, &saved_iter);
  if (trainer.iteration() < total) {  // stopped by a signal, here or in another process
    const int sig = StopSignal() != 0 ? StopSignal() : SIGTERM;
    if (!leader) return 128 + sig;  // rank 0 says where the run stopped
    return Interrupted(sig, trainer.iteration(), total, ckpt);
  }
  EvalStats final_test;
  if (has_test) {
    final_test = trainer.Evaluate();
    std::cout << "test: " << final_test.samples << " samples  loss " << Fmt(final_test.loss)
              << "  accuracy " << Fmt(final_test.accuracy) << std::endl;
  }
  const double ips = images / std::max(wall, 1e-9);
  std::cout << "done: " << trainer.iteration() << " iterations in " << Fmt(wall) << " s, "
            << Fmt(ips, 5) << " images/s, " << last.skipped_steps << " skipped steps" << std::endl;
  const int64_t iters_run = trainer.iteration() - first_iter;
  if (leader && !FLAGS_summary_json.empty()) {
    std::ostringstream js;
    js << std::setprecision(9) << "{\n"
       << "  \"iterations\": " << trainer.iteration() << ",\n"
       << "  \"dtype\": \"" << FLAGS_dtype << "\",\n"
       << "  \"batch_size\": " << FLAGS_batch_size << ",\n"
       << "  \"final_loss\": " << last.loss << ",\n"
       << "  \"test_loss\": " << (has_test ? final_test.loss : -1) << ",\n"
       << "  \"test_accuracy\": " << (has_test ? final_test.accuracy : -1) << ",\n"
       << "  \"images_per_sec\": " << ips << ",\n"
       << "  \"skipped_steps\": " << last.skipped_steps << ",\n"
       << "  \"final_loss_scale\": " << last.loss_scale << ",\n"
       << "  \"num_shards\": " << shards.size << ",\n"
       << "  \"exchange_ms_per_step\": " << 1e3 * exchange_s / std::max<int64_t>(iters_run, 1)
       << ",\n"
       << "  \"exposed_ms_per_step\": " << 1e3 * exposed_s / std::max<int64_t>(iters_run, 1)
       << ",\n"
       << "  \"wall_seconds\": " << wall << "\n}\n";
    WriteFileAtomically(FLAGS_summary_json, js.str());
  }
  RemoveTempRendezvous(shards);
  return 0;
}

}  // namespace
}  // namespace halfcaf

int main(int argc, char** argv) {
  return halfcaf::RunTool("train_net",
                          "train_net --net FWD --init_net INIT --train_data PATH [--test_data PATH] "
                          "[--dtype float|float16|bfloat16] [--loss_scale N|dynamic] [--epochs E | --iters N] "
                          "... (see --help). SIGINT/SIGTERM: finish the step, write the "
                          "checkpoint, exit 130/143 (a second signal: at once). A closed stdout "
                          "(train_net | head) does not stop training; it logs on to --log_csv.",
                          argc, argv, halfcaf::Main);
}
