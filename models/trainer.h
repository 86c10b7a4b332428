// Trainer: turns a forward net (with a loss) and its init net into a training run — data input,
// optional mixed precision (FP16 copies, loss scaling, overflow skipping), the backward pass,
// momentum SGD on FP32 master weights with a learning-rate policy, test-set evaluation and
// checkpoints that resume exactly. train_net is a thin command line around it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/net.h"
#include "core/workspace.h"
#include "models/data_parallel.h"
#include "models/model_helper.h"
#include "models/optimizer.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

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
  std::vector<int64_t> synthetic_shape = {1, 28, 28};
  int num_classes = 10;
  int64_t synthetic_count = 1024;
  bool prefetch = true;
  // Blob names in the forward net.
  std::string data_blob = "data", label_blob = "label", loss_blob = "loss",
              accuracy_blob = "accuracy";
  // Optimisation (momentum SGD, learning-rate schedule, weight decay).
  OptimizerOptions optimizer;
  // Precision: float16 = mixed precision; loss_scale is the static scale or the initial
  // dynamic one.
  bool float16 = false;
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
};

// What Trainer::ReadStats reports about the steps since the previous read (the window).
struct StepStats {
  int64_t iter = 0;   // iterations done
  int64_t steps = 0;  // steps in the window
  float loss = 0, accuracy = 0;             // of the last step (mean over the replicas)
  double mean_loss = 0, mean_accuracy = 0;  // over the window's steps (0 for an empty window)
  float lr = 0, loss_scale = 1;             // after the last step
  int64_t skipped_steps = 0;                // overflowing steps skipped so far (mixed precision)
  bool has_accuracy = false;
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
  // Throws when, in mixed precision, max_skipped_steps consecutive steps have overflowed (the
  // longest run of skipped steps is tracked on the device; this reads it).
  void CheckSkippedSteps() const;

  int64_t iteration() const;
  // Data-parallel replicas (empty when one device runs the whole net).
  const std::vector<Replica>& replicas() const { return replicas_; }
  int64_t train_set_size() const;
  const NetDef& train_init_net() const { return init_; }
  const NetDef& train_net() const { return train_; }
  const NetDef& test_net() const { return test_; }
  const std::vector<ParamInfo>& params() const { return params_; }
  Workspace* workspace() { return &ws_; }

 private:
  void BuildNets(const NetDef& init, const NetDef& forward);
  NetDef MakeDataNet(const std::string& source, bool train, int64_t batch_size,
                     const std::string& data, const std::string& label) const;
  // Train and init nets of the data-parallel run: the reader splits each batch between the
  // replicas, every replica runs `step`, the gradients are all-reduced, every replica runs
  // `update`; replica 0 initialises with `state` and the others copy its blobs.
  void BuildReplicated(const NetDef& step, const NetDef& update, const NetDef& state,
                       const std::vector<std::string>& grads);
  void CreateNets();
  // The evaluation net (reader over the whole test set + the test-mode forward net).
  void CreateTestNet();
  void BuildTestNet(int64_t batch);  // the evaluation net with this batch size
  // Blob `blob` of replica `r` (the name itself without data parallelism).
  std::string Name(size_t r, const std::string& blob) const;
  float ReadScalar(const std::string& blob) const;
  float MeanOverReplicas(const std::string& blob) const;
  // The nets that start the window sums of the loss and accuracy (copies) and add one step's.
  void CreateWindowNets();

  TrainerOptions opt_;
  Workspace ws_;
  NetDef init_, train_, test_, test_forward_;
  int64_t test_batches_ = 0;
  std::vector<ParamInfo> params_;
  std::vector<Replica> replicas_;
  // Replica 0's state (unprefixed names): what checkpoints hold, whatever the replica count.
  std::vector<std::string> checkpoint_blobs_;
  NetBase* train_net_ = nullptr;
  NetBase* test_net_ = nullptr;
  NetBase* window_start_ = nullptr;
  NetBase* window_add_ = nullptr;
  int64_t window_steps_ = 0;
  bool stepped_ = false;  // a step ran since Initialize / Resume
  ResumableReader* train_reader_ = nullptr;
  ResumableReader* test_reader_ = nullptr;
};

}  // namespace halfcaf
