// Nets nested `depth` levels deep through op { arg { n { ... } } }, as protobuf text and as binary,
// built without recursion: for the tests that parsers reject hostile nesting instead of crashing.
#pragma once

#include <string>

namespace halfcaf {
namespace testing {

inline std::string NestedNetText(int depth) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += "op { arg { n { ";
  for (int i = 0; i < depth; ++i) text += "} } } ";
  return text;
}

// The same net in the wire format, from the inside out: NetDef.op (2) > OperatorDef.arg (5) >
// Argument.n (8), each a length-delimited field.
inline std::string NestedNetBinary(int depth) {
  auto field = [](int number, const std::string& payload) {
    std::string out(1, static_cast<char>(number << 3 | 2));
    for (size_t n = payload.size();; n >>= 7) {
      out += static_cast<char>((n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
      if (n < 0x80) break;
    }
    return out + payload;
  };
  std::string net;
  for (int i = 0; i < depth; ++i) net = field(2, field(5, field(8, net)));
  return net;
}

}  // namespace testing
}  // namespace halfcaf
