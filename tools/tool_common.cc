#include "tools/tool_common.h"

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <google/protobuf/stubs/logging.h>

#include <exception>
#include <iostream>
#include <sstream>

#include "core/enforce.h"

namespace halfcaf {

int RunTool(const char* name, const char* usage, int argc, char** argv,
            const std::function<int()>& body) {
  gflags::SetUsageMessage(usage);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(name);
  FLAGS_logtostderr = true;
  // Protobuf would print its own parse complaints; ours carry file:line:column instead.
  google::protobuf::SetLogHandler(nullptr);
  if (argc > 1) {
    std::cerr << name << ": error: unexpected argument '" << argv[1] << "' (see --help)\n";
    return 1;
  }
  try {
    return body();
  } catch (const EnforceNotMet& e) {
    std::cerr << name << ": error: " << e.what() << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << name << ": error: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << name << ": error: " << e.what() << "\n";
  }
  return 1;
}

Placement ParsePlacement(const std::string& device, bool device_given, int gpu,
                         const std::string& gpus, int replicas) {
  HALFCAF_ENFORCE(device == "cpu" || device == "cuda", "--device must be cpu or cuda, got '",
                  device, "'");
  std::vector<int> ids;
  for (const auto& item : SplitList(gpus)) {
    size_t used = 0;
    int id = -1;
    try {
      id = std::stoi(item, &used);
    } catch (...) {
      used = 0;
    }
    HALFCAF_ENFORCE(used == item.size() && id >= 0, "--gpus: '", item, "' is not a GPU id");
    ids.push_back(id);
  }
  HALFCAF_ENFORCE(ids.empty() || device == "cuda" || !device_given,
                  "--gpus runs on CUDA devices, but --device is '", device, "'");
  HALFCAF_ENFORCE(replicas >= 0, "--replicas must be positive, got ", replicas);
  Placement p;
  if (device == "cuda") p.device = Device{DeviceType::CUDA, gpu};
  if (!ids.empty()) p.device = Device{DeviceType::CUDA, ids[0]};
  const int n = replicas > 0 ? replicas : std::max<int>(1, static_cast<int>(ids.size()));
  for (int i = 0; n > 1 && i < n; ++i) {
    p.replicas.push_back(ids.empty() ? p.device : Device{DeviceType::CUDA, ids[i % ids.size()]});
  }
  return p;
}

std::string PlacementString(const Placement& p) {
  if (p.replicas.empty()) return p.device.ToString();
  std::string s = std::to_string(p.replicas.size()) + " data-parallel replicas (";
  for (size_t i = 0; i < p.replicas.size(); ++i) s += (i ? ", " : "") + p.replicas[i].ToString();
  return s + ")";
}

}  // namespace halfcaf
