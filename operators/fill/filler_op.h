// Fill operators: create a tensor of a given shape filled with a constant, random values or
// given values. The shape comes from `shape` (no input), from the input's shape (one input), or
// from the input's values when input_as_shape=1 (a 1-D int64 tensor); `extra_shape` is appended
// (only with an input). No gradient.
//
// The values are made by a FillSpec, a plain object that writes a host tensor: the CPU operator
// fills its output with it, the CUDA operator (filler_op_gpu.cc) fills a host buffer with the same
// random generator and copies it to the device, so CPU and CUDA give identical values for the
// same random_seed.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/operator.h"

namespace halfcaf {

// The shape arguments shared by every fill op, checked when the op is created.
struct FillShapeArgs {
  std::vector<int64_t> shape, extra_shape;
  bool input_as_shape = false;
};
FillShapeArgs ParseFillShapeArgs(const OperatorBase& op);
// The output dims for this run: from `shape`, input 0's dims, or input 0's values (a CPU tensor).
std::vector<int64_t> FillRunDims(const OperatorBase& op, const FillShapeArgs& args);

// What a fill op writes; made from the op's type and arguments (checked there).
class FillSpec {
 public:
  virtual ~FillSpec() = default;
  DataType dtype() const { return dtype_; }
  // Fills `out` (a CPU tensor already resized to the output dims) with values of dtype().
  virtual void Fill(Tensor* out, std::mt19937* rng) const = 0;
  // True, with the value, when every element is the same constant (filled on the device).
  virtual bool Constant(double* value) const { return false; }

 protected:
  DataType dtype_ = DataType::FLOAT;
};

// The spec of ConstantFill, UniformFill, UniformIntFill, GaussianFill, XavierFill, MSRAFill and
// the GivenTensor*Fill family (given_tensor_fill_op.cc); throws for any other type.
std::unique_ptr<FillSpec> MakeFillSpec(const std::string& type, const ArgumentHelper& args);
std::unique_ptr<FillSpec> MakeGivenTensorFillSpec(const std::string& type,
                                                  const ArgumentHelper& args);

class FillerOp final : public Operator<CPUContext> {
 public:
  FillerOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  FillShapeArgs shape_args_;
  std::unique_ptr<FillSpec> spec_;
};

// Output dims a fill op produces for the given input dims (no input: empty `in`).
std::vector<int64_t> FillOutputDims(const OperatorDef& def, const std::vector<TensorShape>& in);

}  // namespace halfcaf
