// Tensors to and from Python arrays (NumPy, PyTorch, anything with DLPack or the buffer
// protocol), copied or shared.
#pragma once

#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "core/tensor.h"
#include "core/types.h"

namespace halfcaf {
namespace python {

// The halfcaf type of a DLPack element type; throws naming it when halfcaf has none.
DataType FromDlpack(nanobind::dlpack::dtype t);
nanobind::dlpack::dtype ToDlpack(DataType t);

// Fills `out` from `array`. copy: a new tensor on `device` holding the values (converted to
// `as_type` when that is not UNDEFINED: float32 -> bfloat16 rounds to nearest even). !copy: the
// tensor views the array's memory (C-contiguous, on the CPU), keeping the array alive.
void TensorFromArray(const nanobind::ndarray<nanobind::ro>& array, Device device, bool copy,
                     DataType as_type, Tensor* out);

// A Python array of `tensor`. copy: a NumPy array holding a CPU copy (bfloat16 widened to
// float32, which holds every bfloat16 value exactly). !copy: a view of the tensor's storage
// (kept alive by the view): a NumPy array for NumPy's types on the CPU, else an object with
// __dlpack__ (bfloat16, CUDA tensors) for torch.from_dlpack and the like.
nanobind::object ArrayFromTensor(const Tensor& tensor, bool copy);

}  // namespace python
}  // namespace halfcaf
