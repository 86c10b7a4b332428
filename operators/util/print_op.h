// Debug output ops.
//   Print (tensor) -> nothing: writes "name (type[dims]): v0 v1 ..." (at most `limit` values,
//     0 -> 1000) to stderr, or with to_file = 1 appends it to <root folder>/<blob name>.log;
//     only every `every_n`-th run prints (the 1st, the (n+1)-th, ...).
//   Summarize (float tensor) -> optional [4] float (min, max, mean, std with the N-1
//     denominator, 0 for one element); with to_file = 1 each run appends "min max mean std" to
//     <root folder>/<blob name>.summary (the file is started afresh on the op's first run).
// A '/' in a blob name becomes '_' in the file name, so gpu_0/x logs to gpu_0_x.log.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "core/operator.h"

namespace halfcaf {

// <root>/<blob name with '/' replaced by '_'><extension>.
std::string DebugLogPath(const Workspace& ws, const std::string& blob_name,
                         const std::string& extension);

class PrintOp final : public Operator<CPUContext> {
 public:
  PrintOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  std::string Format() const;

  bool to_file_;
  int limit_;
  int every_n_;
  int64_t runs_ = 0;
  std::ofstream file_;
};

class SummarizeOp final : public Operator<CPUContext> {
 public:
  SummarizeOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  bool to_file_;
  std::ofstream file_;
  std::vector<float> scratch_;
};

}  // namespace halfcaf
