// GanTrainer: trains the AC-GAN (models/acgan.h) as a training job of two nets sharing one
// workspace (models/training_job.h): each iteration the discriminator's step and update, then the
// generator's. Each net has its own optimizer (Adam, beta1 0.5 by default), its own loss scale
// (dynamic by default in FP16) and its own skip-on-overflow; the parameters of the other network
// are frozen in a net (gradients flow through the discriminator to the generator, whose step does
// not update the discriminator). FP32, or mixed precision in FP16 / BF16 (16-bit copies of the
// Conv / ConvTranspose / FC weights, BatchNorm and the losses in FP32).
//
// The real batches come from a DataInput reader at the head of the discriminator's step (pixels
// p -> p * 2/255 - 1, the generator's tanh range); the nets draw their own noise and requested
// classes, from seeds fixed by `seed`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/types.h"
#include "core/workspace.h"
#include "models/acgan.h"
#include "models/memory_plan.h"
#include "models/optimizer.h"
#include "models/training_job.h"

namespace halfcaf {

class NetBase;
class ResumableReader;

struct GanTrainerOptions {
  std::string train_data;
  std::string data_format = "idx";  // any DataInput format: idx, quickdraw, synthetic, ...
  std::vector<Argument> reader_args;  // extra DataInput arguments (split, per_class, ...)
  AcGanOptions model;                 // its batch_size is the training batch
  OptimizerOptions d_optimizer, g_optimizer;
  DataType precision = DataType::FLOAT;
  bool dynamic_loss_scale = false;
  float loss_scale = 1.f;
  int64_t scale_growth_interval = 1000;
  int64_t max_skipped_steps = 32;  // consecutive overflows of one net that end the run; 0: never
  Device device;
  uint32_t seed = 1;
  bool prefetch = true;
  // Both nets' convolutions, transposed convolutions and the ops between them in NHWC
  // (models/channels_last.h): auto (BF16 on CPUs computing convolutions in BF16), on, off.
  std::string channels_last = "auto";
  // FP32 on the CPU: both nets' convolutions, transposed convolutions, batch normalization and the
  // element-wise ops between them on oneDNN's channel-blocked layout (models/channels_last.h
  // ToChannelBlocked): auto (on where it applies), on, off.
  std::string blocked_layout = "auto";
  // Recomputation in each net's backward pass (models/recompute.h): off, elementwise, all.
  std::string recompute = "off";
  // Memory planning (models/memory_plan.h) over an iteration's four nets: the temporaries of
  // both steps share buffers where their lifetimes do not overlap.
  bool optimize_memory = true;
  // No reader and no noise ops: the caller feeds data, label, d_noise, d_gen_label, g_noise and
  // g_gen_label (float / int32, data in FP32) before each Step (step-by-step comparisons).
  bool feed_inputs = false;

  // Adam with the GAN recipe's settings (lr 2e-4, beta1 0.5, beta2 0.999) for both nets.
  static GanTrainerOptions Default();
};

struct GanStats {
  int64_t iter = 0, steps = 0;            // iterations done; steps in the window
  double d_loss = 0, g_loss = 0;          // means over the window
  double d_accuracy = 0;                  // the class head on the real batches, window mean
  float d_loss_scale = 1, g_loss_scale = 1;
  int64_t d_skipped = 0, g_skipped = 0;   // overflowing steps skipped so far
};

class GanTrainer {
 public:
  // Builds the job (throws on bad options). Nothing runs yet.
  explicit GanTrainer(const GanTrainerOptions& options);
  ~GanTrainer();

  // Runs the init net and creates the nets.
  void Initialize();
  // One iteration: discriminator step and update, generator step and update.
  void Step();
  // Its two halves, for timing them apart: StepDiscriminator, then StepGenerator, is Step.
  void StepDiscriminator();
  void StepGenerator();
  // Means since the previous call, the loss scales and skipped steps; checks the losses of
  // FP32 runs are finite and, in mixed precision, that no net has overflowed max_skipped_steps
  // times in a row (throws EnforceNotMet naming the net).
  GanStats ReadStats();
  // Images (N, 1, 28, 28) float in [0, 1] (0 = background) from the generator in test mode, for
  // `noise` (N, noise_dim) float and `labels` (N) int32.
  Tensor Sample(const Tensor& noise, const Tensor& labels);
  // `per_class` images of every class, class-major, from noise drawn with `seed`; the classes
  // go to *labels (int32).
  Tensor SampleClasses(int64_t per_class, uint32_t seed, Tensor* labels);

  int64_t iteration() const;
  bool channels_last() const { return job_.channels_last; }
  bool channel_blocked() const { return job_.channel_block != 0; }
  int64_t train_set_size() const;
  const TrainingJob& job() const { return job_; }
  const AcGanNets& nets() const { return nets_; }
  // The iteration's memory plan (empty without optimize_memory, or before the nets are created).
  const MemoryPlan& memory_plan() const { return memory_plan_; }
  Workspace* workspace() { return &ws_; }

 private:
  void CreateNets();
  MemoryPlan PlanIterationMemory(const std::vector<NetDef>& defs) const;
  float ReadScalar(const std::string& blob) const;
  void CheckSkipped(const JobNet& net) const;

  GanTrainerOptions opt_;
  AcGanNets nets_;
  TrainingJob job_;
  Workspace ws_;
  std::vector<NetBase*> nets_run_;  // d step, d update, g step, g update
  MemoryPlan memory_plan_;
  NetBase* sampler_ = nullptr;
  NetBase* window_start_ = nullptr;
  NetBase* window_add_ = nullptr;
  int64_t window_steps_ = 0;
  bool initialized_ = false;
  ResumableReader* reader_ = nullptr;
};

}  // namespace halfcaf
