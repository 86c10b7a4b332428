// Helpers shared by the ONNX converters (internal to onnx/).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onnx/converter.h"

namespace halfcaf {
namespace onnx_import {

// Refuses the node when this build has no CPU operator `type`.
void RequireOperator(const ConvertContext& c, const std::string& type);

// NumPy broadcast of two shapes; false when they do not broadcast.
bool BroadcastShape(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                    std::vector<int64_t>* out);
// Whether `small` repeats over `big` under Caffe2's one-directional broadcast with NumPy's
// trailing alignment: `small`'s dims without leading and trailing ones equal the dims of `big`
// they line up with (size-1 dims inside are not allowed).
bool CaffeBroadcastable(const std::vector<int64_t>& big, const std::vector<int64_t>& small);

// A negative axis counted from the end, checked against the rank.
int64_t NormalizeAxis(const ConvertContext& c, int64_t axis, int64_t rank,
                      const std::string& what = "axis");

}  // namespace onnx_import
}  // namespace halfcaf
