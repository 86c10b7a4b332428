// benchmark: times a zoo model (ResNet-50 / ResNet-18 / LeNet) or a given net, as a full training
// step (Trainer: synthetic data, forward, backward, momentum-SGD update; FP32 or mixed precision)
// or the forward net alone, for each precision x batch size. Reports the median and spread of
// ms per iteration, images/s, the fp16 (bf16) / fp32 speedup, peak memory and the cost per million images;
// optionally a per-operator profile, JSON / CSV / SVG output and side-by-side runs of peers
// (tools/benchmark_peer.h): PyTorch (tools/peers/resnet_pytorch.py) and, for inference, ONNX
// Runtime running the same model exported by halfcaf (tools/peers/resnet_ort.py).
#include <gflags/gflags.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include "core/allocator.h"
#include "core/argument.h"
#include "core/float_io.h"
#include "core/math.h"
#include "core/net.h"
#include "core/operator.h"
#include "core/proto_io.h"
#include "core/scratch.h"
#include "core/trace.h"
#include "models/imported_model.h"
#include "models/inference_optimize.h"
#include "models/memory_plan.h"
#include "models/mixed_precision.h"
#include "models/model_helper.h"
#include "models/op_sequence.h"
#include "models/trainer.h"
#include "models/zoo.h"
#include "onnx/onnx_import.h"
#include "tools/benchmark_ceiling.h"
#include "tools/benchmark_max_batch.h"
#include "tools/benchmark_memory.h"
#include "tools/benchmark_output.h"
#include "tools/benchmark_overhead.h"
#include "tools/benchmark_peer.h"
#include "tools/benchmark_price.h"
#include "tools/benchmark_profile.h"
#include "tools/benchmark_progress.h"
#include "tools/benchmark_session.h"
#include "tools/multi_process.h"
#include "tools/tool_common.h"

#ifdef HALFCAF_WITH_CUDA
#include <cuda_runtime.h>

#include "gpu/cuda_context.h"
#endif

DEFINE_string(model, "", "zoo model: resnet50, resnet18 or lenet (or give --net and --init_net), "
              "or acgan: the AC-GAN's training iteration (a discriminator step and a generator "
              "step, timed apart; models/acgan.h)");
DEFINE_string(net, "", "forward net with a loss (text or binary NetDef), or an ONNX model "
              "(model.onnx: its input is the data; train mode adds the loss), instead of --model");
DEFINE_string(init_net, "", "init net of --net");
DEFINE_string(input_shape, "", "C,H,W of one sample (default: the zoo model's; needed with --net)");
DEFINE_int32(image_size, 0, "zoo models: input height and width (0: 224 for ResNet, 28 for LeNet)");
DEFINE_int32(num_classes, 0, "classes (0: 1000 for ResNet, 10 for LeNet and --net)");
DEFINE_string(device, "cpu", "cpu or cuda");
DEFINE_int32(gpu, 0, "CUDA device id");
DEFINE_string(gpus, "", "train data-parallel on these CUDA devices, e.g. 0,1 (implies --device cuda)");
DEFINE_int32(replicas, 0, "data-parallel replicas (default: one per --gpus entry, else 1); "
             "--batch_size is the total over the replicas");
DEFINE_string(precision, "fp32,fp16", "comma-separated: fp32 (FP32), fp16 and/or bf16 (mixed "
              "precision in float16 or bfloat16)");
DEFINE_string(batch_size, "32,64", "comma-separated batch sizes");
DEFINE_string(order, "NCHW", "storage order: NCHW or NHWC");
DEFINE_string(channels_last, "auto", "training: convolutions and the ops between them in NHWC, "
              "parameters NCHW: auto (bf16 on CPUs with BF16 kernels), on or off");
DEFINE_string(blocked_layout, "auto", "training, fp32 on the CPU: convolutions, batch "
              "normalization and the ops between them on oneDNN's channel blocks: auto, on, off");
DEFINE_string(conv_algorithm, "direct", "fp32 on the CPU: direct or winograd (3 x 3 convolutions)");
DEFINE_string(recompute, "off", "training: activations made again in the backward pass "
              "instead of kept (less memory): off, elementwise or all (convolutions too)");
DEFINE_string(mode, "train", "train (forward + backward + update) or forward (inference)");
DEFINE_int32(iters, 50, "timed iterations per configuration");
DEFINE_int32(warmup, 10, "untimed iterations before them");
DEFINE_bool(per_op, false, "also time every operator (a second pass of --iters iterations)");
DEFINE_bool(observer_overhead, false, "also time the net's run without observer hooks (its ops "
            "in a loop), with the hooks and no observer (the default), and traced (--trace's "
            "observer), interleaved; prints the three");
DEFINE_bool(
    ceiling, false,
    "CPU: also measure this machine's GEMM rate on these threads and give "
    "each configuration's share of the ceiling it sets (rate / the step's FLOPs per image)");
DEFINE_int32(per_op_top, 15, "--per_op: how many single operators to list (0: all)");
DEFINE_string(json, "", "write the results as JSON");
DEFINE_string(trace, "", "write a timeline of the sweep (every net and operator run, each "
              "configuration and step; Chrome trace-event JSON for Perfetto UI or "
              "chrome://tracing) to this file");
