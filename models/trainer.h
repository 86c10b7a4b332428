// Trainer: turns a forward net (with a loss) and its init net into a training run. The training
// passes (models/training_job.h) build the step and update: optional mixed precision (FP16 copies,
// loss scaling, overflow skipping), the backward pass, momentum SGD on FP32 master weights with a
// learning-rate policy, parameter groups and frozen parameters. The trainer places them (device,
// replicas, processes), plans their memory and runs them: data input, test-set evaluation and
// checkpoints that resume exactly (trainer_data.cc, trainer_shards.cc, trainer_checkpoint.cc).
// train_net is a thin command line around it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/net.h"
#include "core/workspace.h"
#include "models/data_parallel.h"
#include "models/memory_plan.h"
#include "models/model_helper.h"
#include "models/optimizer.h"
#include "models/training_job.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

class Allreducer;
class CommonWorld;
class GradientExchange;
class ResumableReader;

struct TrainerOptions {
  // Data.
  std::string train_data, test_data;
  std::string data_format = "idx";  // idx | cifar10 | synthetic
  int64_t batch_size = 64;
  std::string order = "NCHW";
  // A pixel p becomes (p * data_scale - mean[c]) / std[c]; one value or one per channel.
  float data_scale = 1.f / 255.f;
  std::vector<float> data_mean = {0.f}, data_std = {1.f};
  // Augmentation of training samples (DataInput's crop / pad / mirror; evaluation takes the
  // centre crop x crop window and never flips).
  int64_t crop = 0, pad = 0;
  bool mirror = false;
  bool shuffle = true;  // training samples in a new random order each epoch (else file order)
  std::vector<int64_t> synthetic_shape = {1, 28, 28};
  int num_classes = 10;
  int64_t synthetic_count = 1024;
  bool prefetch = true;
  // Blob names in the forward net.
  std::string data_blob = "data", label_blob = "label", loss_blob = "loss",
              accuracy_blob = "accuracy";
  // Optimisation (momentum SGD, learning-rate schedule, weight decay), and parameter groups:
  // lr_mult / decay_mult, or frozen (train_net --freeze); the first group a name matches.
  OptimizerOptions optimizer;
  std::vector<ParamGroup> param_groups;
  // Precision: FLOAT trains in FP32; FLOAT16 or BFLOAT16 is mixed precision (models/
  // mixed_precision.h: 16-bit copies of the Conv/FC parameters, activations and gradients, FP32
  // masters). loss_scale is the static scale or the initial dynamic one; overflowing steps are
  // skipped in both 16-bit types.
  DataType precision = DataType::FLOAT;
  bool mixed_precision() const { return precision != DataType::FLOAT; }
  bool dynamic_loss_scale = false;
  float loss_scale = 1.f;
  int64_t scale_growth_interval = 1000;
  // Mixed precision: a run whose steps overflow this many times in a row has diverged
  // (CheckSkippedSteps fails); 0 = no limit.
  int64_t max_skipped_steps = 32;
  // Optional separate forward net for evaluation (same parameter names; e.g. without dropout).
  // Empty: the training forward net in test mode.
  NetDef test_forward;
  // Placement and randomness. `device` runs the whole net; `replicas` (two or more entries,
  // devices may repeat) trains data-parallel instead: one replica per entry, each on
  // batch_size / replicas samples of every batch, gradients summed across replicas
  // (models/data_parallel.h). batch_size is the total over all replicas.
  Device device;
  std::vector<Device> replicas;
  // Executor of the training net: "simple" (ops in order), "dag" (independent ops on worker
  // threads: data-parallel replicas on different GPUs then queue their work concurrently, each
  // waiting on its own device) or "" = dag when the replicas span two or more GPUs, else simple.
  std::string net_type;
  uint32_t seed = 1;
  // Multi-process data parallelism (distributed/, over Gloo): `world` (CommonWorld::Create) joins
  // this process to the others of the run as shard world->rank() of world->size(). Every shard
  // reads its slice of each global batch of batch_size samples (a disjoint part of every epoch),
  // sums its replicas' gradients, then the shards all-reduce them in buckets of about
  // bucket_bytes, on a communication thread while the rest of the backward pass runs; every
  // replica of every shard then takes the same step. At start the shards check that they train
  // the same net and take rank 0's state (parameters, optimizer state, position: rank 0 alone
  // reads a checkpoint on Resume). Every collective is bounded by the world's timeout.
  // nullptr: one process.
  std::shared_ptr<CommonWorld> world;
  std::string allreduce_algorithm;  // halving_doubling (""), ring_chunked or bcube
  int64_t bucket_bytes = 4 << 20;
  // Memory planning (models/memory_plan.h): the temporaries of the training net (activations,
  // their gradients, FP16 casts) and of the evaluation net share buffers, so a step needs the
  // memory of what is alive at once. Parameters, their gradients, the optimizer and loss-scale
  // state, the loss, the accuracy and `keep_blobs` (names as in the forward net; fetched from
  // workspace() between steps, say) keep their own blobs.
  bool optimize_memory = true;
  std::vector<std::string> keep_blobs;
  // Channels last (models/channels_last.h): the forward net's 2-D convolutions and the batch
  // normalization, pooling and element-wise ops between them run in NHWC, parameters staying NCHW.
  // "auto": on for BF16 training on a CPU whose oneDNN runs BF16 kernels (AMX, AVX512_BF16), where
  // it saves the reorders of every activation (ResNet-50: 1.76x the NCHW step); "on", "off".
  std::string channels_last = "auto";
  // The channel-blocked layout (models/channels_last.h ToChannelBlocked): FP32 convolutions,
  // training batch normalization and the element-wise ops between them on oneDNN's channel
  // blocks (16 channels with AVX-512, 8 with AVX2), without its reorders at every op. "auto": on
  // for FP32 NCHW training on the CPU with oneDNN (not with channels last); "on"; "off".
  std::string blocked_layout = "auto";
  // The convolutions' algorithm: "direct" (oneDNN's direct kernels); "winograd": Winograd's for
  // the 3 x 3, stride 1 convolutions (F(4x4, 3x3): fewer multiplications, 2-3x faster at 28 x 28
  // and 56 x 56 on AVX-512; results ~1e-5 relative from the direct ones) where oneDNN has it,
  // float32 training on the CPU only (ResolveWinograd, training_job.h).
  std::string conv_algorithm = "direct";
  // Recomputation (models/recompute.h): "elementwise": the backward pass makes the outputs of
  // batch normalization, the element-wise ops, casts and layout transposes again instead of
  // keeping them from the forward pass; "all": the convolutions between pools and residual
  // merges too. Less memory (ResNet-50: BENCHMARKS.md), the same gradients bit for bit, the time
  // of those ops once more. "off": everything the gradients read is kept.
  std::string recompute = "off";
  // Dims of the forward net's blobs where known (e.g. an imported ONNX model's static shapes,
  // TrainableNets::blob_dims): the gradient makers of Add / Sub / Mul / Div see a NumPy
  // broadcast in them (models/backward.h). Without them those ops' inputs are taken as equal in
  // shape (or as Caffe2's legacy broadcast=1 says).
  std::map<std::string, std::vector<int64_t>> blob_dims;
};

