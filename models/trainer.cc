#include "models/trainer.h"

#include <algorithm>
#include <map>
#include <set>

#include <glog/logging.h>

#include "core/argument.h"
#include "core/operator.h"
#include "data/reader_state.h"
#include "distributed/common_world.h"
#include "distributed/gradient_exchange.h"
#include "models/channels_last.h"
#include "models/recompute.h"
#include "models/mixed_precision.h"
#include "models/op_types.h"
#include "models/passes/passes.h"
#include "models/trainer_util.h"
#include "models/training_job.h"

namespace halfcaf {

void EnforceTrainingAllreduce(const std::string& algorithm) {
  HALFCAF_ENFORCE(ParseAllreduceAlgorithm(algorithm) != AllreduceAlgorithm::kRing,
                  "the ring all-reduce adds in a different order on each process, so their "
                  "parameters would drift apart; use halving_doubling, ring_chunked or bcube");
}

Trainer::Trainer(const NetDef& init, const NetDef& forward, const TrainerOptions& options)
    : opt_(options) {
  HALFCAF_ENFORCE(opt_.batch_size > 0, "batch size must be positive, got ", opt_.batch_size);
  if (opt_.world) {
    shards_ = opt_.world->size();
    shard_ = opt_.world->rank();
    HALFCAF_ENFORCE(opt_.batch_size % shards_ == 0, "the batch size (", opt_.batch_size, ") is the "
                    "global batch of all ", shards_, " processes: it must be a multiple of their "
                    "number");
    EnforceTrainingAllreduce(opt_.allreduce_algorithm);
    HALFCAF_ENFORCE(opt_.bucket_bytes > 0, "the gradient bucket size must be positive, got ",
                    opt_.bucket_bytes);
  }
  if (opt_.replicas.size() > 1) {
    replicas_ = MakeReplicas(opt_.replicas);
    const int64_t n = static_cast<int64_t>(replicas_.size());
    HALFCAF_ENFORCE(opt_.batch_size / shards_ % n == 0, "the batch size (", opt_.batch_size,
                    shards_ > 1 ? MakeString(" over ", shards_, " processes") : "",
                    ") must be a multiple of the number of replicas (", n, ")",
                    shards_ > 1 ? " times the number of processes" : "");
    opt_.device = replicas_[0].device;
  }
  HALFCAF_ENFORCE(!opt_.train_data.empty() || opt_.data_format == "synthetic",
                  "no training data given");
  HALFCAF_ENFORCE(opt_.loss_scale > 0, "loss scale must be positive, got ", opt_.loss_scale);
  HALFCAF_ENFORCE(opt_.device.type == DeviceType::CPU ||
                      OperatorRegistry::HasType(DeviceType::CUDA, "CopyCPUToGPU"),
                  "training on ", opt_.device.ToString(), " needs the CUDA backend, which this "
                  "build of halfcaf does not have (configure with -DHALFCAF_USE_CUDA=ON where the "
                  "CUDA toolkit and cuDNN are installed)");
  SetGlobalSeed(opt_.seed);
  BuildNets(init, forward);
}

Trainer::~Trainer() = default;

void Trainer::BuildNets(const NetDef& init, const NetDef& forward) {
  // The forward net must read the data and label blobs and produce the loss.
  HALFCAF_ENFORCE(NetReads(forward, opt_.data_blob), "the forward net does not read the data "
                  "blob '", opt_.data_blob, "' (set --data_blob to the name it uses)");
  HALFCAF_ENFORCE(NetReads(forward, opt_.label_blob), "the forward net does not read the label "
                  "blob '", opt_.label_blob, "' (set --label_blob to the name it uses)");
  HALFCAF_ENFORCE(NetWrites(forward, opt_.loss_blob), "the forward net has no loss: no op writes '",
                  opt_.loss_blob, "' (add a loss such as SoftmaxWithLoss or AveragedLoss, or set "
                  "--loss_blob)");
  HALFCAF_ENFORCE(!NetWrites(init, opt_.data_blob) && !NetWrites(init, opt_.label_blob),
                  "the init net writes the data or label blob; they come from the data reader");

  // The passes (models/training_job.h) build the step (forward + backward), the update
  // (overflow check, optimizer, loss scale) and the state the init net makes.
  TrainingJob job = MakeJob(init, opt_.precision);
  job.dynamic_loss_scale = opt_.dynamic_loss_scale;
  job.loss_scale = opt_.loss_scale;
  job.scale_growth_interval = opt_.scale_growth_interval;
  job.replicas = static_cast<int64_t>(std::max<size_t>(replicas_.size(), 1)) * shards_;
  job.blob_dims = opt_.blob_dims;
  channels_last_ =
      ResolveChannelsLast(opt_.channels_last, opt_.precision, opt_.device.type, opt_.order);
  job.channels_last = channels_last_;
  job.nchw_filters = channels_last_ && opt_.device.type == DeviceType::CPU;
  channel_block_ = ResolveChannelBlock(opt_.blocked_layout, opt_.precision, opt_.device.type,
                                       opt_.order, channels_last_);
  job.channel_block = channel_block_;
  job.winograd = ResolveWinograd(opt_.conv_algorithm, opt_.precision, opt_.device.type);
  // The fused op takes float X in every layout, bfloat16 X in NHWC (spatial_bn_op.h).
  job.fuse_bn_relu = opt_.device.type == DeviceType::CPU &&
                     (opt_.precision == DataType::FLOAT ||
                      (opt_.precision == DataType::BFLOAT16 && channels_last_));
  job.fuse_residual_relu = opt_.device.type == DeviceType::CPU;
  job.recompute = ParseRecompute(opt_.recompute, &job.recompute_convolutions);
  job.caller_reads.insert(opt_.keep_blobs.begin(), opt_.keep_blobs.end());
  job.caller_reads.insert(opt_.accuracy_blob);
  // The forward net's random ops (Dropout, noise) get their seeds before the passes, by their
  // place in it: the same draws whatever the passes insert (the channel-blocked layout's
  // conversions) and wherever a pass copies an op. Replicas draw apart (BuildReplicated).
  NetDef seeded = forward;
  AssignRandomSeeds(&seeded, opt_.seed, "forward");
  JobNet net = JobNet::Make("", seeded, {{opt_.loss_blob, 1.f}}, opt_.optimizer);
  net.groups = opt_.param_groups;
  net.no_cast_inputs = {opt_.data_blob};
  job.nets.push_back(net);
  RunPasses(StandardPasses(), &job);
  const JobNet& built = job.nets[0];
  bn_relu_fused_ = job.bn_relu_fused;
  residual_relu_fused_ = job.residual_relu_fused;
  blocked_convs_ = winograd_convs_ = 0;
  for (const auto& op : built.forward.op()) {
    if (!IsConvType(op.type())) continue;
    const ArgumentHelper args(op);
    blocked_convs_ += args.HasArgument("channel_block");
    winograd_convs_ += args.GetSingleArgument<int>("conv_algorithm", 0) == 1;
  }
  if (blocked_convs_ == 0 && opt_.blocked_layout == "auto") channel_block_ = 0;  // nothing taken
  params_ = built.params;
  frozen_.clear();
  for (const auto& kv : built.param_group) {
    if (kv.second.frozen) frozen_.push_back(kv.first);
  }
  param_grads_ = built.param_grads;
  NetDef state = job.init;
  state.set_name("train_init");
  for (const auto& op : state.op()) {
    for (const auto& o : op.output()) {
      if (std::find(checkpoint_blobs_.begin(), checkpoint_blobs_.end(), o) ==
          checkpoint_blobs_.end()) {
        checkpoint_blobs_.push_back(o);
      }
    }
  }
  if (!replicas_.empty()) {
    BuildReplicated(built.step, built.update, state);
  } else {
    body_ = MakeDataNet(opt_.train_data, true, opt_.batch_size, opt_.data_blob, opt_.label_blob);
    NetDef step = built.step;
    if (ReplicaSalt(0) > 0) MixRandomSeeds(&step, ReplicaSalt(0));  // another process's masks
    for (const auto& op : step.op()) *body_.add_op() = op;
    tail_ = built.update;
    init_ = state;
    PlaceOnDevice(&init_, opt_.device, opt_.data_blob, opt_.label_blob);
    PlaceOnDevice(&body_, opt_.device, opt_.data_blob, opt_.label_blob);
    PlaceOnDevice(&tail_, opt_.device, opt_.data_blob, opt_.label_blob);
  }
  // Explicit seeds: the nets draw the same numbers however and wherever they are created (a
  // plan written by TrainingPlan and run by run_plan, a resumed run).
  AssignRandomSeeds(&init_, opt_.seed, "init");
  AssignRandomSeeds(&body_, opt_.seed, "train");
  AssignRandomSeeds(&tail_, opt_.seed, "update");
  std::vector<std::string> grad_blobs;
  for (const auto& pg : param_grads_) grad_blobs.push_back(pg.grad);
  train_ = body_;
  train_.set_name("train");
  AddAllReduce(grad_blobs, replicas_, &train_);
  for (const auto& op : tail_.op()) *train_.add_op() = op;

  if (opt_.test_forward.op_size() == 0) {
    test_forward_ = TestModeForward(built.forward);
  } else {
    HALFCAF_ENFORCE(NetWrites(opt_.test_forward, opt_.loss_blob), "the test net has no loss: no "
                    "op writes '", opt_.loss_blob, "'");
    NetDef test_fwd = opt_.test_forward;
    if (opt_.mixed_precision() && job.premade_copies.empty()) {
      std::set<std::string> learned;
      for (const auto& kv : built.param_group) learned.insert(kv.first);
      test_fwd = ToMixedPrecision(test_fwd, {opt_.data_blob}, learned, opt_.precision).net;
    }
    test_forward_ = TestModeForward(test_fwd);
  }
}

std::string Trainer::Name(size_t r, const std::string& blob) const {
  return replicas_.empty() ? blob : replicas_.at(r).Blob(blob);
}

float Trainer::MeanOverReplicas(const std::string& blob) const {
  const size_t n = std::max<size_t>(replicas_.size(), 1);
  double sum = 0;
  for (size_t r = 0; r < n; ++r) sum += ReadScalar(Name(r, blob));
  return static_cast<float>(sum / static_cast<double>(n));
}

void Trainer::CreateNets() {
  std::set<int> gpus;
  for (const auto& r : replicas_) {
    if (r.device.type == DeviceType::CUDA) gpus.insert(r.device.id);
  }
  const std::string type = !opt_.net_type.empty() ? opt_.net_type
                                                  : (gpus.size() >= 2 ? "dag" : "simple");
  HALFCAF_ENFORCE(type == "simple" || type == "dag", "the training net type must be simple or dag, "
                  "got '", opt_.net_type, "'");
  // One worker per replica (each replica's chain of ops) and one for the CPU-side ops.
  const int workers = static_cast<int>(std::max<size_t>(replicas_.size(), 1)) + 1;
  train_.set_type(type);
  if (type == "dag") train_.set_num_workers(workers);
  std::vector<std::shared_ptr<const void>> hold;
  if (opt_.optimize_memory && train_plan_.buffers.empty()) {
    train_plan_ = PlanNetMemory(train_, "__shared_", &hold);
    for (NetDef* net : {&train_, &body_, &tail_}) ApplyMemoryPlan(train_plan_, net);
  }
  if (opt_.world) {
    CreateShardedNets(type, workers);
  } else {
    train_net_ = ws_.CreateNet(train_);
  }
  train_reader_ = dynamic_cast<ResumableReader*>(train_net_->ops().at(0).get());
  CHECK(train_reader_ != nullptr);
  CreateWindowNets();
  // The test set is read now, so a problem with it shows before training, not after.
  if (!opt_.test_data.empty()) CreateTestNet();
}

std::vector<NetBase*> Trainer::TrainNets() const {
  if (!opt_.world) return {train_net_};
  std::vector<NetBase*> nets;
  for (NetBase* n : pre_exchange_nets_) {
    if (n) nets.push_back(n);
  }
  if (post_exchange_net_) nets.push_back(post_exchange_net_);
  return nets;
}

void Trainer::CreateWindowNets() {
  NetDef start, add;
  start.set_name("train_window_start");
  add.set_name("train_window_add");
  std::vector<std::pair<std::string, std::string>> sums{{opt_.loss_blob, kWindowLoss}};
  if (NetWrites(train_, Name(0, opt_.accuracy_blob))) {
    sums.emplace_back(opt_.accuracy_blob, kWindowAccuracy);
  }
  for (size_t r = 0; r < std::max<size_t>(replicas_.size(), 1); ++r) {
    const Device d = replicas_.empty() ? opt_.device : replicas_[r].device;
    DeviceOption where;
    where.set_device_type(static_cast<int>(d.type));
    where.set_device_id(d.id);
    for (const auto& s : sums) {
      const std::string value = Name(r, s.first), sum = Name(r, s.second);
      OperatorDef copy = MakeOperatorDef("Copy", "", {value}, {sum});
      OperatorDef plus = MakeOperatorDef("Sum", "", {sum, value}, {sum});
      *copy.mutable_device_option() = where;
      *plus.mutable_device_option() = where;
      *start.add_op() = copy;
      *add.add_op() = plus;
    }
  }
  window_start_ = ws_.CreateNet(start);
  window_add_ = ws_.CreateNet(add);
  window_steps_ = 0;
}

void Trainer::Initialize() {
  ws_.RunNetOnce(init_);
  CreateNets();
  if (opt_.world) SyncShards();
}

void Trainer::CheckSkippedSteps() const {
  if (!opt_.mixed_precision() || opt_.max_skipped_steps <= 0) return;
  const float longest = ReadScalar(Name(0, kMaxSkipStreak));
  HALFCAF_ENFORCE(longest < static_cast<float>(opt_.max_skipped_steps), "training diverged: ",
                  static_cast<int64_t>(longest), " consecutive steps overflowed and were skipped "
                  "(the limit is ", opt_.max_skipped_steps, "; loss scale now ",
                  ReadScalar(Name(0, kLossScale)), ", iteration ", iteration(),
                  "): the scaled gradients are inf or NaN at every step (a lower learning rate may "
                  "help)");
}

float ReadScalarBlob(const Workspace& ws, const std::string& blob) {
  Tensor cpu;
  cpu.CopyFrom(ws.GetTensor(blob));
  HALFCAF_ENFORCE(cpu.numel() >= 1, "blob '", blob, "' is empty");
  switch (cpu.dtype()) {
    case DataType::FLOAT: return cpu.data<float>()[0];
    case DataType::FLOAT16: return static_cast<float>(cpu.data<Half>()[0]);
    case DataType::BFLOAT16: return static_cast<float>(cpu.data<BFloat16>()[0]);
    case DataType::INT64: return static_cast<float>(cpu.data<int64_t>()[0]);
    case DataType::INT32: return static_cast<float>(cpu.data<int32_t>()[0]);
    default: HALFCAF_THROW("blob '", blob, "' is ", cpu.DebugString(), ", not a number");
  }
}

float Trainer::ReadScalar(const std::string& blob) const { return ReadScalarBlob(ws_, blob); }

float Trainer::LossScale() const { return ReadScalar(Name(0, kLossScale)); }

void Trainer::Step() {
  HALFCAF_ENFORCE(train_net_ != nullptr, "call Initialize or Resume before Step");
  if (exchange_) {
    // Each bucket is exchanged as soon as the part of the step that finishes it has run.
    for (size_t k = 0; k < pre_exchange_nets_.size(); ++k) {
      if (pre_exchange_nets_[k]) pre_exchange_nets_[k]->Run();
      if (k >= bucket_blobs_.size()) continue;
      std::vector<Tensor*> bucket;
      for (const auto& name : bucket_blobs_[k]) {
        Blob* blob = ws_.GetBlob(name);
        HALFCAF_ENFORCE(blob != nullptr && blob->IsTensor(), "the gradient '", name,
                        "' was not computed");
        bucket.push_back(blob->GetMutableTensor(blob->GetTensor().device()));
      }
      exchange_->Start(std::move(bucket));
    }
    exchange_->Wait();
    if (post_exchange_net_) post_exchange_net_->Run();
  } else {
    train_net_->Run();
  }
  (window_steps_ == 0 ? window_start_ : window_add_)->Run();
  ++window_steps_;
  stepped_ = true;
}

StepStats Trainer::ReadStats() {
  HALFCAF_ENFORCE(train_net_ != nullptr, "call Initialize or Resume before ReadStats");
  for (NetBase* net : TrainNets()) net->CheckDeferredErrors();
  StepStats s;
  s.iter = iteration();
  s.steps = window_steps_;
  s.has_accuracy = NetWrites(train_, Name(0, opt_.accuracy_blob));
  s.loss_scale = ReadScalar(Name(0, kLossScale));
  s.skipped_steps = static_cast<int64_t>(ReadScalar(Name(0, kSkipped)));
  if (!stepped_) return s;  // the step's outputs do not exist yet
  s.loss = MeanOverReplicas(opt_.loss_blob);
  if (s.has_accuracy) s.accuracy = MeanOverReplicas(opt_.accuracy_blob);
  s.lr = ReadScalar(Name(0, kLrBlob));
  if (window_steps_ > 0) {
    const double n = static_cast<double>(window_steps_);
    s.mean_loss = MeanOverReplicas(kWindowLoss) / n;
    if (s.has_accuracy) s.mean_accuracy = MeanOverReplicas(kWindowAccuracy) / n;
  }
  window_steps_ = 0;
  if (opt_.world) {
    std::vector<float> v{s.loss, s.accuracy, static_cast<float>(s.mean_loss),
                         static_cast<float>(s.mean_accuracy)};
    MeanOverShards(&v);
    s.loss = v[0];
    s.accuracy = v[1];
    s.mean_loss = v[2];
    s.mean_accuracy = v[3];
    const ExchangeTimes t = exchange_->TakeTimes();
    s.exchange_s = t.exchange_s;
    s.exposed_s = t.exposed_s;
    s.exchange_bytes = t.bytes;
  }
  return s;
}

int64_t Trainer::iteration() const {
  return ws_.GetTensor(Name(0, kIterBlob)).data<int64_t>()[0];
}

int64_t Trainer::train_set_size() const {
  HALFCAF_ENFORCE(train_reader_ != nullptr, "the training reader is not created yet");
  return train_reader_->num_samples();
}

std::string Trainer::ConvolutionSummary() const {
  std::vector<std::string> parts;
  if (channels_last_) parts.push_back("channels last");
  if (channel_block_ != 0) {
    parts.push_back("channel-blocked (" + std::to_string(channel_block_) + ": " +
                    std::to_string(blocked_convs_) + " convolutions)");
  }
  if (bn_relu_fused_ > 0) {
    parts.push_back("batch norm + ReLU fused (" + std::to_string(bn_relu_fused_) + ")");
  }
  if (residual_relu_fused_ > 0) {
    parts.push_back("residual add + ReLU fused (" + std::to_string(residual_relu_fused_) + ")");
  }
  if (winograd_convs_ > 0) {
    parts.push_back("Winograd (" + std::to_string(winograd_convs_) + " convolutions)");
  }
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

}  // namespace halfcaf
