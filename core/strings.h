// Small string helpers shared by the runtime and the tools.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace halfcaf {

// "a, b,,c" -> {"a", "b", "c"}: split at `sep`, whitespace trimmed, empty items dropped.
std::vector<std::string> SplitList(const std::string& s, char sep = ',');

// A byte count for people: "812 bytes", "3.1 MiB", "292.4 GiB", "38.0 TiB".
std::string HumanBytes(double bytes);

// "4398046511104 bytes (4.0 TiB)": an exact count with HumanBytes beside it, for memory errors.
std::string ByteCountString(uint64_t bytes);

// The string itself when it has at most `max_chars` characters, else its first `max_chars`
// followed by "... (N chars)": keeps messages short when they echo user input.
std::string Abbreviate(const std::string& s, size_t max_chars = 80);

// `s` as a JSON string literal: quoted, with quotes, backslashes and control characters escaped.
std::string JsonString(const std::string& s);

}  // namespace halfcaf
