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

}  // namespace halfcaf
