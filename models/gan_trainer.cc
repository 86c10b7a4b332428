#include "models/gan_trainer.h"

#include <cmath>
#include <random>

#include "core/argument.h"
#include "core/enforce.h"
#include "core/net.h"
#include "data/reader_state.h"
#include "models/channels_last.h"
#include "models/memory_plan.h"
#include "models/passes/passes.h"
#include "models/recompute.h"
#include "models/trainer_util.h"

namespace halfcaf {

namespace {

const char kWindowPrefix[] = "gan_window/";

}  // namespace

GanTrainerOptions GanTrainerOptions::Default() {
  GanTrainerOptions o;
  for (OptimizerOptions* opt : {&o.d_optimizer, &o.g_optimizer}) {
    opt->type = "adam";
    opt->base_lr = 2e-4f;
    opt->beta1 = 0.5f;
    opt->beta2 = 0.999f;
  }
  return o;
}

GanTrainer::GanTrainer(const GanTrainerOptions& options) : opt_(options) {
  HALFCAF_ENFORCE(!opt_.train_data.empty() || opt_.data_format == "synthetic" || opt_.feed_inputs,
                  "no training data given");
  HALFCAF_ENFORCE(opt_.loss_scale > 0, "loss scale must be positive, got ", opt_.loss_scale);
  HALFCAF_ENFORCE(opt_.device.type == DeviceType::CPU ||
                      OperatorRegistry::HasType(DeviceType::CUDA, "CopyCPUToGPU"),
                  "training on ", opt_.device.ToString(), " needs the CUDA backend, which this "
                  "build of halfcaf does not have");
  if (opt_.feed_inputs) opt_.model.noise_ops = false;
  nets_ = BuildAcGan(opt_.model);
  // The reader at the head of the discriminator's step: real images in the tanh range.
  std::vector<Argument> args{
      MakeArgument("source", opt_.train_data),
      MakeArgument("format", opt_.data_format),
      MakeArgument("batch_size", opt_.model.batch_size),
      MakeArgument("shuffle", 1),
      MakeArgument("seed", static_cast<int64_t>(opt_.seed)),
      MakeArgument("scale", 2.f / 255.f),
      MakeArgument("mean", std::vector<float>{1.f}),
      MakeArgument("std", std::vector<float>{1.f}),
      MakeArgument("order", std::string("NCHW")),
      MakeArgument("dtype", std::string(DataTypeName(opt_.precision))),
      MakeArgument("prefetch", opt_.prefetch ? 1 : 0),
      MakeArgument("is_test", 0)};
  for (const auto& a : opt_.reader_args) args.push_back(a);

  job_ = MakeJob(nets_.init, opt_.precision);
  job_.dynamic_loss_scale = opt_.dynamic_loss_scale;
  job_.loss_scale = opt_.loss_scale;
  job_.scale_growth_interval = opt_.scale_growth_interval;
  job_.channels_last =
      ResolveChannelsLast(opt_.channels_last, opt_.precision, opt_.device.type, "NCHW");
  job_.nchw_filters = job_.channels_last && opt_.device.type == DeviceType::CPU;
  job_.channel_block = ResolveChannelBlock(opt_.blocked_layout, opt_.precision, opt_.device.type,
                                           "NCHW", job_.channels_last);
  // In float32 the generator's batch normalizations take their ReLUs in (models/bn_relu_fusion.h;
  // not in bfloat16, where the fused op needs NHWC and the first one follows a Reshape).
  job_.fuse_bn_relu = opt_.device.type == DeviceType::CPU && opt_.precision == DataType::FLOAT;
  job_.caller_reads = {kAcGanDAccuracy};
  job_.recompute = ParseRecompute(opt_.recompute, &job_.recompute_convolutions);
  // The forward nets' random ops (noise, class draws, Dropout) get their seeds before the passes,
  // by their place in the forward net: the same draws whatever the passes insert (the
  // channel-blocked layout's conversions) and wherever a pass copies an op.
  NetDef d_forward = nets_.d_step, g_forward = nets_.g_step;
  AssignRandomSeeds(&d_forward, opt_.seed, "d_forward");
  AssignRandomSeeds(&g_forward, opt_.seed, "g_forward");
  JobNet d = JobNet::Make("d", d_forward, {{kAcGanDLoss, 1.f}}, opt_.d_optimizer);
  d.groups = {ParamGroup{"^g_", 1.f, 1.f, true}};
  if (!opt_.feed_inputs) d.no_cast_inputs = {kAcGanData};
  JobNet g = JobNet::Make("g", g_forward, {{kAcGanGLoss, 1.f}}, opt_.g_optimizer);
  g.groups = {ParamGroup{"^d_", 1.f, 1.f, true}};
  for (const auto& f : AcGanFrozenParams()) g.groups.push_back(ParamGroup{"^" + f + "$", 1, 1, true});
  job_.nets = {d, g};
  RunPasses(StandardPasses(), &job_);
  // The reader goes in front of the built step (the passes see `data` as an input the reader
  // makes in the training precision).
  if (opt_.feed_inputs) return;
  NetDef& d_step = job_.nets[0].step;
  NetDef with_reader = d_step;
  with_reader.clear_op();
  *with_reader.add_op() =
      MakeOperatorDef("DataInput", "gan_reader", {}, {kAcGanData, kAcGanLabel}, args);
  for (const auto& op : d_step.op()) *with_reader.add_op() = op;
  d_step = with_reader;
}

GanTrainer::~GanTrainer() = default;

void GanTrainer::Initialize() {
  NetDef init = job_.init;
  init.set_name("gan_init");
  PlaceOnDevice(&init, opt_.device, kAcGanData, kAcGanLabel);
  AssignRandomSeeds(&init, opt_.seed, "gan_init");
  ws_.RunNetOnce(init);
  initialized_ = true;
  // Fed inputs must exist before the nets reading them are created: then the first Step does.
  if (!opt_.feed_inputs) CreateNets();
}

void GanTrainer::CreateNets() {
  nets_run_.clear();
  std::vector<NetDef> defs;  // in running order: d step, d update, g step, g update
  for (const JobNet& net : job_.nets) {
    for (const NetDef* part : {&net.step, &net.update}) {
      NetDef def = *part;
      def.set_name(net.name + (part == &net.step ? "_step" : "_update"));
      PlaceOnDevice(&def, opt_.device, kAcGanData, kAcGanLabel);
      AssignRandomSeeds(&def, opt_.seed, def.name());
      defs.push_back(def);
    }
  }
  if (opt_.optimize_memory) {
    memory_plan_ = PlanIterationMemory(defs);
    for (NetDef& def : defs) ApplyMemoryPlan(memory_plan_, &def);
  }
  for (const NetDef& def : defs) nets_run_.push_back(ws_.CreateNet(def));
  reader_ = dynamic_cast<ResumableReader*>(nets_run_[0]->ops().at(0).get());
  HALFCAF_ENFORCE(reader_ != nullptr || opt_.feed_inputs,
                  "the discriminator's step does not start with its reader");
  // Window sums of the losses and the class accuracy, on the device.
  NetDef start, add;
  start.set_name("gan_window_start");
  add.set_name("gan_window_add");
  DeviceOption where;
  where.set_device_type(static_cast<int>(opt_.device.type));
  where.set_device_id(opt_.device.id);
  for (const char* b : {kAcGanDLoss, kAcGanGLoss, kAcGanDAccuracy}) {
    const std::string sum = kWindowPrefix + std::string(b);
    *start.add_op() = MakeOperatorDef("Copy", "", {b}, {sum});
    *add.add_op() = MakeOperatorDef("Sum", "", {sum, b}, {sum});
  }
  for (NetDef* n : {&start, &add}) *n->mutable_device_option() = where;
  window_start_ = ws_.CreateNet(start);
  window_add_ = ws_.CreateNet(add);
  window_steps_ = 0;
}

MemoryPlan GanTrainer::PlanIterationMemory(const std::vector<NetDef>& defs) const {
  // One iteration's nets as one, in running order: a blob one net writes and a later one reads
  // lives until that read, and the temporaries of both steps share buffers. Blobs read before
  // they are written (fed inputs, state carried between iterations) are never shared.
  NetDef iteration;
  iteration.set_name("gan_iteration");
  for (const NetDef& def : defs) {
    for (const auto& op : def.op()) *iteration.add_op() = op;
  }
  MemoryPlanOptions o;
  o.order = MemoryPlanOptions::Order::kList;
  o.prefix = "__gan_shared_";
  for (const auto& op : job_.init.op()) o.keep.insert(op.output().begin(), op.output().end());
  for (const JobNet& net : job_.nets) {
    for (const auto& p : net.params) o.keep.insert(p.name);
    for (const auto& pg : net.param_grads) {
      for (const std::string* b : {&pg.param, &pg.grad, &pg.copy}) {
        if (!b->empty()) o.keep.insert(*b);
      }
    }
  }
  // What the window nets and ReadStats read.
  o.keep.insert({kAcGanDLoss, kAcGanGLoss, kAcGanDAccuracy});
  std::map<std::string, TensorShape> known = WorkspaceTensorShapes(ws_);
  if (!opt_.feed_inputs) {  // what the reader makes
    const int64_t batch = opt_.model.batch_size;
    known[kAcGanData] = TensorShape{{batch, 1, 28, 28}, opt_.precision};
    known[kAcGanLabel] = TensorShape{{batch}, DataType::INT32};
  }
  o.bytes = InferBlobBytes(iteration, known);
  return PlanMemory(iteration, o);
}

void GanTrainer::Step() {
  StepDiscriminator();
  StepGenerator();
}

void GanTrainer::StepDiscriminator() {
  HALFCAF_ENFORCE(initialized_, "call Initialize before Step");
  if (nets_run_.empty()) CreateNets();
  nets_run_[0]->Run();
  nets_run_[1]->Run();
}

void GanTrainer::StepGenerator() {
  HALFCAF_ENFORCE(!nets_run_.empty(), "call StepDiscriminator before StepGenerator");
  nets_run_[2]->Run();
  nets_run_[3]->Run();
  (window_steps_ == 0 ? window_start_ : window_add_)->Run();
  ++window_steps_;
}

float GanTrainer::ReadScalar(const std::string& blob) const { return ReadScalarBlob(ws_, blob); }

void GanTrainer::CheckSkipped(const JobNet& net) const {
  if (!job_.mixed_precision() || opt_.max_skipped_steps <= 0) return;
  const float longest = ReadScalar(net.State(kMaxSkipStreak));
  HALFCAF_ENFORCE(longest < static_cast<float>(opt_.max_skipped_steps), "training diverged: ",
                  static_cast<int64_t>(longest), " consecutive steps of the ",
                  net.name == "d" ? "discriminator" : "generator", " overflowed and were "
                  "skipped (the limit is ", opt_.max_skipped_steps, "; its loss scale is now ",
                  ReadScalar(net.State(kLossScale)), ", iteration ", iteration(), ")");
}

GanStats GanTrainer::ReadStats() {
  HALFCAF_ENFORCE(!nets_run_.empty(), "call Initialize before ReadStats");
  for (NetBase* n : nets_run_) n->CheckDeferredErrors();
  GanStats s;
  s.iter = iteration();
  s.steps = window_steps_;
  const JobNet& d = job_.nets[0];
  const JobNet& g = job_.nets[1];
  s.d_loss_scale = ReadScalar(d.State(kLossScale));
  s.g_loss_scale = ReadScalar(g.State(kLossScale));
  s.d_skipped = static_cast<int64_t>(ReadScalar(d.State(kSkipped)));
  s.g_skipped = static_cast<int64_t>(ReadScalar(g.State(kSkipped)));
  if (window_steps_ > 0) {
    const double n = static_cast<double>(window_steps_);
    s.d_loss = ReadScalar(kWindowPrefix + std::string(kAcGanDLoss)) / n;
    s.g_loss = ReadScalar(kWindowPrefix + std::string(kAcGanGLoss)) / n;
    s.d_accuracy = ReadScalar(kWindowPrefix + std::string(kAcGanDAccuracy)) / n;
    HALFCAF_ENFORCE(job_.mixed_precision() || (std::isfinite(s.d_loss) && std::isfinite(s.g_loss)),
                    "the GAN's losses became ", s.d_loss, " (discriminator) and ", s.g_loss,
                    " (generator) by iteration ", s.iter, " (try a lower learning rate)");
  }
  CheckSkipped(d);
  CheckSkipped(g);
  window_steps_ = 0;
  return s;
}

Tensor GanTrainer::Sample(const Tensor& noise, const Tensor& labels) {
  HALFCAF_ENFORCE(!nets_run_.empty(), "call Initialize before Sample");
  HALFCAF_ENFORCE(noise.ndim() == 2 && noise.dim(1) == opt_.model.noise_dim &&
                      noise.dtype() == DataType::FLOAT,
                  "the noise must be float (N, ", opt_.model.noise_dim, "), got ",
                  noise.DebugString());
  HALFCAF_ENFORCE(labels.ndim() == 1 && labels.dim(0) == noise.dim(0) &&
                      labels.dtype() == DataType::INT32,
                  "the requested classes must be int32 (", noise.dim(0), "), got ",
                  labels.DebugString());
  const Device d = opt_.device;
  ws_.CreateTensor(kAcGanSampleNoise, d)->CopyFrom(noise);
  ws_.CreateTensor(kAcGanSampleLabel, d)->CopyFrom(labels);
  if (sampler_ == nullptr) {  // created once its inputs exist
    NetDef sampler = nets_.sampler;
    PlaceOnDevice(&sampler, opt_.device, kAcGanSampleNoise, kAcGanSampleLabel);
    sampler_ = ws_.CreateNet(sampler);
  }
  sampler_->Run();
  Tensor out;
  out.CopyFrom(ws_.GetTensor(kAcGanSample));
  float* x = out.mutable_data<float>();
  for (int64_t i = 0; i < out.numel(); ++i) x[i] = std::min(1.f, std::max(0.f, (x[i] + 1.f) / 2));
  return out;
}

Tensor GanTrainer::SampleClasses(int64_t per_class, uint32_t seed, Tensor* labels) {
  HALFCAF_ENFORCE(per_class >= 1, "samples per class must be at least 1, got ", per_class);
  const int64_t n = per_class * opt_.model.num_classes;
  Tensor noise({n, opt_.model.noise_dim}, DataType::FLOAT);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (int64_t i = 0; i < noise.numel(); ++i) noise.mutable_data<float>()[i] = normal(rng);
  *labels = Tensor({n}, DataType::INT32);
  int32_t* l = labels->mutable_data<int32_t>();
  for (int64_t i = 0; i < n; ++i) l[i] = static_cast<int32_t>(i / per_class);
  return Sample(noise, *labels);
}

int64_t GanTrainer::iteration() const {
  return ws_.GetTensor(job_.nets[0].State(kIterBlob)).data<int64_t>()[0];
}

int64_t GanTrainer::train_set_size() const {
  HALFCAF_ENFORCE(reader_ != nullptr, "the reader is not created yet");
  return reader_->num_samples();
}

}  // namespace halfcaf
