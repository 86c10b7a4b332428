#include "operators/nn/conv_pool_op_base.h"

#include <algorithm>
#include <cctype>

#include "core/checked_math.h"
#include "operators/nn/channel_block.h"

namespace halfcaf {

StorageOrder StringToStorageOrder(const std::string& s, const std::string& op_label) {
  std::string up(s);
  for (auto& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (up == "NCHW") return StorageOrder::NCHW;
  if (up == "NHWC") return StorageOrder::NHWC;
  HALFCAF_THROW(op_label, ": unknown order '", s, "' (expected \"NCHW\" or \"NHWC\")");
}

const char* StorageOrderName(StorageOrder order) {
  return order == StorageOrder::NCHW ? "NCHW" : "NHWC";
}

const char* LegacyPaddingName(LegacyPadding p) {
  switch (p) {
    case LegacyPadding::NOTSET:
      return "NOTSET";
    case LegacyPadding::VALID:
      return "VALID";
    case LegacyPadding::SAME:
      return "SAME";
    case LegacyPadding::CAFFE_LEGACY_POOLING:
      return "CAFFE_LEGACY_POOLING";
  }
  return "?";
}

namespace {

// Reads one per-dimension argument given as a list (`plural`), one value for all `copies`
// entries (`single`), or a complete set of named entries (`named`, e.g. kernel_h, kernel_w).
// Returns an empty vector when none is given.
std::vector<int64_t> ReadPerDim(const ArgumentHelper& a, const std::string& label,
                                const std::string& plural, const std::string& single,
                                const std::vector<std::string>& named, int copies) {
  int named_present = 0;
  for (const auto& n : named) named_present += a.HasArgument(n) ? 1 : 0;
  const int forms = (a.HasArgument(plural) ? 1 : 0) + (a.HasArgument(single) ? 1 : 0) +
                    (named_present > 0 ? 1 : 0);
  std::string named_list;
  for (size_t i = 0; i < named.size(); ++i) named_list += (i ? "/" : "") + named[i];
  HALFCAF_ENFORCE(forms <= 1, label, ": give only one of '", plural, "', '", single, "' or ",
                  named_list, ", not several");
  if (a.HasArgument(plural)) return a.GetRepeatedArgument<int64_t>(plural);
  if (a.HasArgument(single)) {
    return std::vector<int64_t>(copies, a.GetSingleArgument<int64_t>(single, 0));
  }
  if (named_present == 0) return {};
  HALFCAF_ENFORCE(named_present == static_cast<int>(named.size()), label, ": ", named_list,
                  " must be given together (only ", named_present, " of ", named.size(), " given)");
  HALFCAF_ENFORCE(static_cast<int>(named.size()) == copies, label, ": ", named_list,
                  " describe a 2-D window, but 'kernels' asks for ", copies, " '", plural,
                  "' entries; use '", plural, "'");
  std::vector<int64_t> v;
  for (const auto& n : named) v.push_back(a.GetSingleArgument<int64_t>(n, 0));
  return v;
}

bool AnyPadArgument(const ArgumentHelper& a) {
  for (const char* n : {"pads", "pad", "pad_t", "pad_l", "pad_b", "pad_r"}) {
    if (a.HasArgument(n)) return true;
  }
  return false;
}

}  // namespace

ConvPoolArgs ParseConvPoolArgs(const ArgumentHelper& a, ConvPoolKind kind,
                               const std::string& op_label) {
  ConvPoolArgs p;
  p.op_label = op_label;
  p.kind = kind;
  const bool pool = kind == ConvPoolKind::kPool;
  p.order = StringToStorageOrder(a.GetSingleArgument<std::string>("order", "NCHW"), op_label);
  p.filter_order = p.order;
  if (a.HasArgument("filter_order")) {
    HALFCAF_ENFORCE(!pool, op_label, ": filter_order applies to convolutions only");
    p.filter_order =
        StringToStorageOrder(a.GetSingleArgument<std::string>("filter_order", ""), op_label);
  }
  const int64_t legacy = a.GetSingleArgument<int64_t>("legacy_pad", 0);
  HALFCAF_ENFORCE(legacy >= 0 && legacy <= 3, op_label,
                  ": legacy_pad must be 0 (NOTSET), 1 "
                  "(VALID), 2 (SAME) or 3 (CAFFE_LEGACY_POOLING), got ",
                  legacy);
  p.legacy_pad = static_cast<LegacyPadding>(legacy);
  p.global_pooling = a.GetSingleArgument<int>("global_pooling", 0) != 0;
  p.group = a.GetSingleArgument<int>("group", 1);
  HALFCAF_ENFORCE(p.group >= 1, op_label, ": group must be >= 1, got ", p.group);
  HALFCAF_ENFORCE(!p.global_pooling || pool, op_label,
                  ": global_pooling applies to pooling operators only");

  // Kernel first: its length fixes the number of spatial dims (2 unless `kernels` says otherwise).
  p.kernel = ReadPerDim(a, op_label, "kernels", "kernel", {"kernel_h", "kernel_w"}, 2);
  const int nd = p.kernel.empty() ? 2 : static_cast<int>(p.kernel.size());
  HALFCAF_ENFORCE(p.filter_order == p.order || nd == 2, op_label, ": filter_order ",
                  StorageOrderName(p.filter_order), " with order ", StorageOrderName(p.order),
                  " needs a 2-D convolution, got a ", nd, "-D kernel");
  p.stride = ReadPerDim(a, op_label, "strides", "stride", {"stride_h", "stride_w"}, nd);
  p.dilation = ReadPerDim(a, op_label, "dilations", "dilation", {"dilation_h", "dilation_w"}, nd);
  p.pads = ReadPerDim(a, op_label, "pads", "pad", {"pad_t", "pad_l", "pad_b", "pad_r"}, 2 * nd);
  if (p.stride.empty()) p.stride.assign(nd, 1);
  if (p.dilation.empty()) p.dilation.assign(nd, 1);
  if (p.pads.empty()) p.pads.assign(2 * nd, 0);
  HALFCAF_ENFORCE(static_cast<int>(p.stride.size()) == nd, op_label, ": strides ",
                  DimsString(p.stride), " must have one entry per kernel dim (", nd, ")");
  HALFCAF_ENFORCE(static_cast<int>(p.dilation.size()) == nd, op_label, ": dilations ",
                  DimsString(p.dilation), " must have one entry per kernel dim (", nd, ")");
  HALFCAF_ENFORCE(static_cast<int>(p.pads.size()) == 2 * nd, op_label, ": pads ",
                  DimsString(p.pads), " must have 2 entries per kernel dim (", 2 * nd,
                  ": all head pads, then all tail pads)");

  if (p.global_pooling) {
    // The kernel is the whole input; a kernel argument, if any, is ignored.
    p.kernel.clear();
    for (int d = 0; d < nd; ++d) {
      HALFCAF_ENFORCE(
          p.stride[d] == 1 && p.dilation[d] == 1 && p.pads[d] == 0 && p.pads[nd + d] == 0, op_label,
          ": with global_pooling, stride, dilation and pads must keep "
          "their defaults; got strides ",
          DimsString(p.stride), ", dilations ", DimsString(p.dilation), ", pads ",
          DimsString(p.pads));
    }
    HALFCAF_ENFORCE(p.legacy_pad == LegacyPadding::NOTSET || p.legacy_pad == LegacyPadding::VALID,
                    op_label, ": global_pooling cannot be combined with legacy_pad ",
                    LegacyPaddingName(p.legacy_pad));
  } else {
    HALFCAF_ENFORCE(!p.kernel.empty(), op_label,
                    ": the kernel size is required (set 'kernel', "
                    "'kernels' or 'kernel_h' and 'kernel_w')");
    for (int d = 0; d < nd; ++d) {
      HALFCAF_ENFORCE(p.kernel[d] > 0, op_label, ": kernel sizes must be > 0, got kernels ",
                      DimsString(p.kernel));
    }
  }
  for (int d = 0; d < nd; ++d) {
    HALFCAF_ENFORCE(p.stride[d] > 0, op_label, ": strides must be > 0, got ", DimsString(p.stride));
    HALFCAF_ENFORCE(p.dilation[d] > 0, op_label, ": dilations must be > 0, got ",
                    DimsString(p.dilation));
    HALFCAF_ENFORCE(p.pads[d] >= 0 && p.pads[nd + d] >= 0, op_label,
                    ": pads must be >= 0, got pads ", DimsString(p.pads));
  }
  if (p.legacy_pad == LegacyPadding::VALID || p.legacy_pad == LegacyPadding::SAME) {
    HALFCAF_ENFORCE(!AnyPadArgument(a), op_label, ": legacy_pad ", LegacyPaddingName(p.legacy_pad),
                    " computes the pads itself; do not also give pad/pads/pad_t/...");
  }
  if (p.legacy_pad == LegacyPadding::SAME || p.legacy_pad == LegacyPadding::CAFFE_LEGACY_POOLING) {
    for (int d = 0; d < nd; ++d) {
      HALFCAF_ENFORCE(p.dilation[d] == 1, op_label, ": legacy_pad ",
                      LegacyPaddingName(p.legacy_pad), " needs dilation 1, got dilations ",
                      DimsString(p.dilation));
    }
  }
  if (p.group != 1) {
    for (int d = 0; d < nd; ++d) {
      HALFCAF_ENFORCE(p.dilation[d] == 1, op_label,
                      ": dilation must be 1 when group != 1 "
                      "(group ",
                      p.group, ", dilations ", DimsString(p.dilation), ")");
    }
  }
  if (pool) {
    if (!p.global_pooling) {
      for (int d = 0; d < nd; ++d) {
        HALFCAF_ENFORCE(p.pads[d] < p.kernel[d] && p.pads[nd + d] < p.kernel[d], op_label,
                        ": each pad must be smaller than the kernel for pooling; got pads ",
                        DimsString(p.pads), " with kernels ", DimsString(p.kernel));
      }
    }
  }
  return p;
}

ConvPoolArgs ParseConvPoolArgs(const OperatorDef& def, ConvPoolKind kind) {
  const std::string label =
      def.name().empty() ? def.type() : MakeString(def.type(), " '", def.name(), "'");
  return ParseConvPoolArgs(ArgumentHelper(def), kind, label);
}

int64_t ComputeSizeAndPad(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                          LegacyPadding legacy_pad, int64_t* pad_head, int64_t* pad_tail,
                          const std::string& where) {
  const int64_t dk = CheckedAdd(CheckedMul(dilation, kernel - 1, where, "dilated kernel"), 1,
                                where, "dilated kernel");
  switch (legacy_pad) {
    case LegacyPadding::NOTSET: {
      const int64_t padded =
          CheckedAdd(CheckedAdd(in, *pad_head, where, "padded input"), *pad_tail, where,
                     "padded input");
      HALFCAF_ENFORCE(padded >= dk, where, "input size ", in, " plus pads ",
                      *pad_head, " + ", *pad_tail, " is smaller than the dilated kernel ", dk,
                      " (kernel ", kernel, ", dilation ", dilation, ")");
      return (padded - dk) / stride + 1;
    }
    case LegacyPadding::VALID: {
      *pad_head = *pad_tail = 0;
      HALFCAF_ENFORCE(in >= dk, where, "input size ", in, " is smaller than the dilated kernel ",
                      dk, " (kernel ", kernel, ", dilation ", dilation, ", legacy_pad VALID)");
      return (in - dk) / stride + 1;
    }
    case LegacyPadding::SAME: {
      HALFCAF_ENFORCE(dilation == 1, where, "legacy_pad SAME needs dilation 1, got ", dilation);
      HALFCAF_ENFORCE(in >= 1, where, "input size must be >= 1 for legacy_pad SAME, got ", in);
      const int64_t out = in / stride + (in % stride != 0);
      // When stride > kernel the window may not need padding at all: never pad negatively.
      const int64_t reach = CheckedAdd(CheckedMul(out - 1, stride, where, "window reach"), kernel,
                                       where, "window reach");
      const int64_t need = std::max<int64_t>(0, reach - in);
      *pad_head = need / 2;
      *pad_tail = need - *pad_head;
      return out;
    }
    case LegacyPadding::CAFFE_LEGACY_POOLING: {
      HALFCAF_ENFORCE(dilation == 1, where,
                      "legacy_pad CAFFE_LEGACY_POOLING needs dilation 1, "
                      "got ",
                      dilation);
      const int64_t head = *pad_head;
      const int64_t span =
          CheckedAdd(in, CheckedMul(2, head, where, "padded input"), where, "padded input") -
          kernel;
      HALFCAF_ENFORCE(span >= 0, where, "input size ", in, " plus pads ", head, " + ", head,
                      " is smaller than the kernel ", kernel, " (legacy_pad CAFFE_LEGACY_POOLING)");
      const int64_t floor_out = span / stride + 1;
      int64_t out = floor_out + (span % stride != 0);  // Caffe rounds up
      // Caffe drops a last window that would start in the tail padding.
      if (out > floor_out && head > 0 &&
          CheckedMul(out - 1, stride, where, "window start") >= in + head) {
        --out;
      }
      *pad_tail = head + stride * (out - floor_out);
      return out;
    }
  }
  HALFCAF_THROW(where, "unknown legacy_pad ", static_cast<int>(legacy_pad));
}

int64_t ConvPoolGeometry::in_size() const { return CheckedNumel(in, "input spatial dims"); }

int64_t ConvPoolGeometry::out_size() const { return CheckedNumel(out, "output spatial dims"); }

int64_t ConvPoolGeometry::kernel_size() const { return CheckedNumel(kernel, "kernel"); }

std::vector<int64_t> ConvPoolGeometry::OutputDims(int64_t channels, StorageOrder order) const {
  std::vector<int64_t> dims{N};
  if (order == StorageOrder::NCHW) dims.push_back(channels);
  dims.insert(dims.end(), out.begin(), out.end());
  if (order == StorageOrder::NHWC) dims.push_back(channels);
  return dims;
}

ConvPoolGeometry ComputeConvPoolGeometry(const ConvPoolArgs& a,
                                         const std::vector<int64_t>& x_dims) {
  const bool nchw = a.order == StorageOrder::NCHW;
  if (a.global_pooling) {
    // The window is the whole input, whatever its rank (strides, dilations and pads are all
    // defaults, so their lengths do not matter).
    HALFCAF_ENFORCE(x_dims.size() >= 3, a.op_label,
                    ": global pooling needs X with at least 3 dims ",
                    nchw ? "(N, C, spatial...)" : "(N, spatial..., C)", ", got ", DimsString(x_dims));
    const int64_t gnd = static_cast<int64_t>(x_dims.size()) - 2;
    HALFCAF_ENFORCE(nchw || gnd == 2, a.op_label,
                    ": NHWC order supports only 2-D pooling, got X ", DimsString(x_dims),
                    " (", gnd, " spatial dims); use order NCHW");
    ConvPoolGeometry g;
    g.N = x_dims[0];
    g.C = nchw ? x_dims[1] : x_dims.back();
    g.in.assign(x_dims.begin() + (nchw ? 2 : 1), x_dims.begin() + (nchw ? 2 : 1) + gnd);
    g.kernel = g.in;
    g.stride.assign(gnd, 1);
    g.dilation.assign(gnd, 1);
    g.pads.assign(2 * gnd, 0);
    g.out.assign(gnd, 1);
    for (int64_t d = 0; d < gnd; ++d) {
      HALFCAF_ENFORCE(g.in[d] >= 1, a.op_label, ": global pooling over an empty input ",
                      DimsString(x_dims));
    }
    return g;
  }
  const int nd = a.num_spatial_dims();
  HALFCAF_ENFORCE(static_cast<int>(x_dims.size()) == nd + 2, a.op_label, ": X must have ", nd + 2,
                  " dims ", nchw ? "(N, C, spatial...)" : "(N, spatial..., C)", " for a ", nd,
                  "-D window in ", StorageOrderName(a.order), " order, got ", DimsString(x_dims));
  ConvPoolGeometry g;
  g.N = x_dims[0];
  g.C = nchw ? x_dims[1] : x_dims.back();
  g.in.assign(x_dims.begin() + (nchw ? 2 : 1), x_dims.begin() + (nchw ? 2 : 1) + nd);
  g.stride = a.stride;
  g.dilation = a.dilation;
  g.kernel = a.kernel;
  g.pads = a.pads;
  g.out.resize(nd);
  for (int d = 0; d < nd; ++d) {
    const std::string where =
        MakeString(a.op_label, ": X ", DimsString(x_dims), ", spatial dim ", d, ": ");
    g.out[d] = ComputeSizeAndPad(g.in[d], g.kernel[d], g.stride[d], g.dilation[d], a.legacy_pad,
                                 &g.pads[d], &g.pads[nd + d], where);
  }
  return g;
}

ConvPoolGeometry WithLeadingUnitDims(const ConvPoolGeometry& g, int count) {
  const int nd = g.num_spatial_dims();
  ConvPoolGeometry r = g;
  auto prepend = [count](std::vector<int64_t>* v, int64_t value) {
    v->insert(v->begin(), count, value);
  };
  prepend(&r.in, 1);
  prepend(&r.kernel, 1);
  prepend(&r.stride, 1);
  prepend(&r.dilation, 1);
  prepend(&r.out, 1);
  r.pads.assign(2 * (nd + count), 0);
  for (int d = 0; d < nd; ++d) {
    r.pads[count + d] = g.pad_head(d);
    r.pads[nd + 2 * count + d] = g.pad_tail(d);
  }
  return r;
}

// ---- schema helpers --------------------------------------------------------------------------

std::vector<TensorShape> ConvShapeInference(const OperatorDef& def,
                                            const std::vector<TensorShape>& in) {
  ConvPoolArgs a = ParseConvPoolArgs(def, ConvPoolKind::kConv);
  ConvPoolGeometry g = ComputeConvPoolGeometry(a, InferenceNchwDims(def, in.at(0).dims));
  HALFCAF_ENFORCE(!in.at(1).dims.empty(), a.op_label, ": filter must not be a scalar");
  std::vector<int64_t> out = g.OutputDims(in[1].dims[0], a.order);
  // A blocked X, or a plain 4-D one under channel_block (a first convolution): Y blocked.
  const int64_t arg = ArgumentHelper(def).GetSingleArgument<int64_t>("channel_block", 0);
  const int64_t block = in[0].dims.size() == 4 ? arg : ChannelBlockOf(def, in[0].dims);
  if (block != 0) out = BlockedDimsOf(out, block, a.op_label, "Y");
  return {TensorShape{out, in[0].dtype}};
}

std::vector<TensorShape> PoolShapeInference(const OperatorDef& def,
                                            const std::vector<TensorShape>& in) {
  ConvPoolArgs a = ParseConvPoolArgs(def, ConvPoolKind::kPool);
  ConvPoolGeometry g = ComputeConvPoolGeometry(a, InferenceNchwDims(def, in.at(0).dims));
  std::vector<int64_t> out = g.OutputDims(g.C, a.order);
  const int64_t block = ChannelBlockOf(def, in[0].dims);
  if (block != 0) out = BlockedDimsOf(out, block, a.op_label, "Y");
  return {TensorShape{out, in[0].dtype}};
}

OpCost ConvCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  ConvPoolArgs a = ParseConvPoolArgs(def, ConvPoolKind::kConv);
  ConvPoolGeometry g = ComputeConvPoolGeometry(a, InferenceNchwDims(def, in.at(0).dims));
  const int64_t M = in.at(1).dims.empty() ? 0 : in[1].dims[0];
  OpCost c;
  c.flops = 2.0 * g.N * M * g.out_size() * (g.C / a.group) * g.kernel_size();
  const double item = DataTypeSize(in[0].dtype);
  const double w_elems = static_cast<double>(in[1].numel());
  const double b_elems = in.size() > 2 ? static_cast<double>(in[2].numel()) : 0.0;
  c.bytes_read = (static_cast<double>(in[0].numel()) + w_elems + b_elems) * item;
  c.bytes_written = static_cast<double>(g.N) * M * g.out_size() * item;
  c.params_bytes = (w_elems + b_elems) * item;
  return c;
}

OpCost PoolCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  ConvPoolArgs a = ParseConvPoolArgs(def, ConvPoolKind::kPool);
  ConvPoolGeometry g = ComputeConvPoolGeometry(a, InferenceNchwDims(def, in.at(0).dims));
  OpCost c;
  const double outputs = static_cast<double>(g.N) * g.C * g.out_size();
  c.flops = outputs * g.kernel_size();
  const double item = DataTypeSize(in[0].dtype);
  c.bytes_read = static_cast<double>(in[0].numel()) * item;
  c.bytes_written = outputs * item;
  return c;
}

}  // namespace halfcaf