// Checks an all-reduce algorithm's name for training across processes (tools check the flag
// before meeting the others, so that every process fails alike): unknown names and the ring,
// whose sums differ between processes in the last bit, are refused.
void EnforceTrainingAllreduce(const std::string& algorithm);

// What Trainer::ReadStats reports about the steps since the previous read (the window).
struct StepStats {
  int64_t iter = 0;   // iterations done
  int64_t steps = 0;  // steps in the window
  float loss = 0, accuracy = 0;             // of the last step (mean over the replicas)
  double mean_loss = 0, mean_accuracy = 0;  // over the window's steps (0 for an empty window)
  float lr = 0, loss_scale = 1;             // after the last step
  int64_t skipped_steps = 0;                // overflowing steps skipped so far (mixed precision)
  bool has_accuracy = false;
  // Multi-process runs: the gradient exchange over the window's steps (this process's view):
  // seconds on the communication thread, seconds the step waited for it (the part not hidden
  // behind the backward pass), gradient bytes all-reduced. With a world, the loss and accuracy
  // are the means over every shard (the global batch).
  double exchange_s = 0, exposed_s = 0;
  int64_t exchange_bytes = 0;
};

struct EvalStats {
  double loss = 0, accuracy = 0;
  int64_t samples = 0;
};

class Trainer {
 public:
  // Builds the nets (throws EnforceNotMet with a clear message on a net without the loss, a
  // missing data/label blob, an unsupported dtype/device, ...). Nothing runs yet.
  Trainer(const NetDef& init, const NetDef& forward, const TrainerOptions& options);
  ~Trainer();

