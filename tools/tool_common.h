// What every command-line tool shares: flag parsing, quiet protobuf/glog, and turning any error
// into one line on stderr and exit code 1.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/strings.h"
#include "core/types.h"

namespace halfcaf {

// Parses flags, runs body, and maps errors to "<tool>: error: <message>" + exit 1.
int RunTool(const char* name, const char* usage, int argc, char** argv,
            const std::function<int()>& body);

// Placement from the --device / --gpu / --gpus / --replicas flags of train_net and benchmark:
// `device` is "cpu" or "cuda"; `gpus` a comma-separated list of CUDA ids (implies cuda; with
// `device_given` and "cpu" it is an error); `replicas` 0 means one per listed GPU, else 1.
struct Placement {
  Device device;                  // replica 0's device, or the only one
  std::vector<Device> replicas;   // empty for one replica; else replica i on GPU gpus[i % n]
};
Placement ParsePlacement(const std::string& device, bool device_given, int gpu,
                         const std::string& gpus, int replicas);
// "CUDA:0" or "2 data-parallel replicas (CUDA:0, CUDA:1)".
std::string PlacementString(const Placement& p);

}  // namespace halfcaf