DEFINE_string(csv, "", "write the results as CSV (one row per configuration)");
DEFINE_double(price_per_hour, -1, "machine price in $/hour, for the cost per million images "
              "(default: by device, tools/benchmark_price.h: H200 4.00, H100 3.00, A100 1.30 "
              "on demand in May 2026; CPU 0.10, a 2-vCPU VM)");
DEFINE_string(plot, "", "write an SVG chart of images/s against batch size");
DEFINE_int32(threads, 0, "CPU threads for BLAS (0: all cores)");
DEFINE_double(loss_scale, 128, "fp16 training: static loss scale (bf16 trains unscaled)");
DEFINE_string(compare, "", "comma-separated peers run with the same settings: `pytorch` "
              "(torchvision's ResNet), `ort` (ONNX Runtime on the CPU, --mode forward, fp32: the "
              "timed model exported by halfcaf with its parameters), or `pytorch,ort`");
DEFINE_string(python, "/usr/bin/python3", "--compare pytorch: the Python interpreter");
DEFINE_string(ort_python, "", "--compare ort: the Python interpreter with onnxruntime (default: "
              "<source>/.venv-ort/bin/python, which tools/setup_ort.sh makes)");
DEFINE_string(peer_script, "",
              "--compare: the peer script (default: tools/peers/resnet_pytorch.py of the source "
              "tree, found from the binary's location or the current folder)");
DEFINE_int32(peer_timeout_s, 0,
             "--compare: seconds the peer may run (0: no limit); halfcaf's own results (table, "
             "--json, --csv, --plot) are written before the peer starts, so a slow peer loses "
             "nothing. The peer gets LD_LIBRARY_PATH from HALFCAF_PEER_LD_LIBRARY_PATH when that is "
             "set (empty: unset), so a library path meant for halfcaf does not reach PyTorch");
DEFINE_bool(max_batch, false, "instead of timing: find the largest batch that fits, per "
            "precision, by doubling then bisecting from the first --batch_size (each try runs "
            "two steps); the limit is the GPU's memory, or --mem_limit_mb on CPU");
DEFINE_int64(mem_limit_mb, 0, "CPU: halfcaf's CPU memory (tensors and operator scratch) may not "
             "exceed this; an over-limit configuration stops with 'out of memory' (0: no limit)");
DEFINE_bool(optimize_memory, true, "memory planning: the temporaries of the timed nets share "
            "buffers when their lifetimes do not overlap (models/memory_plan.h)");
DEFINE_bool(optimize_inference, true, "--mode forward on CPU: the inference plan (SpatialBN folded "
            "into Conv, Relu and Add fused into it, NHWC convolution regions; "
            "models/inference_optimize.h)");
DEFINE_string(data_blob, "data", "--net: the data blob");
DEFINE_string(label_blob, "label", "--net: the label blob");
DEFINE_string(loss_blob, "loss", "--net: the loss blob");
DEFINE_uint32(seed, 1, "seed for initialisation and data");
DEFINE_bool(exhaustive_search, false,
            "cuda: every convolution (forward and gradient) chooses its cuDNN algorithms by timed "
            "search (cudnnFind*Ex, the Conv op's exhaustive_search=1) among those that need at most "
            "--ws_nbytes_limit bytes of workspace, as the PyTorch peer does "
            "(torch.backends.cudnn.benchmark=True): use it for a like-for-like comparison; "
            "default: cuDNN's heuristics (cudnnGet*_v7)");
DEFINE_int64(ws_nbytes_limit, 64 << 20,
             "cuda: workspace limit in bytes of every convolution's algorithm choice, heuristic "
             "or --exhaustive_search (the Conv op's ws_nbytes_limit; default 64 MiB, Caffe2's); "
             "PyTorch's benchmark mode has no fixed limit (it tries what it can allocate)");

