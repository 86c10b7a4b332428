// Helpers shared by the operators that read integer class labels (SoftmaxWithLoss,
// LabelCrossEntropy, Accuracy): shape/type checks and the range check, with messages that name
// the operator, the sample and the label.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace halfcaf {

// Checks that `labels` is int32 holding one label per sample: N elements shaped (N), (N, 1),
// lead_dims or lead_dims + [1] (lead_dims: the dims of the data input before the class axis).
inline void CheckLabelTensor(const Tensor& labels, int64_t N, const std::vector<int64_t>& lead_dims,
                             const std::string& op) {
  HALFCAF_ENFORCE(labels.dtype() == DataType::INT32, op, ": labels must be int32, got ",
                  labels.DebugString());
  const std::vector<int64_t>& d = labels.dims();
  std::vector<int64_t> lead_one = lead_dims;
  lead_one.push_back(1);
  const bool shape_ok =
      labels.numel() == N && (d == std::vector<int64_t>{N} || d == std::vector<int64_t>{N, 1} ||
                              d == lead_dims || d == lead_one);
  HALFCAF_ENFORCE(shape_ok, op, ": labels must hold one label per sample, shaped (", N, ") or (", N,
                  ", 1), got dims ", DimsString(d), " for ", N, " samples");
}

// "<op>: label <label> of sample <sample> is out of range, expected 0 <= label < <num_classes>
// (the number of classes)".
inline std::string LabelRangeMessage(int32_t label, int64_t sample, int64_t num_classes,
                                     const std::string& op) {
  return MakeString(op, ": label ", label, " of sample ", sample,
                    " is out of range, expected 0 <= label < ", num_classes,
                    " (the number of classes)");
}

// Throws unless 0 <= label < num_classes.
inline void CheckLabelValue(int32_t label, int64_t sample, int64_t num_classes,
                            const std::string& op) {
  HALFCAF_ENFORCE(label >= 0 && label < num_classes,
                  LabelRangeMessage(label, sample, num_classes, op));
}

}  // namespace halfcaf
