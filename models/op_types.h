// Operator families the model code treats alike: every name of Caffe2's convolution (Conv and its
// rank aliases) and fully-connected (FC, FCTransposed) operators. Their input 1 is the weight,
// input 2 the optional bias; their gradient ops are the name + "Gradient".
#pragma once

#include <string>

#include "proto/halfcaf.pb.h"

namespace halfcaf {

// An op without a device option or with a CPU one (the CPU's default engines then run it).
inline bool RunsOnCpu(const OperatorDef& op) {
  return !op.has_device_option() || op.device_option().device_type() == 0;
}

inline bool IsConvType(const std::string& type) {
  return type == "Conv" || type == "Conv1D" || type == "Conv2D" || type == "Conv3D";
}

inline bool IsFCType(const std::string& type) { return type == "FC" || type == "FCTransposed"; }

inline bool IsConvOrFCType(const std::string& type) { return IsConvType(type) || IsFCType(type); }

// "ConvGradient" -> "Conv"; "" when `type` is not a gradient op name.
inline std::string ForwardTypeOfGradient(const std::string& type) {
  static const std::string kSuffix = "Gradient";
  if (type.size() <= kSuffix.size() ||
      type.compare(type.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return "";
  }
  return type.substr(0, type.size() - kSuffix.size());
}

}  // namespace halfcaf
