#include "operators/math/elementwise_broadcast.h"

#include <cctype>

#include "core/enforce.h"

namespace halfcaf {

namespace {

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

int64_t Numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace

int ParseBroadcastAxis(const ArgumentHelper& args) {
  const int axis = args.GetSingleArgument<int>("axis", -1);
  const std::string axis_str = args.GetSingleArgument<std::string>("axis_str", "");
  const std::string order = Upper(args.GetSingleArgument<std::string>("order", "NCHW"));
  HALFCAF_ENFORCE(order == "NCHW" || order == "NHWC",
                  "argument 'order' must be NCHW or NHWC, got '",
                  args.GetSingleArgument<std::string>("order", ""), "'");
  HALFCAF_ENFORCE(axis >= -1, "argument 'axis' must be >= 0 (or -1 for trailing alignment), got ",
                  axis);
  if (axis_str.empty()) return axis;
  HALFCAF_ENFORCE(axis == -1, "arguments 'axis' (", axis, ") and 'axis_str' ('", axis_str,
                  "') cannot be used together");
  HALFCAF_ENFORCE(axis_str.size() == 1, "argument 'axis_str' must be one letter of the order ",
                  order, ", got '", axis_str, "'");
  const size_t pos = order.find(Upper(axis_str));
  HALFCAF_ENFORCE(pos != std::string::npos, "argument 'axis_str' = '", axis_str,
                  "' is not a letter of order ", order);
  return static_cast<int>(pos);
}

LegacyBroadcastArgs ParseLegacyBroadcastArgs(const ArgumentHelper& args) {
  LegacyBroadcastArgs out;
  out.broadcast = args.GetSingleArgument<bool>("broadcast", false);
  if (!out.broadcast) {
    HALFCAF_ENFORCE(args.GetSingleArgument<int>("axis", -1) == -1 &&
                        args.GetSingleArgument<std::string>("axis_str", "").empty(),
                    "arguments 'axis' and 'axis_str' only apply with broadcast=1");
  }
  out.axis = ParseBroadcastAxis(args);
  return out;
}

BroadcastSizes ComputeBroadcastSizes(const std::vector<int64_t>& a_dims,
                                     const std::vector<int64_t>& b_dims, int axis) {
  BroadcastSizes s;
  const int64_t a_numel = Numel(a_dims);
  if (Numel(b_dims) == 1) {
    s.pre = a_numel;
    return s;
  }
  const int an = static_cast<int>(a_dims.size()), bn = static_cast<int>(b_dims.size());
  HALFCAF_ENFORCE(bn <= an, "cannot broadcast B with dims ", DimsString(b_dims),
                  " to A with dims ", DimsString(a_dims), ": B has more dimensions than A");
  if (axis == -1) axis = an - bn;
  HALFCAF_ENFORCE(axis >= 0 && axis <= an - bn, "broadcast axis ", axis,
                  " is out of range [0, ", an - bn, "] for A with dims ", DimsString(a_dims),
                  " and B with dims ", DimsString(b_dims));
  int first = 0, last = bn - 1;  // B's span without leading/trailing ones
  while (first < bn && b_dims[first] == 1) ++first;
  while (last >= first && b_dims[last] == 1) --last;
  for (int i = first; i <= last; ++i) {
    HALFCAF_ENFORCE(a_dims[axis + i] == b_dims[i], "cannot broadcast B with dims ",
                    DimsString(b_dims), " to A with dims ", DimsString(a_dims), " at axis ", axis,
                    ": B dim ", i, " is ", b_dims[i], " but A dim ", axis + i, " is ",
                    a_dims[axis + i]);
  }
  for (int i = 0; i < axis + first; ++i) s.pre *= a_dims[i];
  for (int i = first; i <= last; ++i) s.n *= b_dims[i];
  for (int i = axis + last + 1; i < an; ++i) s.post *= a_dims[i];
  return s;
}

std::vector<int64_t> LegacyBroadcastView(const std::vector<int64_t>& a_dims,
                                         const std::vector<int64_t>& b_dims, int axis) {
  ComputeBroadcastSizes(a_dims, b_dims, axis);
  std::vector<int64_t> view(a_dims.size(), 1);
  if (Numel(b_dims) == 1) return view;
  if (axis == -1) axis = static_cast<int>(a_dims.size() - b_dims.size());
  for (size_t i = 0; i < b_dims.size(); ++i) view[axis + i] = b_dims[i];
  return view;
}

BroadcastSizes ComputeBinaryOpSizes(const std::vector<int64_t>& a_dims,
                                    const std::vector<int64_t>& b_dims,
                                    const LegacyBroadcastArgs& args) {
  if (args.broadcast) return ComputeBroadcastSizes(a_dims, b_dims, args.axis);
  HALFCAF_ENFORCE(a_dims == b_dims, "A has dims ", DimsString(a_dims), " but B has dims ",
                  DimsString(b_dims),
                  ": without broadcast=1 the shapes must be identical (set broadcast=1 to "
                  "repeat a smaller B over A)");
  BroadcastSizes s;
  s.n = Numel(a_dims);
  return s;
}

}  // namespace halfcaf
