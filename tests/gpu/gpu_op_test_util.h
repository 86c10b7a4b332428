// Helpers for CUDA operator tests beyond DeviceChecker: running one op on CPU and on CUDA:0 with
// inputs of any dtype (some of them kept on the host, as CPUInput expects), and exact comparison
// of any-dtype results. CUDA builds only; callers skip without a device (REQUIRE_GPU).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/util/device_checker.h"

namespace halfcaf {
namespace testing {

inline OperatorDef OnCuda(OperatorDef def) {
  def.mutable_device_option()->set_device_type(1);
  def.mutable_device_option()->set_device_id(0);
  return def;
}

inline OperatorDef OnCpu(OperatorDef def) {
  def.mutable_device_option()->set_device_type(0);
  return def;
}

// The outputs of one op run on each device, copied to the host.
struct CpuCudaOutputs {
  std::vector<Tensor> cpu, cuda;
  std::vector<Device> cuda_devices;  // where the CUDA op left each output
};

// Runs `def` once on CPU and `cuda_runs` times on CUDA:0 (inputs re-fed before each run). Inputs
// named in `host_inputs` stay CPU tensors on the CUDA side too.
inline CpuCudaOutputs RunCpuAndCuda(const OperatorDef& def,
                                    const std::map<std::string, Tensor>& inputs,
                                    const std::set<std::string>& host_inputs = {},
                                    int cuda_runs = 1) {
  CpuCudaOutputs out;
  Workspace ws_cpu;
  RunOp(OnCpu(def), inputs, &ws_cpu);
  Workspace ws_gpu;
  const Device gpu{DeviceType::CUDA, 0};
  auto feed = [&] {
    for (const auto& kv : inputs) {
      ws_gpu.CreateTensor(kv.first, host_inputs.count(kv.first) ? Device() : gpu)
          ->CopyFrom(kv.second);
    }
    HALFCAF_ENFORCE(cudaDeviceSynchronize() == cudaSuccess, "feeding the GPU failed");
  };
  feed();
  auto op = CreateOperator(OnCuda(def), &ws_gpu);
  for (int r = 0; r < cuda_runs; ++r) {
    if (r > 0) feed();
    op->Run(0);
    const cudaError_t err = cudaDeviceSynchronize();
    HALFCAF_ENFORCE(err == cudaSuccess, "CUDA op failed: ", cudaGetErrorString(err));
  }
  for (int o = 0; o < def.output_size(); ++o) {
    out.cpu.emplace_back();
    out.cpu.back().CopyFrom(ws_cpu.GetTensor(def.output(o)));
    const Tensor& g = ws_gpu.GetTensor(def.output(o));
    out.cuda_devices.push_back(g.device());
    out.cuda.emplace_back();
    out.cuda.back().CopyFrom(g);
  }
  return out;
}

// Same dims, dtype and bytes.
// Every output of the CUDA run within rtol (relative, plus 1e-3 absolute slack) of the CPU run's,
// with the same dtypes.
inline void ExpectCudaClose(const CpuCudaOutputs& r, const OperatorDef& def, float rtol) {
  for (size_t o = 0; o < r.cpu.size(); ++o) {
    SCOPED_TRACE("output " + def.output(o));
    const std::vector<float> got = ToFloatVector(r.cuda[o]), want = ToFloatVector(r.cpu[o]);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_EQ(r.cuda[o].dtype(), r.cpu[o].dtype());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], rtol * (std::fabs(want[i]) + 1e-3f)) << "element " << i;
    }
  }
}

inline void ExpectIdentical(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dims(), want.dims()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.nbytes(), want.nbytes()) << what;
  if (want.nbytes() == 0) return;
  EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()), 0)
      << what << ": values differ";
}

// Runs on both devices and expects every output identical (integer ops, copies, layouts, fills).
inline void ExpectCudaIdentical(const OperatorDef& def,
                                const std::map<std::string, Tensor>& inputs,
                                const std::set<std::string>& host_inputs = {},
                                int cuda_runs = 1) {
  SCOPED_TRACE(def.type() + " on CPU vs CUDA (exact)");
  const CpuCudaOutputs r = RunCpuAndCuda(def, inputs, host_inputs, cuda_runs);
  for (size_t o = 0; o < r.cpu.size(); ++o) {
    ExpectIdentical(r.cuda[o], r.cpu[o],
                    "output " + std::to_string(o) + " '" + def.output(o) + "'");
  }
}

// A tensor of `dtype` (int32, int64, double, ...) holding the given values.
template <typename T>
Tensor TypedTensor(std::vector<int64_t> dims, const std::vector<T>& values) {
  Tensor t(std::move(dims), DataTypeOf<T>());
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  std::copy(values.begin(), values.end(), t.mutable_data<T>());
  return t;
}

// `t` (float) converted element-wise to T with static_cast.
template <typename T>
Tensor CastTensor(const Tensor& t, float scale = 1.f) {
  Tensor out(t.dims(), DataTypeOf<T>());
  const float* s = t.data<float>();
  T* d = out.mutable_data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = static_cast<T>(s[i] * scale);
  return out;
}

// Runs `def` on CUDA:0 with inputs on the GPU and expects EnforceNotMet containing `needle`.
inline void ExpectCudaError(const OperatorDef& def, const std::map<std::string, Tensor>& inputs,
                            const std::string& needle) {
  Workspace ws;
  const Device gpu{DeviceType::CUDA, 0};
  for (const auto& kv : inputs) ws.CreateTensor(kv.first, gpu)->CopyFrom(kv.second);
  try {
    CreateOperator(OnCuda(def), &ws)->Run(0);
    ADD_FAILURE() << def.type() << ": expected an error containing '" << needle << "'";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// A CUDA loss or metric op given an out-of-range label in blob `label_blob` of `inputs`: its run
// does not wait for the device, so it does not throw; CheckDeferredErrors does, with the CPU op's
// message (`needle`), the op's type and name, even after a later run on valid labels (the error
// stays recorded until reported), and only once.
inline void ExpectDeferredLabelError(const OperatorDef& def,
                                     const std::map<std::string, Tensor>& inputs,
                                     const std::string& label_blob, const std::string& needle) {
  Workspace ws;
  const Device gpu{DeviceType::CUDA, 0};
  auto feed = [&](const std::map<std::string, Tensor>& in) {
    for (const auto& kv : in) ws.CreateTensor(kv.first, gpu)->CopyFrom(kv.second);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  };
  feed(inputs);
  auto op = CreateOperator(OnCuda(def), &ws);
  EXPECT_NO_THROW(op->Run(0)) << def.type() << ": the label check must not wait for the device";
  std::map<std::string, Tensor> good = inputs;
  const Tensor& labels = inputs.at(label_blob);
  good[label_blob] =
      IntTensor(labels.dims(), std::vector<int32_t>(static_cast<size_t>(labels.numel()), 0));
  feed(good);
  op->Run(0);
  try {
    op->CheckDeferredErrors();
    ADD_FAILURE() << def.type() << " accepted an out-of-range label";
  } catch (const EnforceNotMet& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_NE(msg.find(op->DebugName()), std::string::npos) << msg;
    EXPECT_NE(msg.find("found on the device"), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(op->CheckDeferredErrors()) << def.type() << ": reported twice";
  op->Run(0);
  EXPECT_NO_THROW(op->CheckDeferredErrors()) << def.type() << ": valid labels rejected";
}

}  // namespace testing
}  // namespace halfcaf
