// Queries over a net's ops: whether a net reads or writes a blob, and, in order (op_sequence::),
// which ops read the value an op wrote, who wrote a blob last, whether anything touches it in
// between, as the inference plan's rewrites ask them.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "core/argument.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

// Whether any op of `net` reads (writes) `blob`.
inline bool NetReads(const NetDef& net, const std::string& blob) {
  for (const auto& op : net.op()) {
    for (const auto& in : op.input()) {
      if (in == blob) return true;
    }
  }
  return false;
}
inline bool NetWrites(const NetDef& net, const std::string& blob) {
  for (const auto& op : net.op()) {
    for (const auto& out : op.output()) {
      if (out == blob) return true;
    }
  }
  return false;
}

namespace op_sequence {

using Ops = std::vector<OperatorDef>;

inline bool IsConv(const std::string& t) {
  return t == "Conv" || t == "Conv1D" || t == "Conv2D" || t == "Conv3D";
}

inline bool Reads(const OperatorDef& op, const std::string& name) {
  return std::find(op.input().begin(), op.input().end(), name) != op.input().end();
}
inline bool Writes(const OperatorDef& op, const std::string& name) {
  return std::find(op.output().begin(), op.output().end(), name) != op.output().end();
}

inline std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
inline std::string OrderOf(const OperatorDef& op) {
  return Upper(ArgumentHelper(op).GetSingleArgument<std::string>("order", "NCHW"));
}

// The ops after `i` that read the value op i wrote to `name`: up to and including the next op
// that writes it. *escapes: the value is still there at the end of the net.
inline std::vector<int> ReadersOf(const Ops& ops, int i, const std::string& name, bool* escapes) {
  std::vector<int> readers;
  *escapes = true;
  for (int j = i + 1; j < static_cast<int>(ops.size()); ++j) {
    if (Reads(ops[j], name)) readers.push_back(j);
    if (Writes(ops[j], name)) {
      *escapes = false;
      break;
    }
  }
  return readers;
}

// The last op before `j` that writes `name` (-1: none).
inline int WriterBefore(const Ops& ops, int j, const std::string& name) {
  for (int i = j - 1; i >= 0; --i) {
    if (Writes(ops[i], name)) return i;
  }
  return -1;
}

inline bool WrittenBetween(const Ops& ops, int from, int to, const std::string& name) {
  for (int k = from + 1; k < to; ++k) {
    if (Writes(ops[k], name)) return true;
  }
  return false;
}
inline bool TouchedBetween(const Ops& ops, int from, int to, const std::string& name) {
  for (int k = from + 1; k < to; ++k) {
    if (Writes(ops[k], name) || Reads(ops[k], name)) return true;
  }
  return false;
}

}  // namespace op_sequence
}  // namespace halfcaf