  // Whether the forward net runs channels last (TrainerOptions::channels_last, resolved).
  bool channels_last() const { return channels_last_; }
  // The channel block of the blocked layout (TrainerOptions::blocked_layout, resolved; 0 when off,
  // or under "auto" when it took no convolution), and how many of the forward net's convolutions
  // it took.
  int64_t channel_block() const { return channel_block_; }
  int blocked_convolutions() const { return blocked_convs_; }
  // How the convolutions and what runs between them run, for the tools' headers: "channels last",
  // "channel-blocked (16: 53 convolutions)", "batch norm + ReLU fused (33)" (models/
  // bn_relu_fusion.h), "residual add + ReLU fused (16)" (models/residual_relu_fusion.h),
  // "Winograd (13 convolutions)" (those asking for it: conv_algorithm), joined by ", "; empty
  // when none applies.
  std::string ConvolutionSummary() const;

  // Runs the init net (fresh start).
  void Initialize();
  // Restores a checkpoint written by SaveCheckpoint (after building, instead of Initialize).
  void Resume(const std::string& path);
  // Runs one training iteration. Reads nothing back from the device, so on CUDA the host queues
  // the next step while the device works: the loss and accuracy are summed on the device over
  // the window, and errors ops find on the device (a label out of range) wait for ReadStats.
  void Step();
  // Stats of the window of steps since the previous call (or since Initialize / Resume): waits for
  // the device, reports what the ops found on it since the last read (throws the op's
  // EnforceNotMet: a bad label of any step of the window), reads the loss, accuracy, learning
  // rate and loss-scale state, and starts a new window. Call it when logging, not every step.
  StepStats ReadStats();
  // Whole test set, in test mode (BN statistics, no dropout). Needs options.test_data.
  EvalStats Evaluate();
  // Parameters, momenta, FP16 copies, BN statistics, iteration, loss-scale state and the data
  // position, written atomically with a checksum. Throws, leaving the file at `path` as it was,
  // when any of it is inf or NaN (a diverged run) or CheckSkippedSteps fails.
  void SaveCheckpoint(const std::string& path);
  // The training run as one Caffe2 PlanDef (models/trainer_plan.cc), for run_plan or any plan
  // executor: networks "train_init" (the init net with the optimizer state), "train" (reader,
  // forward, backward, update), and with test data "test" plus "test_sum_start", "test_sum_add"
  // and "test_mean"; steps: the init net once, then `iterations` training iterations with the
  // whole test set evaluated after every `test_every` (0: at the end only) and at the end,
  // leaving the mean test loss and accuracy in "test/loss" and "test/accuracy". Every op has an
  // explicit random seed and data paths are absolute, so run_plan reproduces this trainer's run
  // from Initialize bit for bit. Call after Initialize; one process only.
  PlanDef TrainingPlan(int64_t iterations, int64_t test_every);
  // Throws when, in mixed precision, max_skipped_steps consecutive steps have overflowed (the
  // longest run of skipped steps is tracked on the device; this reads it).
  void CheckSkippedSteps() const;

  int64_t iteration() const;
  // Whether `flag` is true in any process of the run: a collective (every process calls it at the
  // same point, e.g. once per step to stop together on a signal that reached only some). One
  // process: `flag`.
  bool AnyShard(bool flag);
  // Multi-process runs: this process's shard and the number of shards (0 and 1 without a world).
  int shard_id() const { return shard_; }
  int num_shards() const { return shards_; }
  // Data-parallel replicas (empty when one device runs the whole net).
  const std::vector<Replica>& replicas() const { return replicas_; }
  int64_t train_set_size() const;
  const NetDef& train_init_net() const { return init_; }
  const NetDef& train_net() const { return train_; }
  const NetDef& test_net() const { return test_; }
  const std::vector<ParamInfo>& params() const { return params_; }
  // The parameters being trained with their gradient blobs, by replica-less name (ReplicaBlob
  // gives replica 0's). After a Step a gradient holds what that step's update used: in mixed
  // precision FP16/BF16 and multiplied by the loss scale the step ran with (LossScale before it).
  const std::vector<ParamGradient>& param_gradients() const { return param_grads_; }
  std::string ReplicaBlob(const std::string& blob) const { return Name(0, blob); }
  // The loss scale the next Step multiplies the loss by (1 without loss scaling).
  float LossScale() const;
  // Parameters of frozen groups (never updated).
  const std::vector<std::string>& frozen_params() const { return frozen_; }
  Workspace* workspace() { return &ws_; }
  // The memory plans of the training and evaluation nets (empty before Initialize / Resume, or
  // without optimize_memory; the evaluation net's once it is built).
  const MemoryPlan& train_memory_plan() const { return train_plan_; }
  const MemoryPlan& test_memory_plan() const { return test_plan_; }

