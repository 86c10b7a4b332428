#include "onnx/convert_util.h"

#include "core/operator.h"
#include "core/strings.h"

namespace halfcaf {
namespace onnx_import {

void RequireOperator(const ConvertContext& c, const std::string& type) {
  if (!OperatorRegistry::HasType(DeviceType::CPU, type)) {
    c.Unsupported("halfcaf has no " + type + " operator to run it");
  }
}

bool BroadcastShape(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                    std::vector<int64_t>* out) {
  const size_t n = std::max(a.size(), b.size());
  out->assign(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    (*out)[i] = da == 1 ? db : da;
  }
  return true;
}

bool CaffeBroadcastable(const std::vector<int64_t>& big, const std::vector<int64_t>& small) {
  if (small.size() > big.size()) {
    // Leading ones of `small` beyond big's rank change nothing.
    for (size_t i = 0; i < small.size() - big.size(); ++i) {
      if (small[i] != 1) return false;
    }
    return CaffeBroadcastable(big, std::vector<int64_t>(small.end() - big.size(), small.end()));
  }
  const size_t offset = big.size() - small.size();
  size_t first = 0, last = small.size();
  while (first < last && small[first] == 1) ++first;
  while (last > first && small[last - 1] == 1) --last;
  for (size_t i = first; i < last; ++i) {
    if (small[i] != big[offset + i]) return false;
  }
  return true;
}

int64_t NormalizeAxis(const ConvertContext& c, int64_t axis, int64_t rank,
                      const std::string& what) {
  if (axis < -rank || axis >= rank) {
    c.Unsupported(MakeString(what, " ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace onnx_import
}  // namespace halfcaf
