// gpu_preflight: what a GPU run needs to know before it spends its minutes. Prints the CUDA
// driver and runtime versions, the cuDNN and cuBLAS versions loaded (and those compiled against),
// every visible device (name, compute capability, memory, multiprocessors), then runs a small
// Conv + Relu + FC net on CUDA:0 in FP32 and FP16 (cuDNN, cuBLAS and halfcaf's own kernels) and
// compares it with the same net on the CPU.
//
// Exit status: 0 all well; 1 no usable device (cudaGetDeviceCount failed or found none: the
// error is printed, "gpu_preflight: no CUDA device: <error>"), so a missing or mismatched driver
// never turns into a run of skipped tests; 3 a device exists but the smoke net failed or
// disagreed with the CPU.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/enforce.h"
#include "core/tensor.h"
#include "core/workspace.h"
#include "gpu/cuda_context.h"
#include "tools/tool_common.h"

namespace halfcaf {
namespace {

std::string VersionString(int v) {  // CUDA style: 1000 * major + 10 * minor
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string CudnnVersionString(size_t v) {  // cuDNN 9: 10000 * major + 100 * minor + patch
  return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." +
         std::to_string(v % 100);
}

void PrintVersions() {
  int driver = 0, runtime = 0;
  const cudaError_t de = cudaDriverGetVersion(&driver);
  const cudaError_t re = cudaRuntimeGetVersion(&runtime);
  std::cout << "driver: " << (de == cudaSuccess && driver > 0 ? VersionString(driver) : "none")
            << " (CUDA driver API " << driver << ")\n";
  std::cout << "runtime: " << (re == cudaSuccess ? VersionString(runtime) : "error")
            << " (built against " << VersionString(CUDART_VERSION) << ")\n";
  std::cout << "cuDNN: " << CudnnVersionString(cudnnGetVersion()) << " (built against "
            << CudnnVersionString(CUDNN_VERSION) << "; its CUDA runtime "
            << VersionString(static_cast<int>(cudnnGetCudartVersion())) << ")\n";
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS) {
    std::cout << "cuBLAS: " << major << "." << minor << "." << patch;
  } else {
    std::cout << "cuBLAS: unknown";
  }
  std::cout << " (built against " << CUBLAS_VER_MAJOR << "." << CUBLAS_VER_MINOR << "."
            << CUBLAS_VER_PATCH << ")\n";
  if (driver > 0 && runtime > driver) {
    std::cout << "WARNING: the driver (" << VersionString(driver) << ") is older than the runtime ("
              << VersionString(runtime) << ")\n";
  }
}

Tensor Random(std::vector<int64_t> dims, uint32_t seed) {
  Tensor t(std::move(dims), DataType::FLOAT);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(gen);
  return t;
}

// Conv (pad 1) + Relu + FC, FP32 or FP16 (casts around it), on `device`; returns the output.
std::vector<float> RunSmokeNet(Device device, bool fp16) {
  Workspace ws;
  const std::map<std::string, Tensor> inputs{{"X", Random({4, 8, 12, 12}, 1)},
                                             {"w", Random({16, 8, 3, 3}, 2)},
                                             {"b", Random({16}, 3)},
                                             {"fc_w", Random({10, 16 * 12 * 12}, 4)},
                                             {"fc_b", Random({10}, 5)}};
  for (const auto& kv : inputs) ws.CreateTensor(kv.first, device)->CopyFrom(kv.second);
  NetDef net;
  net.set_name("gpu_preflight");
  auto add = [&](const std::string& type, std::vector<std::string> in,
                 std::vector<std::string> out, std::vector<Argument> args = {}) {
    OperatorDef* op = net.add_op();
    *op = MakeOperatorDef(type, "", in, out, args);
    op->mutable_device_option()->set_device_type(device.type == DeviceType::CUDA ? 1 : 0);
    op->mutable_device_option()->set_device_id(device.id);
  };
  std::string x = "X", w = "w", b = "b", fw = "fc_w", fb = "fc_b";
  if (fp16) {
    for (std::string* n : {&x, &w, &b, &fw, &fb}) {
      add("FloatToHalf", {*n}, {*n + "_h"});
      *n += "_h";
    }
  }
  add("Conv", {x, w, b}, {"conv"}, {MakeArgument("pad", 1), MakeArgument("kernel", 3)});
  add("Relu", {"conv"}, {"relu"});
  add("FC", {"relu", fw, fb}, {"fc"});
  std::string out = "fc";
  if (fp16) {
    add("HalfToFloat", {"fc"}, {"fc_f"});
    out = "fc_f";
  }
  ws.RunNetOnce(net);
  Tensor host;
  host.CopyFrom(ws.GetTensor(out));
  return std::vector<float>(host.data<float>(), host.data<float>() + host.numel());
}

// Runs the smoke net on CUDA:0 and on the CPU; true when they agree.
bool Smoke(bool fp16) {
  const char* name = fp16 ? "fp16" : "fp32";
  try {
    const std::vector<float> gpu = RunSmokeNet(Device{DeviceType::CUDA, 0}, fp16);
    const std::vector<float> cpu = RunSmokeNet(Device{}, fp16);
    HALFCAF_ENFORCE(gpu.size() == cpu.size(), "output sizes differ: ", gpu.size(), " vs ",
                    cpu.size());
    double worst = 0, scale = 0;
    for (size_t i = 0; i < cpu.size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::fabs(gpu[i] - cpu[i])));
      scale = std::max(scale, static_cast<double>(std::fabs(cpu[i])));
      if (!std::isfinite(gpu[i])) worst = INFINITY;
    }
    // FP32 with FP32 accumulation agrees to rounding; FP16 to a few half-precision ulps.
    const double tol = (fp16 ? 1e-2 : 1e-4) * std::max(1.0, scale);
    const bool ok = worst <= tol;
    std::cout << "smoke " << name << ": Conv + Relu + FC on CUDA:0 vs CPU, max |diff| " << worst
              << " (tolerance " << tol << ", outputs up to " << scale << "): "
              << (ok ? "ok" : "DISAGREE") << "\n";
    return ok;
  } catch (const std::exception& e) {
    std::cout << "smoke " << name << ": FAILED: " << e.what() << "\n";
    return false;
  }
}

int Preflight() {
  PrintVersions();
  const int n = NumCudaDevices();
  if (n == 0) {
    std::cout.flush();
    std::cerr << "gpu_preflight: no CUDA device: " << CudaDeviceError() << std::endl;
    return 1;
  }
  for (int d = 0; d < n; ++d) {
    const CudaDeviceInfo info = GetCudaDeviceInfo(d);
    std::printf("device %d: %s, compute capability %d.%d, %.1f GiB, %d multiprocessors\n", d,
                info.name.c_str(), info.major, info.minor,
                static_cast<double>(info.total_memory) / (1 << 30), info.multiprocessors);
  }
  std::cout.flush();
  const bool ok32 = Smoke(false);
  const bool ok16 = Smoke(true);
  std::cout << "gpu_preflight: " << (ok32 && ok16 ? "ok" : "SMOKE NET FAILED") << std::endl;
  return ok32 && ok16 ? 0 : 3;
}

}  // namespace
}  // namespace halfcaf

int main(int argc, char** argv) {
  return halfcaf::RunTool("gpu_preflight", "gpu_preflight: CUDA driver, libraries, devices, and "
                          "a smoke net on CUDA:0 against the CPU (no flags)",
                          argc, argv, [] { return halfcaf::Preflight(); });
}