 private:
  void BuildNets(const NetDef& init, const NetDef& forward);
  NetDef MakeDataNet(const std::string& source, bool train, int64_t batch_size,
                     const std::string& data, const std::string& label) const;
  // Train and init nets of the data-parallel run: the reader splits each batch between the
  // replicas, every replica runs `step`, the gradients are all-reduced, every replica runs
  // `update`; replica 0 initialises with `state` and the others copy its blobs.
  void BuildReplicated(const NetDef& step, const NetDef& update, const NetDef& state);
  // Replica `i` of this process, numbered across the run's processes (0 for the first of rank
  // 0): mixed into the seeds of its random ops, so every replica draws its own Dropout masks and
  // N processes train as N replicas in one.
  uint64_t ReplicaSalt(size_t i) const {
    return static_cast<uint64_t>(shard_) * std::max<size_t>(replicas_.size(), 1) + i;
  }
  void CreateNets();
  // Multi-process: the training nets split where gradient buckets are complete, the exchange.
  void CreateShardedNets(const std::string& type, int workers);
  // Multi-process: checks that every shard has the same net, then copies rank 0's state (and
  // data position) to every shard.
  void SyncShards();
  // Sums `values` over the shards and divides by their number (no-op in one process).
  void MeanOverShards(std::vector<float>* values);
  // Every net a training step runs, in order.
  std::vector<NetBase*> TrainNets() const;
  // The evaluation net (reader over the whole test set + the test-mode forward net).
  void CreateTestNet();
  void BuildTestNet(int64_t batch);  // the evaluation net with this batch size
  // Blobs memory planning must not share: state, gradients, what the trainer reads.
  std::set<std::string> KeptBlobs() const;
  // The memory plan of `net` (whose first op is its DataInput reader), sized by shape inference
  // from the workspace's tensors and the reader's sample dims; `hold` keeps the reader's data
  // set loaded until the net is created, so it is read once.
  MemoryPlan PlanNetMemory(const NetDef& net, const std::string& prefix,
                           std::vector<std::shared_ptr<const void>>* hold) const;
  // The evaluation net's blob for the forward net's `blob` (its loss and accuracy).
  static std::string TestBlob(const std::string& blob) { return "test_batch/" + blob; }
  // Blob `blob` of replica `r` (the name itself without data parallelism).
  std::string Name(size_t r, const std::string& blob) const;
  float ReadScalar(const std::string& blob) const;
  float MeanOverReplicas(const std::string& blob) const;
  // The nets that start the window sums of the loss and accuracy (copies) and add one step's.
  void CreateWindowNets();

  TrainerOptions opt_;
  Workspace ws_;
  NetDef init_, train_, test_, test_forward_;
  // The training net's parts: data + forward/backward of every replica (body), the replicas'
  // updates (tail); train_ = body, in-process gradient sum, tail.
  NetDef body_, tail_;
  std::vector<ParamGradient> param_grads_;
  int64_t test_batches_ = 0;
  std::vector<ParamInfo> params_;
  std::vector<std::string> frozen_;
  std::vector<Replica> replicas_;
  // Replica 0's state (unprefixed names): what checkpoints hold, whatever the replica count.
  std::vector<std::string> checkpoint_blobs_;
  MemoryPlan train_plan_, test_plan_;
  NetBase* train_net_ = nullptr;
  NetBase* test_net_ = nullptr;
  NetBase* window_start_ = nullptr;
  NetBase* window_add_ = nullptr;
  int64_t window_steps_ = 0;
  bool stepped_ = false;  // a step ran since Initialize / Resume
  bool channels_last_ = false;
  int64_t channel_block_ = 0;
  int blocked_convs_ = 0;
  int winograd_convs_ = 0;
  int bn_relu_fused_ = 0;  // SpatialBN + Relu pairs run as one op (models/bn_relu_fusion.h)
  int residual_relu_fused_ = 0;  // Add + Relu pairs run as one op (models/residual_relu_fusion.h)
  ResumableReader* train_reader_ = nullptr;
  ResumableReader* test_reader_ = nullptr;
  // Multi-process.
  int shards_ = 1, shard_ = 0;
  std::unique_ptr<GradientExchange> exchange_;  // on a clone of the world
  std::unique_ptr<Allreducer> stats_reducer_;
  std::vector<float> stats_buffer_ = std::vector<float>(4);
  std::vector<NetBase*> pre_exchange_nets_;      // net k is followed by bucket k's Start
  std::vector<std::vector<std::string>> bucket_blobs_;
  NetBase* post_exchange_net_ = nullptr;         // after Wait: copies to replicas, updates
};

}  // namespace halfcaf
