#include "operators/util/print_op.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <sstream>

#include "core/float_io.h"
#include "core/gradient.h"

namespace halfcaf {

namespace {

constexpr int kDefaultPrintLimit = 1000;

void OpenLog(std::ofstream* file, const std::string& path, std::ios::openmode mode) {
  if (file->is_open()) return;
  file->open(path, mode);
  HALFCAF_ENFORCE(file->is_open(), "cannot open ", path, " for writing");
}

void WriteLog(std::ofstream* file, const std::string& path, const std::string& line) {
  *file << line << '\n';
  file->flush();
  HALFCAF_ENFORCE(file->good(), "cannot write to ", path);
}

}  // namespace

std::string DebugLogPath(const Workspace& ws, const std::string& blob_name,
                         const std::string& extension) {
  std::string file = blob_name;
  std::replace(file.begin(), file.end(), '/', '_');
  return ws.root_folder() + "/" + file + extension;
}

// ---- Print ------------------------------------------------------------------------------------

PrintOp::PrintOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      to_file_(GetSingleArgument<bool>("to_file", false)),
      limit_(GetSingleArgument<int>("limit", 0)),
      every_n_(GetSingleArgument<int>("every_n", 1)) {
  HALFCAF_ENFORCE(limit_ >= 0, "limit must be >= 0 (0 means ", kDefaultPrintLimit,
                  "), got ", limit_);
  HALFCAF_ENFORCE(every_n_ >= 1, "every_n must be >= 1, got ", every_n_);
  if (limit_ == 0) limit_ = kDefaultPrintLimit;
}

std::string PrintOp::Format() const {
  std::ostringstream ss;
  ss << input_name(0);
  const Blob& blob = InputBlob(0);
  if (blob.empty()) return ss.str() + ": (empty blob)";
  if (!blob.IsTensor()) return ss.str() + ": (holds a " + blob.TypeName() + ")";
  const Tensor& held = blob.GetTensor();
  if (held.dtype() == DataType::UNDEFINED) return ss.str() + ": (no data)";
  Tensor cpu;
  const Tensor* t = &held;
  if (held.device().type != DeviceType::CPU) {
    cpu.CopyFrom(held);
    t = &cpu;
  }
  ss << " (" << held.DebugString() << "):";
  const int64_t shown = std::min<int64_t>(t->numel(), limit_);
  DispatchAllTypes(t->dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* d = t->data<T>();
    for (int64_t i = 0; i < shown; ++i) {
      if constexpr (kIsFloat16Storage<T>) {
        ss << ' ' << static_cast<float>(d[i]);
      } else if constexpr (std::is_integral_v<T>) {
        ss << ' ' << static_cast<int64_t>(d[i]);
      } else {
        ss << ' ' << d[i];
      }
    }
  });
  if (shown < t->numel()) ss << " ... (" << t->numel() - shown << " more)";
  return ss.str();
}

void PrintOp::RunOnDevice() {
  if (runs_++ % every_n_ != 0) return;
  const std::string line = Format();
  if (to_file_) {
    const std::string path = DebugLogPath(*ws_, input_name(0), ".log");
    OpenLog(&file_, path, std::ios::out | std::ios::app);
    WriteLog(&file_, path, line);
  } else {
    std::cerr << line << std::endl;
  }
}

// ---- Summarize --------------------------------------------------------------------------------

SummarizeOp::SummarizeOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), to_file_(GetSingleArgument<bool>("to_file", false)) {}

void SummarizeOp::RunOnDevice() {
  const Tensor& X = Input(0);
  EnforceFloatType(X, "Summarize input");
  const int64_t n = X.numel();
  HALFCAF_ENFORCE(n > 0, "Summarize needs at least one element, got ", X.DebugString());
  const float* x = ReadAsFloat(X, &scratch_);
  double lo = x[0], hi = x[0], sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min<double>(lo, x[i]);
    hi = std::max<double>(hi, x[i]);
    sum += x[i];
  }
  const double mean = sum / static_cast<double>(n);
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const double stddev = n > 1 ? std::sqrt(sq / static_cast<double>(n - 1)) : 0.0;
  const float stats[4] = {static_cast<float>(lo), static_cast<float>(hi),
                          static_cast<float>(mean), static_cast<float>(stddev)};
  if (OutputSize() > 0) std::copy(stats, stats + 4, Output(0, {4})->mutable_data<float>());
  std::ostringstream line;
  line.precision(std::numeric_limits<float>::max_digits10);
  line << stats[0] << ' ' << stats[1] << ' ' << stats[2] << ' ' << stats[3];
  if (to_file_) {
    const std::string path = DebugLogPath(*ws_, input_name(0), ".summary");
    OpenLog(&file_, path, std::ios::out | std::ios::trunc);
    WriteLog(&file_, path, line.str());
  } else if (OutputSize() == 0) {
    std::cerr << input_name(0) << " min max mean std: " << line.str() << std::endl;
  }
}

REGISTER_CPU_OPERATOR(Print, PrintOp);
REGISTER_CPU_OPERATOR(Summarize, SummarizeOp);
SHOULD_NOT_DO_GRADIENT(Print);
SHOULD_NOT_DO_GRADIENT(Summarize);

OPERATOR_SCHEMA(Print)
    .NumInputs(1)
    .NumOutputs(0)
    .SetDoc("Debug print of a blob: 'name (type[dims]): values...' with at most `limit` "
            "values, to stderr or (to_file = 1) appended to <workspace root>/<blob name>.log "
            "('/' in the name becomes '_'). Prints on the 1st run and then every every_n-th run. "
            "Empty blobs and non-tensors are reported rather than treated as errors.")
    .Arg("to_file", "int, default 0: 1 appends to <root>/<blob name>.log instead of stderr")
    .Arg("limit", "int, default 0: most values printed; 0 means 1000")
    .Arg("every_n", "int, default 1: print once every n runs")
    .Input(0, "tensor", "the blob to print (any type, any device)");

OPERATOR_SCHEMA(Summarize)
    .NumInputs(1)
    .NumOutputs(0, 1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>&) {
      return std::vector<TensorShape>{TensorShape{{4}, DataType::FLOAT}};
    })
    .PointwiseCost(3)
    .SetDoc("Summary statistics of a float or float16 tensor: min, max, mean and standard "
            "deviation (N-1 denominator; 0 for a single element), computed in double. With "
            "to_file = 1 each run appends 'min max mean std' to <workspace root>/<blob "
            "name>.summary, which is started afresh on the op's first run; with to_file = 0 "
            "and no output the line goes to stderr.")
    .Arg("to_file", "int, default 0: 1 writes to <root>/<blob name>.summary")
    .Input(0, "X", "float or float16 tensor with at least one element")
    .Output(0, "summary", "optional float [4]: min, max, mean, std");

}  // namespace halfcaf
