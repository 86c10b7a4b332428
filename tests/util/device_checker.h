// CPU vs CUDA checker: runs one operator on the CPU (the reference) and on CUDA:0 with the same
// inputs (copied to the GPU), copies the CUDA outputs back and compares them with the CPU ones:
// same dims and dtype, values within a tolerance chosen by dtype (FP32 tight, FP16 within FP16
// rounding and accumulation-order differences). CUDA builds only (tests/gpu/).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "gpu/cuda_context.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {

#ifndef REQUIRE_GPU
#define REQUIRE_GPU() \
  if (::halfcaf::NumCudaDevices() == 0) \
  GTEST_SKIP() << "no CUDA device (" << ::halfcaf::CudaDeviceError() << ")"
#endif

struct DeviceCheckOptions {
  // |cuda - cpu| <= atol + rtol * |cpu|, by the output's dtype.
  float atol = 1e-4f, rtol = 1e-4f;      // float outputs: FP32 math on both sides
  float atol16 = 1e-2f, rtol16 = 1e-2f;  // float16 outputs
  float atol_bf16 = 5e-2f, rtol_bf16 = 3e-2f;  // bfloat16 outputs (8x coarser than float16)
  std::vector<int> outputs;              // outputs to compare; empty = all
  std::string engine = "<keep>";         // CUDA engine; "<keep>" = def.engine()
  int cuda_runs = 2;                     // the last run is compared (later runs hit caches)
};

class DeviceChecker {
 public:
  explicit DeviceChecker(DeviceCheckOptions opts = {}) : opts_(std::move(opts)) {}

  // Runs `def` on CPU and CUDA with `inputs` (any dtypes; fed unchanged to both) and compares.
  void Check(const OperatorDef& def, const std::map<std::string, Tensor>& inputs) const {
    SCOPED_TRACE(def.type() + " on CPU vs CUDA");
    ASSERT_GT(NumCudaDevices(), 0);
    // CPU reference.
    Workspace ws_cpu;
    OperatorDef cpu_def = def;
    cpu_def.mutable_device_option()->set_device_type(0);
    cpu_def.clear_engine();
    RunOp(cpu_def, inputs, &ws_cpu);

    // CUDA.
    Workspace ws_gpu;
    const Device gpu{DeviceType::CUDA, 0};
    OperatorDef gpu_def = def;
    gpu_def.mutable_device_option()->set_device_type(1);
    gpu_def.mutable_device_option()->set_device_id(0);
    if (opts_.engine != "<keep>") gpu_def.set_engine(opts_.engine);
    Feed(inputs, gpu, &ws_gpu);
    auto op = CreateOperator(gpu_def, &ws_gpu);
    for (int r = 0; r < opts_.cuda_runs; ++r) {
      if (r > 0) Feed(inputs, gpu, &ws_gpu);  // in-place ops overwrite their inputs
      op->Run(0);
      const cudaError_t err = cudaDeviceSynchronize();
      ASSERT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
    }

    std::vector<int> outs = opts_.outputs;
    if (outs.empty()) {
      for (int o = 0; o < def.output_size(); ++o) outs.push_back(o);
    }
    for (int o : outs) {
      const std::string& name = def.output(o);
      const Tensor& want = ws_cpu.GetTensor(name);
      const Tensor& got_dev = ws_gpu.GetTensor(name);
      EXPECT_EQ(got_dev.device(), gpu) << "output " << o << " '" << name << "'";
      Tensor got;
      got.CopyFrom(got_dev);
      ASSERT_EQ(got.dims(), want.dims()) << "output " << o << " '" << name << "'";
      ASSERT_EQ(got.dtype(), want.dtype()) << "output " << o << " '" << name << "'";
      const bool half = want.dtype() == DataType::FLOAT16;
      const bool bf16 = want.dtype() == DataType::BFLOAT16;
      ExpectNear(ToFloatVector(got), ToFloatVector(want),
                 half ? opts_.atol16 : bf16 ? opts_.atol_bf16 : opts_.atol,
                 half ? opts_.rtol16 : bf16 ? opts_.rtol_bf16 : opts_.rtol,
                 def.type() + " CUDA vs CPU, output " + std::to_string(o) + " '" + name + "' (" +
                     DataTypeName(want.dtype()) + ")");
    }
  }

 private:
  // Copies the inputs to `device`; waits, since the copies do not order with the op's stream.
  static void Feed(const std::map<std::string, Tensor>& inputs, Device device, Workspace* ws) {
    for (const auto& kv : inputs) ws->CreateTensor(kv.first, device)->CopyFrom(kv.second);
    HALFCAF_ENFORCE(cudaDeviceSynchronize() == cudaSuccess, "copying inputs to the GPU failed");
  }

  DeviceCheckOptions opts_;
};

// Inputs as given (float) or their float tensors converted to float16 or bfloat16, for running
// one check in several precisions.
inline std::map<std::string, Tensor> AsDtype(const std::map<std::string, Tensor>& inputs,
                                             DataType dtype) {
  std::map<std::string, Tensor> out;
  for (const auto& kv : inputs) {
    if (dtype != DataType::FLOAT && kv.second.dtype() == DataType::FLOAT) {
      out[kv.first] = ToFloat16Type(kv.second, dtype);
    } else {
      out[kv.first].CopyFrom(kv.second);
    }
  }
  return out;
}

}  // namespace testing
}  // namespace halfcaf
