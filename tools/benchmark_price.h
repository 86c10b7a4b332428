// benchmark's default machine prices, for the cost of a million images when --price_per_hour is
// not given. On-demand rates for one GPU as published by specialty cloud providers in May 2026
// (the middle of the ranges a public price comparison listed then: A100 80GB $1.10-1.50, H100 SXM
// $2.50-3.50, H200 $3.50-4.50 per hour); other GPUs take the H100's. The CPU figure is an order
// of magnitude for a 2-vCPU compute VM, not a quote. Always check against what you pay.
#pragma once

#include <string>

namespace halfcaf {
namespace bench {

constexpr const char* kPriceListDate = "May 2026";

struct MachinePrice {
  double per_hour = 0;
  std::string what;  // "NVIDIA H200 on demand, May 2026", ...
};

// `gpu_name`: the CUDA device's name (cudaDeviceProp::name), "" for the CPU.
inline MachinePrice DefaultPrice(const std::string& gpu_name) {
  if (gpu_name.empty()) return {0.10, "a 2-vCPU compute VM (order of magnitude)"};
  const std::string when = std::string(" on demand, ") + kPriceListDate;
  if (gpu_name.find("H200") != std::string::npos) return {4.00, "NVIDIA H200" + when};
  if (gpu_name.find("H100") != std::string::npos) return {3.00, "NVIDIA H100" + when};
  if (gpu_name.find("A100") != std::string::npos) return {1.30, "NVIDIA A100" + when};
  return {3.00, gpu_name + " (priced as an H100" + when + ")"};
}

}  // namespace bench
}  // namespace halfcaf