namespace halfcaf {
namespace {

using Clock = std::chrono::steady_clock;

// Where the benchmark runs (from --device / --gpu / --gpus / --replicas), set once in Main.
Placement g_place;
using bench::OpTypeStat;
using bench::Result;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void SyncDevice() {
#ifdef HALFCAF_WITH_CUDA
  if (FLAGS_device == "cuda") {
    cudaError_t e = cudaDeviceSynchronize();
    HALFCAF_ENFORCE(e == cudaSuccess, "cudaDeviceSynchronize: ", cudaGetErrorString(e));
  }
#endif
}

bool IsOutOfMemory(const std::string& what) {
  std::string s = what;
  std::transform(s.begin(), s.end(), s.begin(), ::tolower);
  return s.find("out of memory") != std::string::npos ||
         (s.find("out of") != std::string::npos && s.find("memory") != std::string::npos);
}

// ---- the model ----------------------------------------------------------------------------------

struct Model {
  NetDef init, forward;
  std::vector<int64_t> chw;  // one sample
  int num_classes = 10;
  std::map<std::string, std::vector<int64_t>> blob_dims;  // an imported model's static dims
};

Model LoadModel(bool is_test) {
  Model m;
  if (!FLAGS_model.empty()) {
    const bool lenet = FLAGS_model == "lenet";
    const int size = FLAGS_image_size > 0 ? FLAGS_image_size : (lenet ? 28 : 224);
    m.num_classes = FLAGS_num_classes > 0 ? FLAGS_num_classes : (lenet ? 10 : 1000);
    ModelHelper helper(FLAGS_model, FLAGS_order, is_test);
    if (lenet) {
      BuildLeNet(&helper, m.num_classes, 1, size);
      m.chw = {1, size, size};
    } else {
      BuildResNet(&helper, FLAGS_model == "resnet50" ? 50 : 18, m.num_classes, size);
      m.chw = {3, size, size};
    }
    m.init = helper.init_net();
    m.forward = helper.net();
  } else if (IsOnnxPath(FLAGS_net)) {
    // An ONNX model: imported for the first batch size (so shape arithmetic folds), its input
    // the data; in train mode with SoftmaxWithLoss on its logits (as train_net does).
    HALFCAF_ENFORCE(FLAGS_init_net.empty(), "--net ", FLAGS_net, " is an ONNX model, which holds "
                    "its own parameters: leave out --init_net");
    OnnxImportOptions io;
    io.batch_size = ParsePositiveInts(FLAGS_batch_size, "batch_size")[0];
    const ImportedNet imported = ImportOnnxFile(FLAGS_net, io);
    HALFCAF_ENFORCE(imported.inputs.size() == 1, "--net ", FLAGS_net, " has ",
                    imported.inputs.size(), " inputs; benchmark feeds one (the images)");
    FLAGS_data_blob = imported.inputs[0].name;
    const std::vector<int64_t>& dims = imported.inputs[0].dims;
    if (dims.size() == 4 && dims[1] > 0 && dims[2] > 0 && dims[3] > 0) {
      m.chw = {dims[1], dims[2], dims[3]};
    }
    if (is_test) {
      m.init = imported.init;
      m.forward = imported.predict;
      m.num_classes = FLAGS_num_classes > 0 ? FLAGS_num_classes : 10;
    } else {
      ImportedTrainingOptions to;
      to.label_blob = FLAGS_label_blob;
      to.loss_blob = FLAGS_loss_blob;
      const TrainableNets t = MakeTrainable(imported, to);
      m.init = t.init;
      m.forward = t.forward;
      m.blob_dims = t.blob_dims;
      auto logits = t.blob_dims.find(t.logits);
      m.num_classes = FLAGS_num_classes > 0 ? FLAGS_num_classes
                      : logits != t.blob_dims.end() && logits->second.size() == 2
                          ? static_cast<int>(logits->second[1])
                          : 10;
    }
  } else {
    ReadProtoFromFile(FLAGS_init_net, &m.init);
    ReadProtoFromFile(FLAGS_net, &m.forward);
    m.num_classes = FLAGS_num_classes > 0 ? FLAGS_num_classes : 10;
  }
  SetConvAlgoSearch(&m.forward, FLAGS_exhaustive_search, FLAGS_ws_nbytes_limit);
  if (!FLAGS_input_shape.empty()) {
    m.chw = ParsePositiveInts(FLAGS_input_shape, "input_shape");
    HALFCAF_ENFORCE(m.chw.size() == 3, "--input_shape must be C,H,W, got '", FLAGS_input_shape,
                    "'");
  }
  HALFCAF_ENFORCE(m.chw.size() == 3, "--net ", FLAGS_net, ": its input's sample shape is not "
                  "fixed; give --input_shape C,H,W");
  return m;
}

// ---- sessions: what one timed iteration runs ----------------------------------------------------

// Multi-process runs: the world and exchange settings every TrainSession uses (JoinRun).
TrainerOptions g_dist;
std::map<std::string, std::string> g_conv_notes;  // precision -> Trainer::ConvolutionSummary

class TrainSession : public bench::Session {
 public:
  TrainSession(const Model& m, DataType precision, int64_t batch) {
    TrainerOptions o;
    o.data_format = "synthetic";
    o.synthetic_shape = m.chw;
    o.num_classes = m.num_classes;
    o.synthetic_count = std::max<int64_t>(1024, batch);
    o.order = FLAGS_order;
    o.channels_last = FLAGS_channels_last;
    o.blocked_layout = FLAGS_blocked_layout;
    o.conv_algorithm = FLAGS_conv_algorithm;
    o.recompute = FLAGS_recompute;
    o.batch_size = batch;
    o.data_blob = FLAGS_data_blob;
    o.label_blob = FLAGS_label_blob;
    o.loss_blob = FLAGS_loss_blob;
    o.precision = precision;
    o.loss_scale = precision == DataType::FLOAT16 ? static_cast<float>(FLAGS_loss_scale) : 1.f;
    o.optimizer.base_lr = 0.01f;
    o.optimizer.momentum = 0.9f;
    o.seed = FLAGS_seed;
    o.device = g_place.device;
    o.replicas = g_place.replicas;
    o.world = g_dist.world;
    o.allreduce_algorithm = g_dist.allreduce_algorithm;
    o.optimize_memory = FLAGS_optimize_memory;
    o.blob_dims = m.blob_dims;
    o.bucket_bytes = g_dist.bucket_bytes;
    trainer_ = std::make_unique<Trainer>(m.init, m.forward, o);
    trainer_->Initialize();
    const std::string how = trainer_->ConvolutionSummary();  // for the header (RunInfo)
    if (!how.empty()) g_conv_notes[bench::PrecisionName(precision)] = how;
    // Split into parts around the exchanges across processes; --per_op is refused there.
    if (!o.world) net_ = trainer_->workspace()->GetNet(trainer_->train_net().name());
  }
  void StartTiming() override {
    trainer_->ReadStats();
    steps_ = 0;
  }
  std::pair<double, double> ExchangeMs() override {
    if (steps_ == 0) return {0, 0};
    const StepStats s = trainer_->ReadStats();
    skipped_ = s.skipped_steps;
    return {1e3 * s.exchange_s / steps_, 1e3 * s.exposed_s / steps_};
  }
  // The trainer reads nothing back per step; the timing needs the step done.
  void Step() override {
    trainer_->Step();
    SyncDevice();
    ++steps_;
  }
  NetBase* net() override { return net_; }
  Workspace* workspace() override { return trainer_->workspace(); }
  int64_t skipped_steps() override {
    return steps_ > 0 ? trainer_->ReadStats().skipped_steps : skipped_;
  }

