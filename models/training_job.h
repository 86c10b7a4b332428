// A training job as the passes build it: the init net and one or more training nets that share a
// workspace (and may share parameters), each with its losses, optimizer, parameter groups and
// loss scale. A pass (models/passes/) rewrites the job; the standard pipeline is, in order:
//
//   ParamsPass          the parameters (from the init and forward nets), which train, which are
//                       frozen, which group each belongs to
//   MixedPrecisionPass  FP16 / BF16 forward, 16-bit copies of the masters made by the init net
//   ChannelsLastPass    when the job asks: convolutions and the ops between them in NHWC
//   ConvAlgorithmPass   when the job asks: Winograd's algorithm for the 3 x 3 convolutions
//   BNReluPass          when the job asks: batch normalization and the ReLU after it as one op
//   BackwardPass        gradients of the weighted losses (seeded with the loss scale), pruned to
//                       what the trained parameters need
//   ResidualReluPass    when the job asks: the ReLU after a residual Add in the Add, and the Sum
//                       of gradients before its ReluGradient in the ReluGradient
//   RecomputePass       when the job asks: cheap activations made again in the backward part
//   OptimizerPass       overflow check, the update of every trained parameter (its group's rate
//                       and decay), the loss-scale update, and their state in the init net
//
// after which Trainer places the nets (device, data-parallel replicas, processes), plans their
// memory and runs them. Each pass reads and writes only the job, so a test can run one alone.
//
//   TrainingJob job = MakeJob(init, precision);
//   job.nets.push_back(JobNet::Make("", forward, {{"loss", 1.f}}, optimizer));
//   RunPasses(StandardPasses(), &job);   // then job.init, job.nets[k].step / .update
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/types.h"
#include "models/model_helper.h"
#include "models/optimizer.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

struct LossTerm {
  std::string blob;
  float weight = 1.f;  // the gradient of blob is seeded with weight (times the loss scale)
};

// Parameters whose name matches `pattern` (ECMAScript regex, searched anywhere in the name):
// Caffe's lr_mult / decay_mult, or frozen (never updated, no optimizer state; gradients still flow
// through them to the parameters before them). The first group that matches a parameter is its
// group.
struct ParamGroup {
  std::string pattern;
  float lr_mult = 1.f, decay_mult = 1.f;
  bool frozen = false;
};

// One training net of the job: what it is given, and what the passes build.
struct JobNet {
  // Given.
  std::string name;  // prefixes its state blobs ("<name>/lr", ...); "" for a one-net job
  NetDef forward;    // forward net computing the losses
  std::vector<LossTerm> losses;
  OptimizerOptions optimizer;
  std::vector<ParamGroup> groups;
  std::set<std::string> no_cast_inputs;  // blobs the mixed-precision forward gets in 16 bits
  // Built.
  std::vector<ParamInfo> params;     // the parameters the forward net reads
  std::map<std::string, ParamGroup> param_group;  // every learned parameter's group
  std::set<std::string> trained;     // those this net's optimizer updates (not frozen)
  std::set<std::string> lowp;        // masters the forward net reads through a 16-bit copy
  NetDef step;                       // forward + backward
  int backward_begin = 0;            // index in `step` of its first gradient op
  NetDef update;                     // overflow check, optimizer, loss-scale update
  std::vector<ParamGradient> param_grads;

  // The name of this net's state blob `blob` ("loss_scale" -> "<name>/loss_scale").
  std::string State(const std::string& blob) const {
    return name.empty() ? blob : name + "/" + blob;
  }
  static JobNet Make(const std::string& name, const NetDef& forward, std::vector<LossTerm> losses,
                     const OptimizerOptions& optimizer);
};

