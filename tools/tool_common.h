// What every command-line tool shares: flag parsing, quiet protobuf/glog, and turning any error
// into one line on stderr and exit code 1.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/strings.h"
#include "core/types.h"
#include "core/workspace.h"

namespace halfcaf {

// Parses flags, runs body, and maps errors to "<tool>: error: <message>" + exit 1.
int RunTool(const char* name, const char* usage, int argc, char** argv,
            const std::function<int()>& body);

// Graceful stop: after this, the first SIGINT or SIGTERM only sets StopSignal() (the tool
// finishes its step and stops cleanly); a second one exits at once with 128 + its number.
// SIGPIPE is ignored (a closed stdout makes writes fail instead of killing the process), and so
// is SIGXFSZ (a write past the file-size limit fails with EFBIG and a clear error).
void InstallStopSignals(const char* tool);
// The first stop signal received (SIGINT, SIGTERM), or 0.
int StopSignal();

// Start-up checks of output paths named by flag --`flag`: the file (or folder) can be created
// there. A file's folder must exist; a symbolic link is checked (and later written) through.
// Both create and remove a probe file; they throw a one-line error naming the flag and path.
void CheckWritableFile(const std::string& path, const char* flag);
void CheckWritableFolder(const std::string& dir, const char* flag);
// Takes an advisory lock (flock) on <dir>/<tool>.lock, writing our pid into it, for as long as the
// process lives; throws naming the holder's pid when another process has it.
void LockFolder(const std::string& dir, const char* tool);

// Placement from the --device / --gpu / --gpus / --replicas flags of train_net and benchmark:
// `device` is "cpu" or "cuda"; `gpus` a comma-separated list of CUDA ids (implies cuda; with
// `device_given` and "cpu" it is an error); `replicas` 0 means one per listed GPU, else 1.
struct Placement {
  Device device;                  // replica 0's device, or the only one
  std::vector<Device> replicas;   // empty for one replica; else replica i on GPU gpus[i % n]
};
Placement ParsePlacement(const std::string& device, bool device_given, int gpu,
                         const std::string& gpus, int replicas);
// "CUDA:0" or "2 data-parallel replicas (CUDA:0, CUDA:1)".
std::string PlacementString(const Placement& p);

// The --output_blobs / --output convention of run_net and run_plan: every blob must exist; with
// `output` they are written to it as TensorProtos (text when it ends in .pbtxt), else each is
// printed (its shape, then its TensorProto).
void OutputBlobs(const Workspace& ws, const std::vector<std::string>& blobs,
                 const std::string& output);

// Each flag --`first` must be >= 0 (counts, where 0 means "none" or "the default").
void CheckNonNegative(const std::vector<std::pair<const char*, int64_t>>& flags);

// Flag --`flag` must be a finite number in [lo, hi] (`hi_open`: [lo, hi)); returns it as a float.
float CheckedFloat(const char* flag, double v, double lo, double hi, bool hi_open = false);

// The comma-separated integers of flag --`flag`, each positive; throws naming the flag and item.
std::vector<int64_t> ParsePositiveInts(const std::string& s, const char* flag);

// `v` with `precision` significant digits.
std::string Fmt(double v, int precision = 4);

// A mixed-precision run's loss scale from --loss_scale: a number (static), `dynamic` (from
// `initial`) or `dynamic:S`. bfloat16, which has float's range, gets a static 1 unless the flag
// was given. Throws with the flag's name on anything else or a scale that is not positive.
struct LossScaleSetting {
  bool dynamic = false;
  float scale = 1.f;
};
LossScaleSetting ParseLossScale(const std::string& flag, bool given, DataType precision,
                                double initial);

// --dtype (float, float16 or bfloat16; else a one-line error) and, for the 16-bit types, the
// loss scale from --loss_scale as ParseLossScale reads it.
struct PrecisionSetting {
  DataType precision = DataType::FLOAT;
  LossScaleSetting loss_scale;
};
PrecisionSetting ParsePrecision(const std::string& dtype, const std::string& loss_scale,
                                bool loss_scale_given, double initial_loss_scale);

// Mixed precision on a CPU where it trains slower than FP32: bfloat16 without oneDNN's BF16
// kernels (it then computes in FP32 over converted copies) and float16 (no CPU kernel computes
// in it). The one-line warning train_net and train_gan print at start-up; empty otherwise.
std::string CpuPrecisionWarning(DataType precision, DeviceType device);

}  // namespace halfcaf
