// Small string helpers shared by the runtime and the tools.
#pragma once

#include <string>
#include <vector>

namespace halfcaf {

// "a, b,,c" -> {"a", "b", "c"}: split at `sep`, whitespace trimmed, empty items dropped.
std::vector<std::string> SplitList(const std::string& s, char sep = ',');

}  // namespace halfcaf
