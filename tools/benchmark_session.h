// benchmark's sessions: what one timed iteration runs (a training step, the forward net, the
// AC-GAN's two steps). The sessions built on the trainer and the forward net live in
// benchmark.cc; the AC-GAN's is here.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/argument.h"
#include "core/net.h"
#include "core/workspace.h"
#include "models/gan_trainer.h"

namespace halfcaf {
namespace bench {

// The tensor type of a --precision entry: fp32, fp16 or bf16.
inline DataType PrecisionType(const std::string& precision) {
  if (precision == "fp16") return DataType::FLOAT16;
  if (precision == "bf16") return DataType::BFLOAT16;
  return DataType::FLOAT;
}

// A --precision entry's name for a tensor type.
inline std::string PrecisionName(DataType t) {
  return t == DataType::FLOAT16 ? "fp16" : t == DataType::BFLOAT16 ? "bf16" : "fp32";
}

// "fp32: what; bf16: what" for the header.
inline std::string JoinNotes(const std::map<std::string, std::string>& notes) {
  std::string out;
  for (const auto& [precision, note] : notes) {
    out += (out.empty() ? "" : "; ") + precision + ": " + note;
  }
  return out;
}

class Session {
 public:
  virtual ~Session() = default;
  virtual void Step() = 0;
  // Starts the window of the exchange times (after the warm-up); ExchangeMs reads them.
  virtual void StartTiming() {}
  // Milliseconds per step of gradient exchange and of its exposed part since StartTiming.
  virtual std::pair<double, double> ExchangeMs() { return {0, 0}; }
  virtual NetBase* net() = 0;
  virtual Workspace* workspace() = 0;
  virtual int64_t skipped_steps() { return 0; }
  // An iteration timed in parts (empty: one whole): their names, and the last Step's times.
  virtual std::vector<std::string> PartNames() const { return {}; }
  virtual std::vector<double> LastPartMs() const { return {}; }
  // The nets --per_op profiles one by one, when the iteration has several (else net()).
  virtual std::vector<NetBase*> PartNets() { return {}; }
};

// The AC-GAN's iteration (models/gan_trainer.h): the discriminator's step and update, then the
// generator's, on synthetic 1 x 28 x 28 images of 10 classes, Adam on both; fp16 with a static
// loss scale per network (--loss_scale), bf16 unscaled. Timed as a whole and in its two parts.
class GanSession : public Session {
 public:
  GanSession(DataType precision, int64_t batch, Device device, float loss_scale, uint32_t seed,
             const std::string& channels_last, const std::string& blocked_layout,
             bool optimize_memory, const std::string& recompute, std::function<void()> sync)
      : sync_(std::move(sync)) {
    GanTrainerOptions o = GanTrainerOptions::Default();
    o.data_format = "synthetic";
    o.reader_args = {MakeArgument("synthetic_shape", std::vector<int64_t>{1, 28, 28}),
                     MakeArgument("num_classes", 10),
                     MakeArgument("synthetic_count", std::max<int64_t>(1024, batch))};
    o.model.batch_size = batch;
    o.precision = precision;
    o.loss_scale = precision == DataType::FLOAT16 ? loss_scale : 1.f;
    o.device = device;
    o.seed = seed;
    o.channels_last = channels_last;
    o.blocked_layout = blocked_layout;
    o.optimize_memory = optimize_memory;
    o.recompute = recompute;
    gan_ = std::make_unique<GanTrainer>(o);
    gan_->Initialize();
  }
  void Step() override {
    const auto t0 = Clock::now();
    gan_->StepDiscriminator();
    sync_();
    const auto t1 = Clock::now();
    gan_->StepGenerator();
    sync_();
    const auto t2 = Clock::now();
    parts_ = {std::chrono::duration<double, std::milli>(t1 - t0).count(),
              std::chrono::duration<double, std::milli>(t2 - t1).count()};
  }
  void StartTiming() override { stats_ = gan_->ReadStats(); }
  std::vector<std::string> PartNames() const override { return {"d_step", "g_step"}; }
  std::vector<double> LastPartMs() const override { return parts_; }
  NetBase* net() override { return nullptr; }
  // The two steps (forward and backward); their updates are not profiled.
  std::vector<NetBase*> PartNets() override {
    return {gan_->workspace()->GetNet("d_step"), gan_->workspace()->GetNet("g_step")};
  }
  Workspace* workspace() override { return gan_->workspace(); }
  int64_t skipped_steps() override {
    const GanStats s = gan_->ReadStats();
    return s.d_skipped + s.g_skipped;
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::function<void()> sync_;
  std::unique_ptr<GanTrainer> gan_;
  GanStats stats_;
  std::vector<double> parts_;
};

}  // namespace bench
}  // namespace halfcaf
