#include "models/trainer.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include <glog/logging.h>

#include "core/argument.h"
#include "core/operator.h"
#include "core/tensor_proto.h"
#include "data/reader_state.h"
#include "distributed/common_world.h"
#include "distributed/gradient_exchange.h"
#include "models/backward.h"
#include "models/mixed_precision.h"
#include "models/op_types.h"
#include "models/optimizer.h"

namespace halfcaf {

namespace {

const char kLossScale[] = "loss_scale";
const char kFoundInf[] = "found_inf";
const char kGoodSteps[] = "loss_scale_good_steps";
const char kSkipped[] = "skipped_steps";
const char kReaderState[] = "data_reader_state";
const char kLossGradSeed[] = "loss_grad_seed";
// Mixed precision: the current and the longest run of consecutive skipped steps (0-d float), and
// a temporary of their update.
const char kSkipStreak[] = "skipped_streak";
const char kMaxSkipStreak[] = "skipped_streak_max";
const char kSkipStreakGain[] = "skipped_streak_gain";
// Sums of the loss and accuracy over the steps since the last ReadStats, kept on the device.
const char kWindowLoss[] = "window_loss_sum";
const char kWindowAccuracy[] = "window_accuracy_sum";
// Checkpoint blobs holding the generator state of the k-th random op (Dropout) of the train net.
const char kRngStatePrefix[] = "random_state_";

bool IsRandomOp(const OperatorBase& op) { return op.type() == "Dropout"; }

// The random ops of the nets, in order.
std::vector<OperatorBase*> RandomOps(const std::vector<NetBase*>& nets) {
  std::vector<OperatorBase*> out;
  for (NetBase* net : nets) {
    for (const auto& op : net->ops()) {
      if (IsRandomOp(*op) && op->random_generator() != nullptr) out.push_back(op.get());
    }
  }
  return out;
}

// A generator's state as bytes in a uint8 tensor, and back.
void SaveRandomState(const std::mt19937& rng, Tensor* t) {
  std::ostringstream ss;
  ss << rng;
  const std::string bytes = ss.str();
  t->Resize({static_cast<int64_t>(bytes.size())});
  std::copy(bytes.begin(), bytes.end(), t->mutable_data<uint8_t>());
}

void LoadRandomState(const Tensor& t, const std::string& what, std::mt19937* rng) {
  HALFCAF_ENFORCE(t.dtype() == DataType::UINT8, what, " is ", t.DebugString(),
                  ", not a generator state");
  std::istringstream ss(std::string(t.data<uint8_t>(), t.data<uint8_t>() + t.numel()));
  std::mt19937 restored;
  ss >> restored;
  HALFCAF_ENFORCE(!ss.fail(), what, " does not hold a valid generator state");
  *rng = restored;
}

bool Reads(const NetDef& net, const std::string& blob) {
  for (const auto& op : net.op()) {
    for (const auto& in : op.input()) {
      if (in == blob) return true;
    }
  }
  return false;
}

bool Writes(const NetDef& net, const std::string& blob) {
  for (const auto& op : net.op()) {
    for (const auto& out : op.output()) {
      if (out == blob) return true;
    }
  }
  return false;
}

OperatorDef Fill(const std::string& out, std::vector<int64_t> shape, DataType dtype, float value) {
  return MakeOperatorDef("ConstantFill", "", {}, {out},
                         {MakeArgument("shape", shape), MakeArgument("value", value),
                          MakeArgument("dtype", static_cast<int>(dtype))});
}

// Removes gradient outputs nobody needs: the gradient of the data (first layer's dX) and ops
// whose outputs are all unused. `first_grad_op` is the index of the first backward op.
void PruneBackward(NetDef* net, int first_grad_op, const std::set<std::string>& wanted) {
  std::set<std::string> needed = wanted;
  std::vector<OperatorDef> kept;
  for (int i = net->op_size() - 1; i >= first_grad_op; --i) {
    OperatorDef op = net->op(i);
    bool any = false;
    for (const auto& o : op.output()) any |= needed.count(o) > 0;
    if (!any) continue;
    // Conv/FC gradients may drop their trailing dX output.
    const std::string fwd_type = ForwardTypeOfGradient(op.type());
    const bool conv = IsConvType(fwd_type);
    const bool fc = IsFCType(fwd_type);
    if ((conv || fc) && op.output_size() >= 2 && !needed.count(op.output(op.output_size() - 1))) {
      bool no_bias = ArgumentHelper(op).GetSingleArgument<int>("no_bias", 0) != 0;
      bool has_dx = fc ? op.output_size() == 3 : (no_bias ? op.output_size() == 2
                                                          : op.output_size() == 3);
      if (has_dx) op.mutable_output()->RemoveLast();
    }
    for (const auto& in : op.input()) needed.insert(in);
    kept.push_back(op);
  }
  while (net->op_size() > first_grad_op) net->mutable_op()->RemoveLast();
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) *net->add_op() = *it;
}

// Forward ops in test mode: BatchNorm uses its running statistics, Dropout passes through.
NetDef TestModeForward(const NetDef& forward) {
  NetDef out = forward;
  for (auto& op : *out.mutable_op()) {
    if (op.type() == "SpatialBN" || op.type() == "Dropout") {
      SetArgument(&op, "is_test", 1);
      while (op.output_size() > 1) op.mutable_output()->RemoveLast();
    }
  }
  return out;
}

// Ops that stay on the CPU whatever the device: the iteration counter and its fill (the data
// reader too, handled where it is placed).
bool StaysOnCpu(const OperatorDef& op) {
  return op.type() == "Iter" || (op.output_size() == 1 && op.output(0) == kIterBlob);
}

// Puts every op of `net` on `device`, except those that must stay on the CPU: the data reader,
// the iteration counter and its fill. The reader's outputs are copied to the device.
void PlaceOnDevice(NetDef* net, Device device, const std::string& data, const std::string& label) {
  if (device.type == DeviceType::CPU) return;
  DeviceOption opt;
  opt.set_device_type(static_cast<int>(device.type));
  opt.set_device_id(device.id);
  NetDef out = *net;
  out.clear_op();
  for (OperatorDef op : net->op()) {
    const bool cpu_only = op.type() == "DataInput" || StaysOnCpu(op);
    if (op.type() == "DataInput") {
      for (auto& o : *op.mutable_output()) o += "_cpu";
      *out.add_op() = op;
      for (const auto& b : {data, label}) {
        OperatorDef copy = MakeOperatorDef("CopyCPUToGPU", "", {b + "_cpu"}, {b});
        *copy.mutable_device_option() = opt;
        *out.add_op() = copy;
      }
      continue;
    }
    if (!cpu_only) *op.mutable_device_option() = opt;
    *out.add_op() = op;
  }
  *net = out;
}

// FP16 copies that the init net makes (`FloatToHalf(p) -> p_fp16`) and the forward net reads:
// copy name -> master name.
std::map<std::string, std::string> ReadyMadeFp16Copies(const NetDef& init, const NetDef& forward) {
  std::map<std::string, std::string> copies;
  for (const auto& op : init.op()) {
    if (op.type() == "FloatToHalf" && op.input_size() == 1 && op.output_size() == 1 &&
        op.output(0) == Fp16CopyName(op.input(0)) && Reads(forward, op.output(0))) {
      copies[op.output(0)] = op.input(0);
    }
  }
  return copies;
}

// Ops tracking runs of skipped steps on the device (no host read per step), with found_inf in
// {0, 1}: streak = (streak + found_inf) * found_inf; max = max + relu(streak - max).
void AddSkipStreak(NetDef* update, NetDef* state) {
  *update->add_op() = MakeOperatorDef("Add", "", {kSkipStreak, kFoundInf}, {kSkipStreak});
  *update->add_op() = MakeOperatorDef("Mul", "", {kSkipStreak, kFoundInf}, {kSkipStreak});
  *update->add_op() = MakeOperatorDef("Sub", "", {kSkipStreak, kMaxSkipStreak}, {kSkipStreakGain});
  *update->add_op() = MakeOperatorDef("Relu", "", {kSkipStreakGain}, {kSkipStreakGain});
  *update->add_op() = MakeOperatorDef("Add", "", {kMaxSkipStreak, kSkipStreakGain},
                                      {kMaxSkipStreak});
  *state->add_op() = Fill(kSkipStreak, {}, DataType::FLOAT, 0.f);
  *state->add_op() = Fill(kMaxSkipStreak, {}, DataType::FLOAT, 0.f);
}

}  // namespace

