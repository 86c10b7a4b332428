// Cast and the fixed FloatToHalf / HalfToFloat conversions (cast_op.cc; CUDA: cast_op_gpu.cc).
#pragma once

#include <string>

#include "core/argument.h"
#include "core/types.h"

namespace halfcaf {

// A type argument (`to`, `from_type`): a TensorProto.DataType value or name; `dflt` when absent.
DataType ReadTypeArg(const ArgumentHelper& args, const std::string& name, DataType dflt);

}  // namespace halfcaf