 private:
  std::unique_ptr<Trainer> trainer_;
  NetBase* net_ = nullptr;
  int64_t steps_ = 0, skipped_ = 0;
};

// The forward net alone, on fixed random inputs fed once. fp16 / bf16: the mixed-precision forward
// net (16-bit data, 16-bit copies of the Conv/FC parameters made by the init net).
class ForwardSession : public bench::Session {
 public:
  ForwardSession(const Model& m, DataType precision, int64_t batch) {
    NetDef init = m.init, fwd = m.forward;
    if (precision != DataType::FLOAT) {
      std::set<std::string> masters;
      for (const auto& p : ParamsFromNets(init, fwd)) {
        if (p.role != ParamRole::BN_RUNNING_MEAN && p.role != ParamRole::BN_RUNNING_VAR) {
          masters.insert(p.name);
        }
      }
      MixedPrecisionResult mp = ToMixedPrecision(fwd, {FLAGS_data_blob}, masters, precision);
      fwd = mp.net;
      for (const auto& p : mp.fp16_params) {
        *init.add_op() = MakeOperatorDef(CastOpType(DataType::FLOAT, precision), "", {p},
                                         {LowPrecisionCopyName(p, precision)});
      }
    }
    const bool cuda = FLAGS_device == "cuda";
    DeviceOption dev;
    if (cuda) {
      dev.set_device_type(static_cast<int>(DeviceType::CUDA));
      dev.set_device_id(FLAGS_gpu);
      *init.mutable_device_option() = dev;
      *fwd.mutable_device_option() = dev;
    }
    // Inputs, made on the CPU and copied to the device once.
    std::vector<int64_t> dims{batch, m.chw[0], m.chw[1], m.chw[2]};
    if (FLAGS_order == "NHWC") dims = {batch, m.chw[1], m.chw[2], m.chw[0]};
    std::mt19937 rng(FLAGS_seed);
    std::normal_distribution<float> normal;
    NetDef feed;
    feed.set_name("feed");
    const std::string suffix = cuda ? "_cpu" : "";
    Tensor* data = ws_.CreateTensor(FLAGS_data_blob + suffix);
    data->Resize(dims);
    {
      std::vector<float> scratch;
      FloatWriter w(data, precision, &scratch);
      for (int64_t i = 0; i < data->numel(); ++i) w.data()[i] = normal(rng);
      w.Commit();
    }
    std::vector<std::string> fed{FLAGS_data_blob};
    if (NetReads(fwd, FLAGS_label_blob)) {
      Tensor* label = ws_.CreateTensor(FLAGS_label_blob + suffix);
      label->Resize({batch});
      std::uniform_int_distribution<int32_t> cls(0, m.num_classes - 1);
      int32_t* l = label->mutable_data<int32_t>();
      for (int64_t i = 0; i < batch; ++i) l[i] = cls(rng);
      fed.push_back(FLAGS_label_blob);
    }
    if (cuda) {
      for (const auto& b : fed) {
        OperatorDef copy = MakeOperatorDef("CopyCPUToGPU", "", {b + "_cpu"}, {b});
        *copy.mutable_device_option() = dev;
        *feed.add_op() = copy;
      }
      ws_.RunNetOnce(feed);
    }
    SetGlobalSeed(FLAGS_seed);
    ws_.RunNetOnce(init);
    if (fwd.name().empty()) fwd.set_name("forward");
    if (FLAGS_optimize_inference && !cuda) {
      InferenceOptions io;
      io.keep = {FLAGS_loss_blob};
      io.winograd = ResolveWinograd(FLAGS_conv_algorithm, DataType::FLOAT, DeviceType::CPU);
      const InferenceReport r = OptimizeForInference(&fwd, &ws_, io);
      if (!reported_inference_plan_) std::cerr << "benchmark: " << r.Summary() << "\n";
      reported_inference_plan_ = true;
    }
    if (FLAGS_optimize_memory) {
      MemoryPlanOptions o;
      o.keep = {FLAGS_loss_blob};
      ApplyMemoryPlan(PlanMemory(fwd, o), &fwd);
    }
    net_ = ws_.CreateNet(fwd);
  }
  void Step() override {
    net_->Run();
    SyncDevice();
  }
  NetBase* net() override { return net_; }
  Workspace* workspace() override { return &ws_; }

