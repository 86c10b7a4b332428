// Cast and the fixed conversions FloatToHalf / HalfToFloat and FloatToBFloat16 / BFloat16ToFloat
// (cast_op.cc; CUDA: cast_op_gpu.cc).
#pragma once

#include <string>

#include "core/argument.h"
#include "core/tensor.h"
#include "core/types.h"

namespace halfcaf {

// A type argument (`to`, `from_type`): a TensorProto.DataType value or name; `dflt` when absent.
DataType ReadTypeArg(const ArgumentHelper& args, const std::string& name, DataType dflt);

// Throws unless the input X of a fixed cast (`op_type`, e.g. BFloat16ToFloat) has type `from`.
void EnforceFixedCastInput(const Tensor& X, DataType from, const std::string& op_type);

}  // namespace halfcaf
