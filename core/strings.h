// Small string helpers shared by the runtime and the tools.
#pragma once

#include <string>
#include <vector>

namespace halfcaf {

// "a, b,,c" -> {"a", "b", "c"}: split at `sep`, whitespace trimmed, empty items dropped.
std::vector<std::string> SplitList(const std::string& s, char sep = ',');

// A byte count for people: "812 bytes", "3.1 MiB", "292.4 GiB", "38.0 TiB".
std::string HumanBytes(double bytes);

}  // namespace halfcaf
