#include "models/trainer.h"

#include <algorithm>
#include <map>
#include <set>

#include <glog/logging.h>

#include "core/argument.h"
#include "core/operator.h"
#include "core/tensor_proto.h"
#include "models/backward.h"
#include "models/mixed_precision.h"
#include "models/optimizer.h"
#include "operators/data_input_op.h"
#include "operators/dataset_reader.h"

namespace halfcaf {

namespace {

const char kLossScale[] = "loss_scale";
const char kFoundInf[] = "found_inf";
const char kGoodSteps[] = "loss_scale_good_steps";
const char kSkipped[] = "skipped_steps";
const char kReaderState[] = "data_reader_state";

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
    const bool conv = op.type() == "ConvGradient" || op.type() == "Conv2DGradient";
    const bool fc = op.type() == "FCGradient";
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
    const bool cpu_only = op.type() == "DataInput" || op.type() == "Iter" ||
                          (op.output_size() == 1 && op.output(0) == kIterBlob);
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

int64_t LargestDivisorAtMost(int64_t n, int64_t cap) {
  for (int64_t b = std::min(n, cap); b > 1; --b) {
    if (n % b == 0) return b;
  }
  return 1;
}

}  // namespace

Trainer::Trainer(const NetDef& init, const NetDef& forward, const TrainerOptions& options)
    : opt_(options) {
  HALFCAF_ENFORCE(opt_.batch_size > 0, "batch size must be positive, got ", opt_.batch_size);
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

NetDef Trainer::MakeDataNet(const std::string& source, bool train, int64_t batch_size) const {
  // A synthetic set is a function of the seed, so the test reader sees the training samples
  // (in order): synthetic data measures speed and fitting, not generalisation.
  const int64_t seed = static_cast<int64_t>(opt_.seed);
  std::vector<Argument> args{
      MakeArgument("source", source),
      MakeArgument("format", opt_.data_format),
      MakeArgument("batch_size", batch_size),
      MakeArgument("shuffle", train ? 1 : 0),
      MakeArgument("seed", seed),
      MakeArgument("scale", opt_.data_scale),
      MakeArgument("mean", opt_.data_mean),
      MakeArgument("std", opt_.data_std),
      MakeArgument("order", opt_.order),
      MakeArgument("dtype", opt_.float16 ? "float16" : "float"),
      MakeArgument("prefetch", opt_.prefetch ? 1 : 0)};
  if (opt_.data_format == "synthetic") {
    args.push_back(MakeArgument("synthetic_shape", opt_.synthetic_shape));
    args.push_back(MakeArgument("num_classes", opt_.num_classes));
    args.push_back(MakeArgument("synthetic_count", opt_.synthetic_count));
  }
  NetDef net;
  *net.add_op() = MakeOperatorDef("DataInput", train ? "train_reader" : "test_reader", {},
                                  {opt_.data_blob, opt_.label_blob}, args);
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
    HALFCAF_ENFORCE(opt_.float16, "the forward net is already mixed precision (its init net makes "
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
  } else if (opt_.float16) {
    MixedPrecisionResult mp = ToMixedPrecision(forward, {opt_.data_blob}, trainable);
    fwd = mp.net;
    fp16_copies.insert(mp.fp16_params.begin(), mp.fp16_params.end());
  }

  // Backward, seeded with the loss scale in mixed precision.
  NetDef body = fwd;
  const int first_grad = body.op_size();
  std::map<std::string, std::string> seeds;
  if (opt_.float16) seeds[opt_.loss_blob] = kLossScale;
  std::map<std::string, GradientWrapper> grads;
  try {
    grads = Backward(&body, {opt_.loss_blob}, seeds);
  } catch (EnforceNotMet& e) {
    e.AddContext("building the backward pass for loss '" + opt_.loss_blob + "'");
    throw;
  }
  // Gradient of each trainable master (through its FP16 copy when it has one).
  std::vector<ParamGradient> param_grads;
  std::set<std::string> wanted;
  for (const auto& p : params_) {
    if (!trainable.count(p.name)) continue;
    std::string via = fp16_copies.count(p.name) ? Fp16CopyName(p.name) : p.name;
    auto it = grads.find(via);
    if (it == grads.end() || !it->second.IsDense()) continue;  // not differentiable: frozen
    param_grads.push_back(ParamGradient{p.name, it->second.dense, p.role,
                                        fp16_copies.count(p.name) ? Fp16CopyName(p.name) : ""});
    wanted.insert(it->second.dense);
  }
  HALFCAF_ENFORCE(!param_grads.empty(), "no parameter of the net receives a gradient from '",
                  opt_.loss_blob, "'");
  PruneBackward(&body, first_grad, wanted);

  // Train net: reader, forward + backward, overflow check, optimizer, loss scale. Init net: the
  // user's, then the FP16 copies, the optimizer's state and the loss-scale state.
  train_ = MakeDataNet(opt_.train_data, true, opt_.batch_size);
  train_.set_name("train");
  for (const auto& op : body.op()) *train_.add_op() = op;
  init_ = init;
  init_.set_name("train_init");
  for (const auto& p : fp16_copies) {
    if (premade.count(Fp16CopyName(p))) continue;
    *init_.add_op() = MakeOperatorDef("FloatToHalf", "", {p}, {Fp16CopyName(p)});
  }
  std::vector<std::string> grad_blobs;
  for (const auto& pg : param_grads) grad_blobs.push_back(pg.grad);
  if (opt_.float16) *train_.add_op() = MakeOperatorDef("CheckFinite", "", grad_blobs, {kFoundInf});
  AddMomentumSGD(opt_.optimizer, param_grads, opt_.float16 ? kLossScale : "",
                 opt_.float16 ? kFoundInf : "", &train_, &init_);
  if (opt_.float16) {
    // A static scale never changes, but overflowing steps are still skipped and counted.
    std::vector<Argument> args{MakeArgument("growth_interval", opt_.scale_growth_interval)};
    if (!opt_.dynamic_loss_scale) args = {MakeArgument("growth", 1.f), MakeArgument("backoff", 1.f)};
    *train_.add_op() = MakeOperatorDef("UpdateLossScale", "",
                                       {kLossScale, kFoundInf, kGoodSteps, kSkipped},
                                       {kLossScale, kGoodSteps, kSkipped}, args);
  }
  *init_.add_op() = Fill(kLossScale, {}, DataType::FLOAT, opt_.float16 ? opt_.loss_scale : 1.f);
  *init_.add_op() = Fill(kGoodSteps, {1}, DataType::INT64, 0.f);
  *init_.add_op() = Fill(kSkipped, {1}, DataType::INT64, 0.f);
  PlaceOnDevice(&init_, opt_.device, opt_.data_blob, opt_.label_blob);
  PlaceOnDevice(&train_, opt_.device, opt_.data_blob, opt_.label_blob);
  for (const auto& op : init_.op()) {
    for (const auto& o : op.output()) {
      if (std::find(checkpoint_blobs_.begin(), checkpoint_blobs_.end(), o) ==
          checkpoint_blobs_.end()) {
        checkpoint_blobs_.push_back(o);
      }
    }
  }

  if (opt_.test_forward.op_size() == 0) {
    test_forward_ = TestModeForward(fwd);
  } else {
    HALFCAF_ENFORCE(Writes(opt_.test_forward, opt_.loss_blob), "the test net has no loss: no op "
                    "writes '", opt_.loss_blob, "'");
    NetDef test_fwd = opt_.test_forward;
    if (opt_.float16 && premade.empty()) {
      test_fwd = ToMixedPrecision(test_fwd, {opt_.data_blob}, trainable).net;
    }
    test_forward_ = TestModeForward(test_fwd);
  }
}

void Trainer::CreateNets() {
  train_net_ = ws_.CreateNet(train_);
  train_reader_ = dynamic_cast<DataInputOp*>(train_net_->ops().at(0).get());
  CHECK(train_reader_ != nullptr);
}

void Trainer::Initialize() {
  ws_.RunNetOnce(init_);
  CreateNets();
}

void Trainer::Resume(const std::string& path) {
  ws_.RunNetOnce(init_);
  std::map<std::string, std::vector<int64_t>> dims;
  for (const auto& b : checkpoint_blobs_) dims[b] = ws_.GetTensor(b).dims();
  Workspace ckpt;
  FeedTensorProtosFile(path, &ckpt);
  for (const auto& b : checkpoint_blobs_) {
    HALFCAF_ENFORCE(ckpt.HasBlob(b), path, ": the checkpoint has no blob '", b,
                    "' (was it written for another net?)");
    const Tensor& t = ckpt.GetTensor(b);
    HALFCAF_ENFORCE(t.dims() == dims[b], path, ": blob '", b, "' has dims ", DimsString(t.dims()),
                    " in the checkpoint but ", DimsString(dims[b]), " in this net");
    // Into the device the init net left the blob on (a CUDA parameter stays on the GPU;
    // CreateTensor's default device would move it to the host, where the CUDA ops reject it).
    ws_.CreateTensor(b, ws_.GetTensor(b).device())->CopyFrom(t);
  }
  HALFCAF_ENFORCE(ckpt.HasBlob(kReaderState), path, ": the checkpoint has no data position");
  const Tensor& st = ckpt.GetTensor(kReaderState);
  CreateNets();
  train_reader_->SetState(DataReaderState::FromVector(
      std::vector<int64_t>(st.data<int64_t>(), st.data<int64_t>() + st.numel())));
}

void Trainer::SaveCheckpoint(const std::string& path) {
  HALFCAF_ENFORCE(train_net_ != nullptr, "nothing to save before Initialize or Resume");
  std::vector<int64_t> state = train_reader_->GetState().ToVector();
  Tensor* t = ws_.CreateTensor(kReaderState);
  t->Resize({static_cast<int64_t>(state.size())});
  std::copy(state.begin(), state.end(), t->mutable_data<int64_t>());
  std::vector<std::string> names = checkpoint_blobs_;
  names.push_back(kReaderState);
  WriteBlobsToFile(ws_, names, path);
}

float Trainer::ReadScalar(const std::string& blob) const {
  const Tensor& t = ws_.GetTensor(blob);
  Tensor cpu;
  cpu.CopyFrom(t);
  HALFCAF_ENFORCE(cpu.numel() >= 1, "blob '", blob, "' is empty");
  switch (cpu.dtype()) {
    case DataType::FLOAT: return cpu.data<float>()[0];
    case DataType::FLOAT16: return static_cast<float>(cpu.data<Half>()[0]);
    case DataType::INT64: return static_cast<float>(cpu.data<int64_t>()[0]);
    case DataType::INT32: return static_cast<float>(cpu.data<int32_t>()[0]);
    default: HALFCAF_THROW("blob '", blob, "' is ", cpu.DebugString(), ", not a number");
  }
}

StepStats Trainer::Step() {
  HALFCAF_ENFORCE(train_net_ != nullptr, "call Initialize or Resume before Step");
  train_net_->Run();
  StepStats s;
  s.iter = iteration();
  s.loss = ReadScalar(opt_.loss_blob);
  s.has_accuracy = ws_.HasBlob(opt_.accuracy_blob) && Writes(train_, opt_.accuracy_blob);
  if (s.has_accuracy) s.accuracy = ReadScalar(opt_.accuracy_blob);
  s.lr = ReadScalar(kLrBlob);
  s.loss_scale = ReadScalar(kLossScale);
  s.skipped_steps = static_cast<int64_t>(ReadScalar(kSkipped));
  return s;
}

int64_t Trainer::iteration() const { return ws_.GetTensor(kIterBlob).data<int64_t>()[0]; }

int64_t Trainer::train_set_size() const {
  HALFCAF_ENFORCE(train_reader_ != nullptr, "the training reader is not created yet");
  return train_reader_->source().size();
}

EvalStats Trainer::Evaluate() {
  HALFCAF_ENFORCE(train_net_ != nullptr, "call Initialize or Resume before Evaluate");
  HALFCAF_ENFORCE(!opt_.test_data.empty() || opt_.data_format == "synthetic",
                  "no test data given");
  if (!test_net_) {
    // A batch size that divides the test set, so every sample counts exactly once.
    int64_t n = opt_.synthetic_count;
    if (opt_.data_format == "idx") {
      n = LoadIdxDataset(opt_.test_data)->size();
    } else if (opt_.data_format == "cifar10") {
      n = LoadCifar10Dataset(opt_.test_data)->size();
    }
    const int64_t b = LargestDivisorAtMost(n, std::max<int64_t>(opt_.batch_size, 100));
    test_batches_ = n / b;
    test_ = MakeDataNet(opt_.test_data, false, b);
    test_.set_name("test");
    for (const auto& op : test_forward_.op()) *test_.add_op() = op;
    PlaceOnDevice(&test_, opt_.device, opt_.data_blob, opt_.label_blob);
    test_net_ = ws_.CreateNet(test_);
    test_reader_ = dynamic_cast<DataInputOp*>(test_net_->ops().at(0).get());
  }
  DataReaderState start = test_reader_->GetState();
  start.epoch = 0;
  start.index = 0;
  test_reader_->SetState(start);
  EvalStats e;
  const bool has_acc = Writes(test_, opt_.accuracy_blob);
  for (int64_t i = 0; i < test_batches_; ++i) {
    test_net_->Run();
    e.loss += ReadScalar(opt_.loss_blob);
    if (has_acc) e.accuracy += ReadScalar(opt_.accuracy_blob);
  }
  e.loss /= static_cast<double>(test_batches_);
  e.accuracy /= static_cast<double>(test_batches_);
  e.samples = test_batches_ * test_reader_->batch_size();
  return e;
}

}  // namespace halfcaf