struct TrainingJob {
  NetDef init;        // the user's init net; passes append the state they need
  DataType precision = DataType::FLOAT;  // FLOAT16 / BFLOAT16: mixed precision
  bool dynamic_loss_scale = false;
  float loss_scale = 1.f;  // static scale, or the dynamic one's start (one per net)
  int64_t scale_growth_interval = 1000;
  // Data-parallel replicas over all processes: each replica's loss is the mean over its share,
  // so the loss gradient is seeded with loss_scale / replicas.
  int64_t replicas = 1;
  // Masters whose 16-bit copies the init net makes already (an already mixed-precision net):
  // copy name -> master.
  std::map<std::string, std::string> premade_copies;
  std::map<std::string, std::vector<int64_t>> blob_dims;  // shapes for broadcasting gradients
  // Blobs of the forward nets the caller reads after a step (besides the losses): they keep
  // their names and layout (NCHW under channels last) and are never recomputed.
  std::set<std::string> caller_reads;
  // Channels last (models/channels_last.h): the forward nets' 2-D convolutions and the ops
  // between them run in NHWC; with nchw_filters (CPU jobs) the convolutions take their NCHW
  // filters as they are (filter_order) instead of transposing them in every step.
  bool channels_last = false;
  bool nchw_filters = false;
  // The channel-blocked layout (models/channels_last.h ToChannelBlocked) when not 0: the forward
  // nets' FP32 convolutions, training batch normalization and the element-wise ops between them
  // on oneDNN's channel blocks of this many channels. Not with channels_last.
  int64_t channel_block = 0;
  // Winograd's algorithm (conv_algorithm = 1) for the forward nets' 3 x 3, stride 1 convolutions
  // and their gradients: oneDNN's Winograd kernels where it has them (float32, AVX-512).
  bool winograd = false;
  // Batch normalization and the ReLU after it as one op (models/bn_relu_fusion.h): for nets on
  // the CPU in float32 (any layout) or bfloat16 channels last. BNReluPass counts the pairs it
  // fused in bn_relu_fused.
  bool fuse_bn_relu = false;
  int bn_relu_fused = 0;
  // The ReLU after a residual Add in the Add, and the Sum of gradients before its ReluGradient in
  // the ReluGradient (models/residual_relu_fusion.h): for nets on the CPU (float32, float16,
  // bfloat16).
  // ResidualReluPass counts the Adds it fused in residual_relu_fused, the Sums in
  // residual_sums_fused.
  bool fuse_residual_relu = false;
  int residual_relu_fused = 0;
  int residual_sums_fused = 0;
  // Recomputation (models/recompute.h): the backward pass makes the outputs of batch
  // normalization and the element-wise ops (and with recompute_convolutions, the convolutions
  // between checkpoints) again instead of keeping them.
  bool recompute = false;
  bool recompute_convolutions = false;
  std::vector<JobNet> nets;

  // caller_reads and `net`'s losses.
  std::set<std::string> ReadAfterStep(const JobNet& net) const {
    std::set<std::string> read = caller_reads;
    for (const LossTerm& l : net.losses) read.insert(l.blob);
    return read;
  }

  bool mixed_precision() const { return precision != DataType::FLOAT; }
};

TrainingJob MakeJob(const NetDef& init, DataType precision);

// A trainer's conv_algorithm setting resolved into TrainingJob::winograd: "direct" false;
// "winograd" true, for float32 training on the CPU (an error naming what is missing otherwise:
// cuDNN chooses its own algorithms, and oneDNN's Winograd kernels are float32 ones). Throws on
// another setting.
bool ResolveWinograd(const std::string& setting, DataType precision, DeviceType device);

class TrainingPass {
 public:
  virtual ~TrainingPass() = default;
  virtual const char* name() const = 0;
  virtual void Apply(TrainingJob* job) const = 0;
};

// Runs the passes in order; an error names the pass (and the net) it came from.
void RunPasses(const std::vector<std::unique_ptr<TrainingPass>>& passes, TrainingJob* job);

// Names of the state blobs of a net's loss scaling (before JobNet::State's prefix).
extern const char kLossScale[];      // 0-d float: the scale
extern const char kFoundInf[];       // 0-d float: this step's gradients overflowed (0 / 1)
extern const char kGoodSteps[];      // int64 (1): clean steps since the last change
extern const char kSkipped[];        // int64 (1): overflowing steps skipped so far
extern const char kSkipStreak[];     // 0-d float: the current run of skipped steps
extern const char kMaxSkipStreak[];  // 0-d float: the longest run
extern const char kLossGradSeed[];   // loss_scale / replicas, the loss gradient's seed

}  // namespace halfcaf