Trainer::Trainer(const NetDef& init, const NetDef& forward, const TrainerOptions& options)
    : opt_(options) {
  HALFCAF_ENFORCE(opt_.batch_size > 0, "batch size must be positive, got ", opt_.batch_size);
  if (opt_.world) {
    shards_ = opt_.world->size();
    shard_ = opt_.world->rank();
    HALFCAF_ENFORCE(opt_.batch_size % shards_ == 0, "the batch size (", opt_.batch_size, ") is the "
                    "global batch of all ", shards_, " processes: it must be a multiple of their "
                    "number");
    HALFCAF_ENFORCE(ParseAllreduceAlgorithm(opt_.allreduce_algorithm) != AllreduceAlgorithm::kRing,
                    "the ring all-reduce adds in a different order on each process, so their "
                    "parameters would drift apart; use halving_doubling, ring_chunked or bcube");
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

NetDef Trainer::MakeDataNet(const std::string& source, bool train, int64_t global_batch,
                            const std::string& data, const std::string& label) const {
  const int64_t batch_size = global_batch / shards_;  // this shard's slice of each batch
  // A synthetic set is a function of the seed, so the test reader sees the training samples
  // (in order): synthetic data measures speed and fitting, not generalisation.
  const int64_t seed = static_cast<int64_t>(opt_.seed);
  std::vector<Argument> args{
      MakeArgument("source", source),
      MakeArgument("format", opt_.data_format),
      MakeArgument("batch_size", batch_size),
      MakeArgument("shuffle", train && opt_.shuffle ? 1 : 0),
      MakeArgument("seed", seed),
      MakeArgument("scale", opt_.data_scale),
      MakeArgument("mean", opt_.data_mean),
      MakeArgument("std", opt_.data_std),
      MakeArgument("order", opt_.order),
      MakeArgument("dtype", std::string(DataTypeName(opt_.precision))),
      MakeArgument("prefetch", opt_.prefetch ? 1 : 0),
      MakeArgument("crop", opt_.crop),
      MakeArgument("pad", opt_.pad),
      MakeArgument("mirror", opt_.mirror ? 1 : 0),
      MakeArgument("is_test", train ? 0 : 1),
      MakeArgument("num_shards", static_cast<int64_t>(shards_)),
      MakeArgument("shard_id", static_cast<int64_t>(shard_))};
  if (opt_.data_format == "synthetic") {
    args.push_back(MakeArgument("synthetic_shape", opt_.synthetic_shape));
    args.push_back(MakeArgument("num_classes", opt_.num_classes));
    args.push_back(MakeArgument("synthetic_count", opt_.synthetic_count));
  }
  NetDef net;
  *net.add_op() = MakeOperatorDef("DataInput", train ? "train_reader" : "test_reader", {},
                                  {data, label}, args);
  return net;
}

void Trainer::BuildNets(const NetDef& init, const NetDef& forward) {
  // The forward net must read the data and label blobs and produce the loss.
  HALFCAF_ENFORCE(Reads(forward, opt_.data_blob), "the forward net does not read the data blob '",
                  opt_.data_blob, "' (set --data_blob to the name it uses)");
  HALFCAF_ENFORCE(Reads(forward, opt_.label_blob), "the forward net does not read the label blob '",
                  opt_.label_blob, "' (set --label_blob to the name it uses)");
  HALFCAF_ENFORCE(Writes(forward, opt_.loss_blob), "the forward net has no loss: no op writes '",
                  opt_.loss_blob, "' (add a loss such as SoftmaxWithLoss or AveragedLoss, or set "
                  "--loss_blob)");
  HALFCAF_ENFORCE(!Writes(init, opt_.data_blob) && !Writes(init, opt_.label_blob),
                  "the init net writes the data or label blob; they come from the data reader");

  // A forward net that is already mixed precision (make_model --dtype float16): its init net
  // makes the FP16 copies itself. The masters are trained; the net is not transformed again.
  const std::map<std::string, std::string> premade = ReadyMadeFp16Copies(init, forward);
  if (!premade.empty()) {
    HALFCAF_ENFORCE(opt_.precision == DataType::FLOAT16, "the forward net is already mixed precision (its init net makes "
                    "the float16 copy '", premade.begin()->first, "'); train it with float16 "
                    "(--dtype float16) or give the float32 net");
    NetDef on_masters = forward;
    for (auto& op : *on_masters.mutable_op()) {
      for (auto& in : *op.mutable_input()) {
        auto it = premade.find(in);
        if (it != premade.end()) in = it->second;
      }
    }
    params_ = ParamsFromNets(init, on_masters);
  } else {
    params_ = ParamsFromNets(init, forward);
  }
  std::set<std::string> trainable;
  for (const auto& p : params_) {
    if (p.role != ParamRole::BN_RUNNING_MEAN && p.role != ParamRole::BN_RUNNING_VAR) {
      trainable.insert(p.name);
    }
  }

  NetDef fwd = forward;
  std::set<std::string> fp16_copies;
  if (!premade.empty()) {
    for (const auto& kv : premade) fp16_copies.insert(kv.second);
  } else if (opt_.mixed_precision()) {
    MixedPrecisionResult mp =
        ToMixedPrecision(forward, {opt_.data_blob}, trainable, opt_.precision);
    fwd = mp.net;
    fp16_copies.insert(mp.fp16_params.begin(), mp.fp16_params.end());
  }

  // Backward, seeded with the loss scale in mixed precision.
  NetDef body = fwd;
  const int first_grad = body.op_size();
  std::map<std::string, std::string> seeds;
  if (opt_.mixed_precision()) seeds[opt_.loss_blob] = kLossScale;
  // Data parallel: each replica's loss is the mean over its share of the batch, so its gradient
  // is seeded with loss_scale / N (N replicas in all processes) and the summed gradients are
  // those of the whole batch.
  const size_t all_replicas = std::max<size_t>(replicas_.size(), 1) * static_cast<size_t>(shards_);
  if (all_replicas > 1) seeds[opt_.loss_blob] = kLossGradSeed;
  std::map<std::string, GradientWrapper> grads;
  try {
    grads = Backward(&body, {opt_.loss_blob}, seeds, opt_.blob_dims.empty() ? nullptr : &opt_.blob_dims);
  } catch (EnforceNotMet& e) {
    e.AddContext("building the backward pass for loss '" + opt_.loss_blob + "'");
    throw;
  }
  // Gradient of each trainable master (through its FP16 / BF16 copy when it has one).
  auto copy_name = [&](const std::string& p) {
    return opt_.mixed_precision() ? LowPrecisionCopyName(p, opt_.precision) : std::string();
  };
  std::vector<ParamGradient> param_grads;
  std::set<std::string> wanted;
  for (const auto& p : params_) {
    if (!trainable.count(p.name)) continue;
    std::string via = fp16_copies.count(p.name) ? copy_name(p.name) : p.name;
    auto it = grads.find(via);
    if (it == grads.end() || !it->second.IsDense()) continue;  // not differentiable: frozen
    param_grads.push_back(ParamGradient{p.name, it->second.dense, p.role,
                                        fp16_copies.count(p.name) ? copy_name(p.name) : "",
                                        opt_.precision});
    wanted.insert(it->second.dense);
  }
  HALFCAF_ENFORCE(!param_grads.empty(), "no parameter of the net receives a gradient from '",
                  opt_.loss_blob, "'");
  PruneBackward(&body, first_grad, wanted);

  // The step (forward + backward), the update (overflow check, optimizer, loss scale) and the
  // state the init net makes: the user's init, the FP16 copies, the optimizer's state and the
  // loss-scale state.
  NetDef step;
  if (all_replicas > 1) {
    *step.add_op() = MakeOperatorDef("Scale", "", {kLossScale}, {kLossGradSeed},
                                     {MakeArgument("scale", 1.f / all_replicas)});
  }
  for (const auto& op : body.op()) *step.add_op() = op;
  NetDef state = init;
  state.set_name("train_init");
  for (const auto& p : fp16_copies) {
    if (premade.count(Fp16CopyName(p))) continue;
    *state.add_op() =
        MakeOperatorDef(CastOpType(DataType::FLOAT, opt_.precision), "", {p}, {copy_name(p)});
  }
  std::vector<std::string> grad_blobs;
  for (const auto& pg : param_grads) grad_blobs.push_back(pg.grad);
  NetDef update;
  if (opt_.mixed_precision()) *update.add_op() = MakeOperatorDef("CheckFinite", "", grad_blobs, {kFoundInf});
  AddMomentumSGD(opt_.optimizer, param_grads, opt_.mixed_precision() ? kLossScale : "",
                 opt_.mixed_precision() ? kFoundInf : "", &update, &state);
  if (opt_.mixed_precision()) {
    // A static scale never changes, but overflowing steps are still skipped and counted.
    std::vector<Argument> args{MakeArgument("growth_interval", opt_.scale_growth_interval)};
    if (!opt_.dynamic_loss_scale) args = {MakeArgument("growth", 1.f), MakeArgument("backoff", 1.f)};
    *update.add_op() = MakeOperatorDef("UpdateLossScale", "",
                                       {kLossScale, kFoundInf, kGoodSteps, kSkipped},
                                       {kLossScale, kGoodSteps, kSkipped}, args);
    AddSkipStreak(&update, &state);
  }
  *state.add_op() = Fill(kLossScale, {}, DataType::FLOAT, opt_.mixed_precision() ? opt_.loss_scale : 1.f);
  *state.add_op() = Fill(kGoodSteps, {1}, DataType::INT64, 0.f);
  *state.add_op() = Fill(kSkipped, {1}, DataType::INT64, 0.f);
  for (const auto& op : state.op()) {
    for (const auto& o : op.output()) {
      if (std::find(checkpoint_blobs_.begin(), checkpoint_blobs_.end(), o) ==
          checkpoint_blobs_.end()) {
        checkpoint_blobs_.push_back(o);
      }
    }
  }
  param_grads_ = param_grads;
  if (!replicas_.empty()) {
    BuildReplicated(step, update, state);
  } else {
    body_ = MakeDataNet(opt_.train_data, true, opt_.batch_size, opt_.data_blob, opt_.label_blob);
    for (const auto& op : step.op()) *body_.add_op() = op;
    tail_ = update;
    init_ = state;
    PlaceOnDevice(&init_, opt_.device, opt_.data_blob, opt_.label_blob);
    PlaceOnDevice(&body_, opt_.device, opt_.data_blob, opt_.label_blob);
    PlaceOnDevice(&tail_, opt_.device, opt_.data_blob, opt_.label_blob);
  }
  train_ = body_;
  train_.set_name("train");
  AddAllReduce(grad_blobs, replicas_, &train_);
  for (const auto& op : tail_.op()) *train_.add_op() = op;

  if (opt_.test_forward.op_size() == 0) {
    test_forward_ = TestModeForward(fwd);
  } else {
    HALFCAF_ENFORCE(Writes(opt_.test_forward, opt_.loss_blob), "the test net has no loss: no op "
                    "writes '", opt_.loss_blob, "'");
    NetDef test_fwd = opt_.test_forward;
    if (opt_.mixed_precision() && premade.empty()) {
      test_fwd = ToMixedPrecision(test_fwd, {opt_.data_blob}, trainable, opt_.precision).net;
    }
    test_forward_ = TestModeForward(test_fwd);
  }
}

void Trainer::BuildReplicated(const NetDef& step, const NetDef& update, const NetDef& state) {
  // Reader (CPU, whole batch) -> Split along the batch axis -> one share per replica, copied to
  // its device.
  NetDef& train = body_;
  train = MakeDataNet(opt_.train_data, true, opt_.batch_size, opt_.data_blob, opt_.label_blob);
  const bool cuda = replicas_[0].device.type == DeviceType::CUDA;
  for (const std::string& blob : {opt_.data_blob, opt_.label_blob}) {
    std::vector<std::string> shares;
    for (const auto& r : replicas_) shares.push_back(r.Blob(blob) + (cuda ? "_cpu" : ""));
    *train.add_op() = MakeOperatorDef("Split", "", {blob}, shares, {MakeArgument("axis", 0)});
    if (!cuda) continue;
    for (const auto& r : replicas_) {
      OperatorDef copy = MakeOperatorDef("CopyCPUToGPU", "", {r.Blob(blob) + "_cpu"}, {r.Blob(blob)});
      copy.mutable_device_option()->set_device_type(static_cast<int>(r.device.type));
      copy.mutable_device_option()->set_device_id(r.device.id);
      *train.add_op() = copy;
    }
  }
  auto append = [](const NetDef& from, NetDef* to) {
    for (const auto& op : from.op()) *to->add_op() = op;
  };
  for (const auto& r : replicas_) append(ReplicateNet(step, r, StaysOnCpu), &train);
  tail_.clear_op();
  for (const auto& r : replicas_) append(ReplicateNet(update, r, StaysOnCpu), &tail_);

  // Replica 0 initialises; the others copy every blob it made, so all start identical.
  init_ = ReplicateNet(state, replicas_[0], StaysOnCpu);
  init_.set_name("train_init");
  std::set<std::string> on_cpu;
  for (const auto& op : state.op()) {
    if (StaysOnCpu(op)) on_cpu.insert(op.output().begin(), op.output().end());
  }
  for (size_t i = 1; i < replicas_.size(); ++i) {
    for (const auto& b : checkpoint_blobs_) {
      OperatorDef copy = MakeOperatorDef("Copy", "", {Name(0, b)}, {Name(i, b)});
      const Device d = on_cpu.count(b) ? Device{} : replicas_[i].device;
      copy.mutable_device_option()->set_device_type(static_cast<int>(d.type));
      copy.mutable_device_option()->set_device_id(d.id);
      *init_.add_op() = copy;
    }
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

void Trainer::CreateShardedNets(const std::string& type, int workers) {
  // Where each gradient is final: the last op of the body writing it on any replica.
  std::map<std::string, int> last_write;
  for (int i = 0; i < body_.op_size(); ++i) {
    for (const auto& o : body_.op(i).output()) last_write[o] = i;
  }
  struct Grad {
    std::string name;
    int ready;
    size_t bytes;
    DataType dtype;
  };
  std::vector<Grad> grads;
  for (const auto& pg : param_grads_) {
    Grad g{pg.grad, -1, 0, pg.copy.empty() ? DataType::FLOAT : pg.copy_dtype};
    for (size_t r = 0; r < std::max<size_t>(replicas_.size(), 1); ++r) {
      auto it = last_write.find(Name(r, pg.grad));
      HALFCAF_ENFORCE(it != last_write.end(), "no op of the training net writes the gradient '",
                      Name(r, pg.grad), "'");
      g.ready = std::max(g.ready, it->second);
    }
    g.bytes = static_cast<size_t>(ws_.GetTensor(Name(0, pg.param)).numel()) * DataTypeSize(g.dtype);
    grads.push_back(g);
  }
  std::stable_sort(grads.begin(), grads.end(),
                   [](const Grad& a, const Grad& b) { return a.ready < b.ready; });
  // Buckets of about bucket_bytes (one dtype each), in the order the backward pass finishes them.
  struct Bucket {
    std::vector<std::string> grads;
    size_t bytes = 0;
    int ready = -1;
    DataType dtype;
  };
  std::vector<Bucket> buckets;
  for (const Grad& g : grads) {
    if (buckets.empty() || buckets.back().bytes + g.bytes > static_cast<size_t>(opt_.bucket_bytes) ||
        g.dtype != buckets.back().dtype) {
      buckets.emplace_back();
      buckets.back().dtype = g.dtype;
    }
    Bucket& b = buckets.back();
    b.grads.push_back(g.name);
    b.bytes += g.bytes;
    b.ready = g.ready;
  }
  // The body cut after each bucket's last gradient (and its in-process sum into replica 0).
  std::vector<NetDef> parts(1);
  bucket_blobs_.clear();
  size_t next = 0;
  for (int i = 0; i < body_.op_size(); ++i) {
    *parts.back().add_op() = body_.op(i);
    while (next < buckets.size() && buckets[next].ready == i) {
      AddReduce(buckets[next].grads, replicas_, &parts.back());
      std::vector<std::string> names;
      for (const auto& g : buckets[next].grads) names.push_back(Name(0, g));
      bucket_blobs_.push_back(names);
      parts.emplace_back();
      ++next;
    }
  }
  NetDef post;
  for (const auto& pg : param_grads_) AddBroadcastBack({pg.grad}, replicas_, &post);
  for (const auto& op : tail_.op()) *post.add_op() = op;
  auto create = [&](NetDef net, const std::string& name) -> NetBase* {
    if (net.op_size() == 0) return nullptr;
    net.set_name(name);
    net.set_type(type);
    if (type == "dag") net.set_num_workers(workers);
    return ws_.CreateNet(net);
  };
  pre_exchange_nets_.clear();
  for (size_t k = 0; k < parts.size(); ++k) {
    pre_exchange_nets_.push_back(create(parts[k], "train_part" + std::to_string(k)));
  }
  post_exchange_net_ = create(post, "train_update");
  train_net_ = pre_exchange_nets_.at(0);
  // The exchange gets its own connections, so its thread never shares Gloo's slots with the
  // collectives of this thread (the start-up sync, the statistics).
  exchange_ = std::make_unique<GradientExchange>(opt_.world->Clone(),
                                                 ParseAllreduceAlgorithm(opt_.allreduce_algorithm));
  stats_reducer_ = std::make_unique<Allreducer>(opt_.world);
}

namespace {

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

void Trainer::SyncShards() {
  // The same net everywhere: every state blob's name, dtype and dims, and the replica count.
  std::string desc;
  int64_t values = 0;
  for (const auto& b : checkpoint_blobs_) {
    const Tensor& t = ws_.GetTensor(Name(0, b));
    desc += b + ":" + DataTypeName(t.dtype()) + DimsString(t.dims()) + ";";
    values += t.numel();
  }
  const int64_t replicas = static_cast<int64_t>(std::max<size_t>(replicas_.size(), 1));
  const int64_t mine[4] = {static_cast<int64_t>(Fnv1a(desc)),
                           static_cast<int64_t>(checkpoint_blobs_.size()), values, replicas};
  std::vector<int64_t> all(4 * static_cast<size_t>(shards_));
  Allgatherer(opt_.world).Run({mine}, sizeof(mine), all.data());
  for (int r = 1; r < shards_; ++r) {
    const int64_t* theirs = &all[4 * static_cast<size_t>(r)];
    HALFCAF_ENFORCE(std::equal(theirs, theirs + 4, all.data()),
                    "the processes of this run do not train the same net: rank ", r, " has ",
                    theirs[1], " state blobs holding ", theirs[2], " values and ", theirs[3],
                    " replica(s), rank 0 has ", all[1], " blobs, ", all[2], " values and ", all[3],
                    " replica(s)", theirs[1] == all[1] && theirs[2] == all[2]
                        ? " (the same sizes, other names, dtypes or shapes)" : "",
                    "; start every process with the same --net, --init_net, --dtype and "
                    "--replicas / --gpus count");
  }
  // Rank 0's state and data position, packed in one buffer, to everyone.
  std::vector<Tensor> host(checkpoint_blobs_.size());
  size_t nbytes = 3 * sizeof(int64_t);
  for (size_t i = 0; i < checkpoint_blobs_.size(); ++i) {
    host[i].CopyFrom(ws_.GetTensor(Name(0, checkpoint_blobs_[i])));
    nbytes += host[i].nbytes();
  }
  std::vector<uint8_t> buf(nbytes);
  const std::vector<int64_t> pos = train_reader_->GetState().ToVector();
  std::memcpy(buf.data(), pos.data(), 3 * sizeof(int64_t));
  size_t at = 3 * sizeof(int64_t);
  for (const Tensor& t : host) {
    std::memcpy(buf.data() + at, t.raw_data(), t.nbytes());
    at += t.nbytes();
  }
  Broadcaster(opt_.world).Run(std::vector<void*>{buf.data()}, nbytes, 0);
  if (shard_ == 0) return;
  at = 3 * sizeof(int64_t);
  for (size_t i = 0; i < host.size(); ++i) {
    std::memcpy(host[i].raw_mutable_data(), buf.data() + at, host[i].nbytes());
    at += host[i].nbytes();
    for (size_t r = 0; r < std::max<size_t>(replicas_.size(), 1); ++r) {
      const std::string name = Name(r, checkpoint_blobs_[i]);
      ws_.CreateTensor(name, ws_.GetTensor(name).device())->CopyFrom(host[i]);
    }
  }
  std::vector<int64_t> state(3);
  std::memcpy(state.data(), buf.data(), 3 * sizeof(int64_t));
  train_reader_->SetState(DataReaderState::FromVector(state));
}

void Trainer::MeanOverShards(std::vector<float>* values) {
  if (!opt_.world || values->empty()) return;
  // Always the same buffer and count: the Allreducer keeps its Gloo algorithm (a new one takes a
  // new slot, and every process must take the same slots in the same order).
  HALFCAF_ENFORCE(values->size() <= stats_buffer_.size(), "at most ", stats_buffer_.size(),
                  " values per exchange of statistics");
  std::fill(stats_buffer_.begin(), stats_buffer_.end(), 0.f);
  std::copy(values->begin(), values->end(), stats_buffer_.begin());
  stats_reducer_->Run({stats_buffer_.data()}, static_cast<int64_t>(stats_buffer_.size()),
                      DataType::FLOAT);
  for (size_t i = 0; i < values->size(); ++i) {
    (*values)[i] = stats_buffer_[i] / static_cast<float>(shards_);
  }
}

bool Trainer::AnyShard(bool flag) {
  if (!opt_.world) return flag;
  HALFCAF_ENFORCE(stats_reducer_ != nullptr, "call Initialize or Resume first");
  std::vector<float> v{flag ? 1.f : 0.f};
  MeanOverShards(&v);
  return v[0] > 0;
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
  if (Writes(train_, Name(0, opt_.accuracy_blob))) {
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

void Trainer::CreateTestNet() {
  // The evaluation batch must divide the test set, so every sample counts exactly once (and be a
  // multiple of the number of shards, which share each batch). The net is built with the
  // preferred batch (the training batch, at least 100) and its reader reports the set's size;
  // only when that batch does not divide it is the net built again (the set is read from disk a
  // second time only then). A set that no such batch divides loses its last partial batch.
  const int64_t preferred = (std::max<int64_t>(opt_.batch_size, 100) + shards_ - 1) / shards_ *
                            shards_;
  int64_t b = preferred;
  BuildTestNet(b);
  const int64_t n = test_reader_->num_samples();
  if (n % b != 0) {
    int64_t best = 0;
    for (int64_t c = preferred; c >= shards_ && best == 0; c -= shards_) {
      if (n % c == 0) best = c;
    }
    if (best != 0 && best != b) {
      b = best;
      BuildTestNet(b);
    }
    if (best == 0) {
      LOG(WARNING) << "no multiple of " << shards_ << " up to " << preferred << " divides the "
                   << n << " test samples: evaluation skips the last " << n % b;
    }
  }
  test_batches_ = n / b;
}

void Trainer::BuildTestNet(int64_t batch) {
  // Replica 0 evaluates (its BN statistics).
  const std::string data = Name(0, opt_.data_blob), label = Name(0, opt_.label_blob);
  test_ = MakeDataNet(opt_.test_data, false, batch, data, label);
  test_.set_name("test");
  NetDef fwd = test_forward_;
  if (!replicas_.empty()) fwd = ReplicateNet(fwd, Replica{Device{}, replicas_[0].prefix}, {});
  for (const auto& op : fwd.op()) *test_.add_op() = op;
  PlaceOnDevice(&test_, opt_.device, data, label);
  std::vector<std::shared_ptr<const void>> hold;
  if (opt_.optimize_memory) {
    test_plan_ = PlanNetMemory(test_, "__shared_test_", &hold);
    ApplyMemoryPlan(test_plan_, &test_);
  }
  test_net_ = ws_.CreateNet(test_);
  test_reader_ = dynamic_cast<ResumableReader*>(test_net_->ops().at(0).get());
  HALFCAF_ENFORCE(test_reader_ != nullptr, "the test net's first op is not its DataInput reader");
}

void Trainer::Initialize() {
  ws_.RunNetOnce(init_);
  CreateNets();
  if (opt_.world) SyncShards();
}

void Trainer::Resume(const std::string& path) {
  if (opt_.world && shard_ != 0) {
    // Rank 0 reads the checkpoint (other machines need not see the file) and sends its state.
    Initialize();
    return;
  }
  ws_.RunNetOnce(init_);
  std::map<std::string, std::vector<int64_t>> dims;
  for (const auto& b : checkpoint_blobs_) dims[b] = ws_.GetTensor(Name(0, b)).dims();
  Workspace ckpt;
  FeedTensorProtosFile(path, &ckpt, Checksum::kRequired);
  for (const auto& b : checkpoint_blobs_) {
    // Checkpoints from before the skipped-step runs were tracked start them at 0.
    if ((b == kSkipStreak || b == kMaxSkipStreak) && !ckpt.HasBlob(b)) continue;
    HALFCAF_ENFORCE(ckpt.HasBlob(b), path, ": the checkpoint has no blob '", b,
                    "' (was it written for another net?)");
    const Tensor& t = ckpt.GetTensor(b);
    HALFCAF_ENFORCE(t.dims() == dims[b], path, ": blob '", b, "' has dims ", DimsString(t.dims()),
                    " in the checkpoint but ", DimsString(dims[b]), " in this net");
    // Into every replica's tensor, on the device that holds it.
    for (size_t r = 0; r < std::max<size_t>(replicas_.size(), 1); ++r) {
      const std::string name = Name(r, b);
      ws_.CreateTensor(name, ws_.GetTensor(name).device())->CopyFrom(t);
    }
  }
  HALFCAF_ENFORCE(ckpt.HasBlob(kReaderState), path, ": the checkpoint has no data position");
  const Tensor& st = ckpt.GetTensor(kReaderState);
  CreateNets();
  // Random ops continue their sequences. States are matched by position among the train net's
  // random ops (replica 0's come first); ops without a saved state (more replicas than the
  // checkpoint had, or a checkpoint from before random states were saved) start fresh.
  const std::vector<OperatorBase*> random_ops = RandomOps(TrainNets());
  for (size_t k = 0; k < random_ops.size(); ++k) {
    const std::string name = kRngStatePrefix + std::to_string(k);
    if (!ckpt.HasBlob(name)) {
      LOG(WARNING) << path << ": no random state for " << random_ops[k]->DebugName()
                   << " (random op " << k << "); its draws restart";
      continue;
    }
    LoadRandomState(ckpt.GetTensor(name), path + ": blob '" + name + "'",
                    random_ops[k]->random_generator());
  }
  train_reader_->SetState(DataReaderState::FromVector(
      std::vector<int64_t>(st.data<int64_t>(), st.data<int64_t>() + st.numel())));
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

void Trainer::SaveCheckpoint(const std::string& path) {
  HALFCAF_ENFORCE(train_net_ != nullptr, "nothing to save before Initialize or Resume");
  try {
    CheckSkippedSteps();
  } catch (EnforceNotMet& e) {
    e.AddContext("checkpoint " + path + " not written; the previous one, if any, is kept");
    throw;
  }
  std::vector<int64_t> state = train_reader_->GetState().ToVector();
  Tensor* t = ws_.CreateTensor(kReaderState);
  t->Resize({static_cast<int64_t>(state.size())});
  std::copy(state.begin(), state.end(), t->mutable_data<int64_t>());
  std::vector<std::string> names = checkpoint_blobs_;
  names.push_back(kReaderState);
  // Replica 0's blobs under their single-device names (a checkpoint resumes with any number of
  // replicas, or none); without replicas the workspace's own blobs.
  Workspace out;
  Workspace* src = &ws_;
  if (!replicas_.empty()) {
    src = &out;
    for (const auto& b : checkpoint_blobs_) out.CreateTensor(b)->CopyFrom(ws_.GetTensor(Name(0, b)));
    out.CreateTensor(kReaderState)->CopyFrom(*t);
  }
  const std::vector<OperatorBase*> random_ops = RandomOps(TrainNets());
  for (size_t k = 0; k < random_ops.size(); ++k) {
    const std::string name = kRngStatePrefix + std::to_string(k);
    SaveRandomState(*random_ops[k]->random_generator(), src->CreateTensor(name));
    names.push_back(name);
  }
  TensorProtos protos;
  std::string bad;
  int64_t bad_values = 0, bad_blobs = 0;
  for (const auto& name : names) {
    TensorProto* p = protos.add_protos();
    TensorToProto(src->GetTensor(name), name, p);
    if (const int64_t n = CountNonFinite(*p)) {
      if (bad_blobs++ == 0) bad = name;
      bad_values += n;
    }
  }
  HALFCAF_ENFORCE(bad_blobs == 0, "training diverged at iteration ", iteration(), ": ", bad_values,
                  " parameter or optimizer values are inf or NaN (in '", bad, "'",
                  bad_blobs > 1 ? " and " + std::to_string(bad_blobs - 1) + " other blobs" : "",
                  "); checkpoint ", path, " not written, the previous one, if any, is kept "
                  "(a lower learning rate may help)");
  WriteTensorProtosFile(protos, path);
}

float Trainer::ReadScalar(const std::string& blob) const {
  const Tensor& t = ws_.GetTensor(blob);
  Tensor cpu;
  cpu.CopyFrom(t);
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
  s.has_accuracy = Writes(train_, Name(0, opt_.accuracy_blob));
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

EvalStats Trainer::Evaluate() {
  HALFCAF_ENFORCE(train_net_ != nullptr, "call Initialize or Resume before Evaluate");
  HALFCAF_ENFORCE(!opt_.test_data.empty() || opt_.data_format == "synthetic",
                  "no test data given");
  if (!test_net_) CreateTestNet();
  DataReaderState start = test_reader_->GetState();
  start.epoch = 0;
  start.index = 0;
  test_reader_->SetState(start);
  EvalStats e;
  const bool has_acc = Writes(test_, Name(0, opt_.accuracy_blob));
  for (int64_t i = 0; i < test_batches_; ++i) {
    test_net_->Run();
    e.loss += ReadScalar(Name(0, opt_.loss_blob));
    if (has_acc) e.accuracy += ReadScalar(Name(0, opt_.accuracy_blob));
  }
  test_net_->CheckDeferredErrors();
  if (opt_.world) {
    std::vector<float> sums{static_cast<float>(e.loss), static_cast<float>(e.accuracy)};
    MeanOverShards(&sums);
    e.loss = sums[0];
    e.accuracy = sums[1];
  }
  e.loss /= static_cast<double>(test_batches_);
  e.accuracy /= static_cast<double>(test_batches_);
  e.samples = test_batches_ * test_reader_->batch_size() * shards_;
  return e;
}

}  // namespace halfcaf