 private:
  Workspace ws_;
  NetBase* net_ = nullptr;
  static inline bool reported_inference_plan_ = false;
};

// A training step or the forward net (--mode) of `precision` at `batch`.
std::unique_ptr<bench::Session> MakeSession(const Model& model, const std::string& precision,
                                     int64_t batch) {
  const DataType type = bench::PrecisionType(precision);
  if (FLAGS_model == "acgan") {
    return std::make_unique<bench::GanSession>(type, batch, g_place.device,
                                               static_cast<float>(FLAGS_loss_scale), FLAGS_seed,
                                               FLAGS_channels_last, FLAGS_blocked_layout,
                                               FLAGS_optimize_memory, FLAGS_recompute, SyncDevice);
  }
  if (FLAGS_mode == "train") return std::make_unique<TrainSession>(model, type, batch);
  return std::make_unique<ForwardSession>(model, type, batch);
}

// ---- the largest batch that fits -----------------------------------------------------------------

// Whether two steps of `precision` at `batch` run without running out of memory.
bool Fits(const Model& model, const std::string& precision, int64_t batch, Progress* progress) {
  const std::string what = FLAGS_model.empty() ? FLAGS_net : FLAGS_model;
  progress->Show(what + " " + precision + " batch " + std::to_string(batch), "trying", 1, 1, 0);
  bool ok = true;
  try {
    std::unique_ptr<bench::Session> s = MakeSession(model, precision, batch);
    s->Step();
    s->Step();
  } catch (const std::bad_alloc&) {
    ok = false;
  } catch (const EnforceNotMet& e) {
    if (!IsOutOfMemory(e.what())) throw;
    ok = false;
  }
  ReleaseScratch();  // what the try grew, so the next one starts from the same memory
#ifdef HALFCAF_WITH_CUDA
  if (FLAGS_device == "cuda") CudaEmptyCache();
#endif
  progress->Clear();
  return ok;
}

int64_t FindMaxBatch(const Model& model, const std::string& precision, int64_t start,
                     Progress* progress) {
  return bench::LargestFitting(start, [&](int64_t b) { return Fits(model, precision, b, progress); });
}

// ---- one configuration --------------------------------------------------------------------------

Result RunConfig(const Model& model, const std::string& precision, int64_t batch,
                 Progress* progress) {
  Result r;
  r.precision = precision;
  r.batch_size = batch;
  const std::string what = FLAGS_model.empty() ? FLAGS_net : FLAGS_model;
  const std::string label = what + " " + precision + " batch " + std::to_string(batch);
  PeakMemory mem(FLAGS_device == "cuda");
  mem.Start();
  trace::Span config_span("benchmark", label);
  try {
    std::unique_ptr<bench::Session> s = MakeSession(model, precision, batch);
    for (int i = 0; i < FLAGS_warmup; ++i) {
      progress->Show(label, "warm-up", i + 1, FLAGS_warmup, r.ms.empty() ? 0 : r.ms.back());
      trace::Span step("step", "warm-up step");
      s->Step();
    }
    s->StartTiming();
    r.part_names = s->PartNames();
    r.part_ms.assign(r.part_names.size(), {});
    for (int i = 0; i < FLAGS_iters; ++i) {
      progress->Show(label, "timing", i + 1, FLAGS_iters, r.ms.empty() ? 0 : r.ms.back());
      const auto t0 = Clock::now();
      {
        trace::Span step("step", "timed step");
        s->Step();
      }
      r.ms.push_back(MsSince(t0));
      const std::vector<double> parts = s->LastPartMs();
      for (size_t k = 0; k < parts.size() && k < r.part_ms.size(); ++k) {
        r.part_ms[k].push_back(parts[k]);
      }
    }
    std::tie(r.exchange_ms, r.exposed_ms) = s->ExchangeMs();
    r.skipped_steps = s->skipped_steps();
    if (FLAGS_ceiling) r.step_flops = bench::StepFlops(s.get(), SyncDevice);
    if (FLAGS_per_op) {
      // The timed net, or each part's (the AC-GAN's two steps, in their own tables).
      std::vector<NetBase*> nets = s->PartNets();
      if (nets.empty()) nets = {s->net()};
      ProfileNets(nets, label, FLAGS_iters, FLAGS_per_op_top, progress, SyncDevice, &r);
    }
    if (FLAGS_observer_overhead) {
      progress->Clear();
      MeasureObserverOverhead(s->net(), label, FLAGS_iters, SyncDevice);
    }
    r.peak_memory_mb = mem.PeakMb();
  } catch (const std::bad_alloc&) {
    r.status = "out of memory";
    r.error = "out of memory";
  } catch (const EnforceNotMet& e) {
    if (!IsOutOfMemory(e.what())) throw;
    r.status = "out of memory";
    r.error = e.what();
  }
  progress->Clear();
  if (r.status != "ok") {
    std::cerr << "benchmark: " << label << ": out of memory, skipped (" << r.error << ")"
              << std::endl;
    r.ms.clear();
  }
  bench::Summarise(&r, FLAGS_price_per_hour);
  return r;
}

// ---- main ---------------------------------------------------------------------------------------

int Main() {
  const bool zoo = !FLAGS_model.empty();
  HALFCAF_ENFORCE(zoo || !FLAGS_net.empty(),
                  "give --model (resnet50, resnet18, lenet, acgan) or --net");
  HALFCAF_ENFORCE(!(zoo && !FLAGS_net.empty()), "give --model or --net, not both");
  HALFCAF_ENFORCE(!zoo || FLAGS_model == "resnet50" || FLAGS_model == "resnet18" ||
                      FLAGS_model == "lenet" || FLAGS_model == "acgan",
                  "--model must be resnet50, resnet18, lenet or acgan, got '", FLAGS_model, "'");
  const bool gan = FLAGS_model == "acgan";
  HALFCAF_ENFORCE(
      !gan || (FLAGS_mode == "train" && FLAGS_order == "NCHW" && !FLAGS_max_batch &&
               FLAGS_gpus.empty() && FLAGS_replicas <= 1 && FLAGS_conv_algorithm == "direct"),
      "--model acgan times its training iteration on one device, NCHW, with its 4 x 4 "
      "convolutions direct: leave out --mode forward, --order NHWC, --max_batch, "
      "--gpus, --replicas and --conv_algorithm");
  const bool onnx = !zoo && IsOnnxPath(FLAGS_net);
  HALFCAF_ENFORCE(zoo || onnx || !FLAGS_init_net.empty(), "--net needs --init_net");
  HALFCAF_ENFORCE(zoo || onnx || !FLAGS_input_shape.empty(),
                  "--net needs --input_shape C,H,W (the shape of one sample)");
  g_place = ParsePlacement(FLAGS_device,
                           !gflags::GetCommandLineFlagInfoOrDie("device").is_default, FLAGS_gpu,
                           FLAGS_gpus, FLAGS_replicas);
  if (g_place.device.type == DeviceType::CUDA) {
    FLAGS_device = "cuda";
    FLAGS_gpu = g_place.device.id;
  }
  HALFCAF_ENFORCE(FLAGS_order == "NCHW" || FLAGS_order == "NHWC",
                  "--order must be NCHW or NHWC, got '", FLAGS_order, "'");
  HALFCAF_ENFORCE(FLAGS_mode == "train" || FLAGS_mode == "forward",
                  "--mode must be train or forward, got '", FLAGS_mode, "'");
  HALFCAF_ENFORCE(FLAGS_iters > 0, "--iters must be positive, got ", FLAGS_iters);
  CheckNonNegative(
      {{"warmup", FLAGS_warmup}, {"threads", FLAGS_threads}, {"per_op_top", FLAGS_per_op_top}});
  HALFCAF_ENFORCE(FLAGS_price_per_hour >= 0 ||
                      gflags::GetCommandLineFlagInfoOrDie("price_per_hour").is_default,
                  "--price_per_hour must be >= 0, got ", FLAGS_price_per_hour);
  HALFCAF_ENFORCE(FLAGS_loss_scale > 0, "--loss_scale must be positive, got ", FLAGS_loss_scale);
  HALFCAF_ENFORCE(FLAGS_image_size >= 0 && FLAGS_num_classes >= 0,
                  "--image_size and --num_classes must be >= 0");
  const bench::Peers peers = bench::ParseCompare(FLAGS_compare);
  HALFCAF_ENFORCE(!peers.pytorch || FLAGS_model == "resnet50" || FLAGS_model == "resnet18" ||
                      gan,
                  "--compare pytorch needs --model resnet50, resnet18 or acgan");
  if (peers.ort) {
    HALFCAF_ENFORCE(FLAGS_mode == "forward", "--compare ort times inference in ONNX Runtime: it "
                    "needs --mode forward, got --mode ", FLAGS_mode);
    HALFCAF_ENFORCE(FLAGS_device == "cpu" && FLAGS_gpus.empty(), "--compare ort runs ONNX "
                    "Runtime on the CPU: it needs --device cpu");
    HALFCAF_ENFORCE(onnx || FLAGS_order == "NCHW", "--compare ort exports the timed net to ONNX, "
                    "which takes NCHW nets only: use --order NCHW");
    HALFCAF_ENFORCE(onnx || OnnxAvailable(), "--compare ort exports the timed net to ONNX: ",
                    OnnxMissingHint());
  }
  HALFCAF_ENFORCE(FLAGS_ws_nbytes_limit >= 0, "--ws_nbytes_limit must be >= 0, got ",
                  FLAGS_ws_nbytes_limit);
  if (peers.pytorch && FLAGS_device == "cuda" && !FLAGS_exhaustive_search) {
    std::cerr << "benchmark: note: the PyTorch peer times cuDNN's algorithms "
                 "(cudnn.benchmark=True) while halfcaf uses its heuristics; add "
                 "--exhaustive_search for a like-for-like comparison"
              << std::endl;
  }
  const std::vector<int64_t> batches = ParsePositiveInts(FLAGS_batch_size, "batch_size");
  const Shards shards = ShardsFromFlags();
  if (shards.size > 1) {
    HALFCAF_ENFORCE(FLAGS_mode == "train", "--num_shards / mpirun time data-parallel training "
                    "across processes (--mode train)");
    HALFCAF_ENFORCE(FLAGS_compare.empty(), "--compare pytorch: the peer trains in one process; "
                    "compare without --num_shards / mpirun");
    HALFCAF_ENFORCE(!FLAGS_per_op, "--per_op times the operators of one process; leave it out "
                    "with --num_shards / mpirun");
    const int64_t per = shards.size * static_cast<int64_t>(std::max<size_t>(g_place.replicas.size(), 1));
    for (int64_t b : batches) {
      HALFCAF_ENFORCE(b % per == 0, "--batch_size ", b, " is the global batch: it must be a "
                      "multiple of the number of processes times replicas (", per, ")");
    }
    if (shards.rank != 0) SilenceStdout();  // rank 0 reports; the others speak only on errors
  }
  if (!g_place.replicas.empty()) {
    const int64_t n = static_cast<int64_t>(g_place.replicas.size());
    HALFCAF_ENFORCE(FLAGS_mode == "train", "--replicas / --gpus time data-parallel training "
                    "(--mode train)");
    HALFCAF_ENFORCE(FLAGS_compare.empty(), "--compare pytorch: the peer trains on one device; "
                    "compare without --replicas / --gpus");
    for (int64_t b : batches) {
      HALFCAF_ENFORCE(b % n == 0, "--batch_size ", b, " is not a multiple of the number of "
                      "replicas (", n, ")");
    }
  }
  const std::vector<std::string> precisions = SplitList(FLAGS_precision);
  HALFCAF_ENFORCE(!precisions.empty(), "--precision is empty");
  for (const auto& p : precisions) {
    HALFCAF_ENFORCE(p == "fp32" || p == "fp16" || p == "bf16",
                    "--precision: expected fp32, fp16 and/or bf16, got '", p, "'");
  }
  if (FLAGS_device == "cuda") {
    HALFCAF_ENFORCE(OperatorRegistry::HasType(DeviceType::CUDA, "CopyCPUToGPU"),
                    "--device cuda needs the CUDA backend, which this build of halfcaf does not "
                    "have (configure with -DHALFCAF_USE_CUDA=ON where the CUDA toolkit and cuDNN "
                    "are installed)");
#ifdef HALFCAF_WITH_CUDA
    HALFCAF_ENFORCE(FLAGS_gpu >= 0 && FLAGS_gpu < NumCudaDevices(), "--gpu ", FLAGS_gpu,
                    ": this machine has ", NumCudaDevices(), " CUDA device(s)");
    for (const Device& d : g_place.replicas) {
      HALFCAF_ENFORCE(d.id < NumCudaDevices(), "--gpus: GPU ", d.id, " does not exist (",
                      NumCudaDevices(), " CUDA device(s))");
    }
    cudaSetDevice(FLAGS_gpu);
#endif
  }
  HALFCAF_ENFORCE(FLAGS_mem_limit_mb >= 0, "--mem_limit_mb must be >= 0, got ", FLAGS_mem_limit_mb);
  HALFCAF_ENFORCE(FLAGS_mem_limit_mb == 0 || FLAGS_device == "cpu",
                  "--mem_limit_mb limits CPU memory; on a GPU the limit is the device's memory");
  HALFCAF_ENFORCE(!FLAGS_ceiling || (FLAGS_device == "cpu" && shards.size == 1 &&
                                     g_place.replicas.empty() && !FLAGS_max_batch),
                  "--ceiling measures the CPU's GEMM rate for one device in one process: it needs "
                  "--device cpu, and no --num_shards, --replicas or --max_batch");
  if (FLAGS_max_batch) {
    HALFCAF_ENFORCE(FLAGS_device == "cuda" || FLAGS_mem_limit_mb > 0,
                    "--max_batch on CPU needs --mem_limit_mb (the memory the batch must fit in)");
    HALFCAF_ENFORCE(shards.size == 1 && g_place.replicas.empty() && FLAGS_compare.empty(),
                    "--max_batch searches one device in one process: leave out --num_shards, "
                    "--replicas / --gpus and --compare");
  }
  SetCpuMemoryLimit(static_cast<size_t>(FLAGS_mem_limit_mb) << 20);
  math::SetBlasThreads(FLAGS_threads);
  JoinRun(shards, "benchmark", &g_dist);

  Model model;
  if (gan) {
    model.chw = {1, 28, 28};
  } else {
    model = LoadModel(FLAGS_mode == "forward");
  }
  bench::RunInfo info;
  info.model = zoo ? FLAGS_model : FLAGS_net;
  info.mode = FLAGS_mode;
  info.device = FLAGS_device == "cuda" ? "cuda:" + std::to_string(FLAGS_gpu) : "cpu";
  if (!g_place.replicas.empty()) info.device = PlacementString(g_place);
  if (shards.size > 1) {
    info.device = std::to_string(shards.size) + " processes x " + info.device;
  }
  info.num_shards = shards.size;
  info.order = FLAGS_order;
  info.recompute = FLAGS_mode == "train" ? FLAGS_recompute : "off";
  info.iters = FLAGS_iters;
  info.warmup = FLAGS_warmup;
  info.threads = FLAGS_threads;
  if (FLAGS_price_per_hour < 0) {
    std::string gpu;
#ifdef HALFCAF_WITH_CUDA
    if (FLAGS_device == "cuda") gpu = GetCudaDeviceInfo(FLAGS_gpu).name;
#endif
    const bench::MachinePrice price = bench::DefaultPrice(gpu);
    FLAGS_price_per_hour = price.per_hour;
    info.price_source = price.what;
  }
  info.price_per_hour = FLAGS_price_per_hour;
  info.memory_kind = PeakMemory::Kind(FLAGS_device == "cuda", !g_place.replicas.empty());
  info.conv_algo_search = FLAGS_exhaustive_search ? "exhaustive" : "heuristic";
  info.ws_nbytes_limit = FLAGS_ws_nbytes_limit;
  info.cuda = FLAGS_device == "cuda";
  const int64_t threads = FLAGS_threads > 0 ? FLAGS_threads : sysconf(_SC_NPROCESSORS_ONLN);
  if (FLAGS_device == "cpu") info.device += " (" + std::to_string(threads) + " threads)";

  Progress progress;
  if (FLAGS_max_batch) {
    std::cout << "halfcaf benchmark: largest batch of " << info.model << " (" << info.mode << ", "
              << info.order << ", " << info.device << ") that fits in "
              << (FLAGS_device == "cuda" ? "the GPU's memory"
                                         : std::to_string(FLAGS_mem_limit_mb) + " MB (--mem_limit_mb)")
              << ", memory plan " << (FLAGS_optimize_memory ? "on" : "off") << "\n";
    for (const auto& p : precisions) {
      const int64_t b = FindMaxBatch(model, p, batches[0], &progress);
      std::cout << std::left << std::setw(10) << p << std::right << std::setw(8) << b
                << (b == 0 ? "  (not even batch 1)" : "") << "\n";
    }
    std::cout << std::flush;
    return 0;
  }
  std::vector<Result> results;
  {
    ScopedTrace trace(FLAGS_trace);
    progress.StartSweep(static_cast<int>(precisions.size() * batches.size()));
    for (const auto& p : precisions) {
      for (int64_t b : batches) {
        progress.NextConfig();
        results.push_back(RunConfig(model, p, b, &progress));
      }
    }
    trace.Finish();
  }
  bench::ComputeSpeedups(&results);
  const bench::PrecisionRates rates =
      bench::MeasureGemmRates(FLAGS_ceiling ? precisions : std::vector<std::string>{});
  bench::ApplyCeiling(rates, &results);
  info.convolutions = bench::JoinNotes(g_conv_notes);
  RemoveTempRendezvous(shards);
  if (shards.rank != 0) return 0;  // rank 0 reports and writes the outputs
  // halfcaf's results first, so a peer that fails, hangs or is killed loses nothing; then again
  // with the peer's numbers beside them.
  bench::PrintTable(std::cout, info, results, false, false);
  if (FLAGS_ceiling) bench::PrintCeiling(std::cout, rates, results, threads);
  bench::WriteOutputs(info, results, precisions, FLAGS_json, FLAGS_csv, FLAGS_plot);
  bool pytorch_ran = false, ort_ran = false;
  if (peers.pytorch) {
    std::cerr << "benchmark: halfcaf's results are written; the PyTorch peer runs next"
              << std::endl;
    bench::PeerRequest req;
    req.python = FLAGS_python;
    req.script = bench::FindPeerScript(FLAGS_peer_script, FLAGS_model);
    req.model = FLAGS_model;
    req.order = FLAGS_order;
    req.mode = FLAGS_mode;
    req.device = FLAGS_device;
    req.iters = FLAGS_iters;
    req.warmup = FLAGS_warmup;
    req.gpu = FLAGS_gpu;
    req.threads = FLAGS_threads;
    req.num_classes = model.num_classes;
    req.image_size = model.chw[1];
    req.seed = FLAGS_seed;
    req.timeout_s = FLAGS_peer_timeout_s;
    req.batches = batches;
    req.precisions = precisions;
    pytorch_ran = bench::RunPeer(req, &results);
    if (pytorch_ran) bench::WriteOutputs(info, results, precisions, FLAGS_json, FLAGS_csv, FLAGS_plot);
  }
  if (peers.ort) {
    std::cerr << "benchmark: halfcaf's results are written; the ONNX Runtime peer runs next"
              << std::endl;
    bench::OrtRequest req;
    req.script = bench::FindOrtScript();
    req.python = FLAGS_ort_python.empty() ? bench::DefaultOrtPython() : FLAGS_ort_python;
    if (onnx) {
      req.onnx_file = FLAGS_net;
    } else {
      req.init = model.init;
      req.predict = model.forward;
    }
    req.chw = model.chw;
    req.iters = FLAGS_iters;
    req.warmup = FLAGS_warmup;
    req.threads = FLAGS_threads;
    req.seed = FLAGS_seed;
    req.timeout_s = FLAGS_peer_timeout_s;
    req.batches = batches;
    req.precisions = precisions;
    ort_ran = bench::RunOrtPeer(req, &results);
    if (ort_ran) bench::WriteOutputs(info, results, precisions, FLAGS_json, FLAGS_csv, FLAGS_plot);
  }
  if (pytorch_ran || ort_ran) {
    bench::PrintTable(std::cout, info, results, pytorch_ran, ort_ran);
    if (FLAGS_ceiling)
      bench::PrintCeiling(std::cout, rates, results, threads, pytorch_ran, ort_ran);
  }
  return 0;
}

}  // namespace
}  // namespace halfcaf

int main(int argc, char** argv) {
  return halfcaf::RunTool(
      "benchmark",
      "benchmark --model resnet50|resnet18|lenet|acgan | --net FILE --init_net FILE --input_shape "
      "C,H,W "
      "[--device cpu|cuda] [--precision fp32,fp16,bf16] [--batch_size 32,64] [--order NCHW|NHWC] "
      "[--mode train|forward] [--iters 50] [--warmup 10] [--per_op] [--ceiling] [--json F] [--csv "
      "F] "
      "[--plot F.svg] [--trace F.json] [--price_per_hour P] [--threads N] [--compare pytorch,ort]",
      argc, argv, halfcaf::Main);
}
