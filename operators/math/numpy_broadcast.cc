#include "operators/math/numpy_broadcast.h"

#include <glog/logging.h>

#include <algorithm>

#include "core/enforce.h"
#include "core/operator.h"

namespace halfcaf {

namespace {

// x_dims with leading 1s up to nd dims.
std::vector<int64_t> Aligned(const std::vector<int64_t>& x_dims, size_t nd) {
  std::vector<int64_t> out(nd - x_dims.size(), 1);
  out.insert(out.end(), x_dims.begin(), x_dims.end());
  return out;
}

}  // namespace

std::vector<int64_t> NumpyBroadcastDims(const std::string& op, const std::vector<int64_t>& a_dims,
                                        const std::vector<int64_t>& b_dims) {
  const size_t nd = std::max(a_dims.size(), b_dims.size());
  const std::vector<int64_t> a = Aligned(a_dims, nd), b = Aligned(b_dims, nd);
  std::vector<int64_t> out(nd);
  for (size_t d = 0; d < nd; ++d) {
    HALFCAF_ENFORCE(a[d] == b[d] || a[d] == 1 || b[d] == 1, op, ": A with dims ",
                    DimsString(a_dims), " and B with dims ", DimsString(b_dims),
                    " do not broadcast (NumPy rules: trailing dims must be equal or 1; output dim ",
                    d, " would be ", a[d], " from A and ", b[d], " from B)");
    out[d] = a[d] == 1 ? b[d] : a[d];
  }
  return out;
}

NumpyBroadcast MakeNumpyBroadcast(const std::string& op, const std::vector<int64_t>& a_dims,
                                  const std::vector<int64_t>& b_dims) {
  NumpyBroadcast s;
  s.out_dims = NumpyBroadcastDims(op, a_dims, b_dims);
  const size_t nd = s.out_dims.size();
  const std::vector<bool> a_rep = RepeatedDims(s.out_dims, a_dims);
  const std::vector<bool> b_rep = RepeatedDims(s.out_dims, b_dims);
  std::vector<bool> a_merged, b_merged;  // per merged dim: the input is repeated along it
  for (size_t d = 0; d < nd; ++d) {
    s.numel *= s.out_dims[d];
    if (s.out_dims[d] == 1) continue;
    if (!s.dims.empty() && a_merged.back() == a_rep[d] && b_merged.back() == b_rep[d]) {
      s.dims.back() *= s.out_dims[d];
    } else {
      s.dims.push_back(s.out_dims[d]);
      a_merged.push_back(a_rep[d]);
      b_merged.push_back(b_rep[d]);
    }
  }
  if (s.dims.empty()) {  // one element
    s.dims = {1};
    a_merged = b_merged = {false};
  }
  const size_t m = s.dims.size();
  HALFCAF_ENFORCE(m <= static_cast<size_t>(kMaxBroadcastDims), op, ": broadcasting A with dims ",
                  DimsString(a_dims), " and B with dims ", DimsString(b_dims), " needs ", m,
                  " dims after merging, more than the ", kMaxBroadcastDims, " supported");
  s.a_stride.assign(m, 0);
  s.b_stride.assign(m, 0);
  int64_t a_next = 1, b_next = 1;
  for (size_t i = m; i-- > 0;) {
    if (!a_merged[i]) {
      s.a_stride[i] = a_next;
      a_next *= s.dims[i];
    }
    if (!b_merged[i]) {
      s.b_stride[i] = b_next;
      b_next *= s.dims[i];
    }
  }
  return s;
}

std::vector<bool> RepeatedDims(const std::vector<int64_t>& out_dims,
                               const std::vector<int64_t>& x_dims) {
  CHECK_LE(x_dims.size(), out_dims.size());
  const std::vector<int64_t> x = Aligned(x_dims, out_dims.size());
  std::vector<bool> rep(out_dims.size());
  for (size_t d = 0; d < out_dims.size(); ++d) rep[d] = x[d] == 1 && out_dims[d] != 1;
  return rep;
}

const NumpyBroadcast& NumpyBroadcastPlan::Get(const OperatorBase& op,
                                              const std::vector<int64_t>& a_dims,
                                              const std::vector<int64_t>& b_dims) {
  if (!made_ || a_dims != a_dims_ || b_dims != b_dims_) {
    walk_ = MakeNumpyBroadcast(op.type(), a_dims, b_dims);
    a_dims_ = a_dims;
    b_dims_ = b_dims;
    made_ = true;
  }
  const std::vector<int64_t>* in_dims[] = {&a_dims, &b_dims};
  for (int i : {0, 1}) {
    HALFCAF_ENFORCE(!op.IsInputOutputAlias(i, 0) || *in_dims[i] == walk_.out_dims, op.type(),
                    ": the output C ('", op.output_name(0), "') shares its blob with ",
                    i == 0 ? "A" : "B", " ('", op.input_name(i), "') of dims ",
                    DimsString(*in_dims[i]), ", but the broadcast output has dims ",
                    DimsString(walk_.out_dims), "; in place needs an input of the output's shape");
  }
  return walk_;
}

}  // namespace halfcaf
