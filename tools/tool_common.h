// What every command-line tool shares: flag parsing, quiet protobuf/glog, and turning any error
// into one line on stderr and exit code 1.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/strings.h"

namespace halfcaf {

// Parses flags, runs body, and maps errors to "<tool>: error: <message>" + exit 1.
int RunTool(const char* name, const char* usage, int argc, char** argv,
            const std::function<int()>& body);


}  // namespace halfcaf
