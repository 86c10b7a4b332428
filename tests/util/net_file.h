// Test nets from protobuf text in the test, or from text files, optionally with a string replaced first (e.g. a DB
// path or an argument value), for tests that run a stored net with one detail changed.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "core/enforce.h"
#include "core/proto_io.h"

namespace halfcaf {
namespace testing {

// A net from protobuf text written in the test.
inline NetDef ParseNet(const std::string& text) {
  NetDef net;
  ParseProtoFromString(text, "test", &net);
  return net;
}

// The net in `path`, with every occurrence of `from` replaced by `to` first when `from` is given
// (a test failure when it does not occur).
inline NetDef ReadNetReplacing(const std::string& path, const std::string& from = "",
                               const std::string& to = "") {
  std::ifstream in(path);
  HALFCAF_ENFORCE(in.good(), path, ": cannot open the test net");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!from.empty()) {
    size_t n = 0;
    for (size_t p = text.find(from); p != std::string::npos; p = text.find(from, p + to.size())) {
      text.replace(p, from.size(), to);
      ++n;
    }
    EXPECT_GT(n, 0u) << from << " not in " << path;
  }
  NetDef net;
  ParseProtoFromString(text, path, &net);
  return net;
}

}  // namespace testing
}  // namespace halfcaf
