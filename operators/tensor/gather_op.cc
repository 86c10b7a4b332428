#include "operators/tensor/gather_op.h"

#include <algorithm>
#include <cstring>

#include "core/checked_math.h"
#include "core/float_io.h"
#include "core/gradient.h"

namespace halfcaf {

GatherPlan MakeGatherPlan(const std::vector<int64_t>& data_dims,
                          const std::vector<int64_t>& index_dims, int axis, const std::string& op) {
  const int nd = static_cast<int>(data_dims.size());
  HALFCAF_ENFORCE(axis >= -nd && axis < nd, op, ": axis ", axis,
                  " is out of range for DATA with dims ", DimsString(data_dims), " (expected ", -nd,
                  " <= axis < ", nd, ")");
  GatherPlan p;
  p.axis = axis < 0 ? axis + nd : axis;
  p.dim = data_dims[p.axis];
  p.n = CheckedNumel(index_dims, op, ": INDICES");
  for (int d = 0; d < p.axis; ++d) p.outer *= data_dims[d];
  for (int d = p.axis + 1; d < nd; ++d) p.inner *= data_dims[d];
  if (p.dim == 0) {
    // Caffe2's rule for empty batches: nothing to gather from, OUTPUT is DATA's (empty) shape.
    p.out_dims = data_dims;
    p.n = 0;
    return p;
  }
  p.out_dims.assign(data_dims.begin(), data_dims.begin() + p.axis);
  p.out_dims.insert(p.out_dims.end(), index_dims.begin(), index_dims.end());
  p.out_dims.insert(p.out_dims.end(), data_dims.begin() + p.axis + 1, data_dims.end());
  CheckedNumel(p.out_dims, op, ": OUTPUT");
  return p;
}

void EnforceIndexType(const Tensor& indices, const std::string& op) {
  HALFCAF_ENFORCE(indices.dtype() == DataType::INT32 || indices.dtype() == DataType::INT64, op,
                  ": indices must be int32 or int64, got ", indices.DebugString());
}

void ReadIndices(const Tensor& indices, std::vector<int64_t>* out) {
  out->resize(static_cast<size_t>(indices.numel()));
  if (indices.dtype() == DataType::INT32) {
    std::copy_n(indices.data<int32_t>(), indices.numel(), out->data());
  } else {
    std::copy_n(indices.data<int64_t>(), indices.numel(), out->data());
  }
}

void CheckIndexRange(std::vector<int64_t>* index, int64_t dim, bool wrap, const std::string& op) {
  for (size_t i = 0; i < index->size(); ++i) {
    int64_t& v = (*index)[i];
    const int64_t given = v;
    if (wrap && v < 0) v += dim;
    HALFCAF_ENFORCE(v >= 0 && v < dim, op, ": index ", given, " at position ", i,
                    " of the indices is out of range for a dim of size ", dim, " (expected ",
                    wrap ? -dim : 0, " <= index < ", dim, ")");
  }
}

bool GatherWrapsIndices(const ArgumentHelper& args, int axis) {
  return args.HasArgument("wrap_indices") ? args.GetSingleArgument<int>("wrap_indices", 0) != 0
                                          : axis == 0;
}

std::vector<int64_t> SparseToDenseDims(const std::vector<int64_t>& index_dims,
                                       const std::vector<int64_t>& value_dims, int64_t first,
                                       const std::string& op) {
  const bool leading = value_dims.size() >= index_dims.size() &&
                       std::equal(index_dims.begin(), index_dims.end(), value_dims.begin());
  HALFCAF_ENFORCE(leading, op, ": values ", DimsString(value_dims),
                  " must start with the indices' dims ", DimsString(index_dims),
                  " (one value slice per index)");
  std::vector<int64_t> out{first};
  out.insert(out.end(), value_dims.begin() + index_dims.size(), value_dims.end());
  return out;
}

int64_t SparseToDenseFirstDim(int64_t output_first_dim, const Tensor* data_to_infer_dim, bool wrap,
                              const std::string& op, std::vector<int64_t>* index) {
  int64_t first = output_first_dim;
  if (first <= 0 && data_to_infer_dim != nullptr) {
    HALFCAF_ENFORCE(data_to_infer_dim->ndim() >= 1, op,
                    ": data_to_infer_dim must have at least one dim, got ",
                    data_to_infer_dim->DebugString());
    first = data_to_infer_dim->dim(0);
  } else if (first <= 0) {
    HALFCAF_ENFORCE(!wrap, op,
                    ": wrap_indices needs the first output dim (output_first_dim or "
                    "data_to_infer_dim) to wrap negative indices");
    first = 0;
    for (int64_t v : *index) first = std::max(first, v + 1);
  }
  CheckIndexRange(index, first, wrap, op);
  return first;
}

GatherPlan CheckBatchGatherGradientInputs(const Tensor& data, const Tensor& indices,
                                          const Tensor& grad, int axis, const std::string& op) {
  EnforceIndexType(indices, op);
  EnforceFloatType(grad, "GRAD");
  const GatherPlan p = MakeGatherPlan(data.dims(), indices.dims(), axis, op);
  HALFCAF_ENFORCE(grad.dims() == p.out_dims, op, ": GRAD has dims ", DimsString(grad.dims()),
                  " but gathering DATA ", DimsString(data.dims()), " along axis ", p.axis,
                  " at indices ", DimsString(indices.dims()), " gives ", DimsString(p.out_dims));
  return p;
}

void CheckSparseToDenseInputs(const Tensor& indices, const Tensor& values, const std::string& op) {
  EnforceIndexType(indices, op);
  const DataType t = values.dtype();
  HALFCAF_ENFORCE(IsFloatType(t) || t == DataType::INT32 || t == DataType::INT64, op,
                  ": values must be float, float16, bfloat16, int32 or int64, got ",
                  values.DebugString());
  SparseToDenseDims(indices.dims(), values.dims(), 0, op);
}

namespace {

// out (outer, dim, inner) = 0, then out[o, index[i], :] += src[o, i, :].
template <typename T>
void ScatterAddRows(int64_t outer, int64_t dim, int64_t inner, const std::vector<int64_t>& index,
                    const T* src, T* out) {
  std::fill_n(out, outer * dim * inner, T(0));
  const int64_t n = static_cast<int64_t>(index.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < n; ++i) {
      const T* s = src + (o * n + i) * inner;
      T* d = out + (o * dim + index[i]) * inner;
      for (int64_t k = 0; k < inner; ++k) d[k] += s[k];
    }
  }
}

}  // namespace

GatherArgs::GatherArgs(const OperatorBase& op, bool gradient)
    : axis(op.GetSingleArgument<int>("axis", gradient ? 1 : 0)),
      wrap(gradient ? op.GetSingleArgument<int>("wrap_indices", 0) != 0
                    : GatherWrapsIndices(ArgumentHelper(op.def()), axis)) {
  HALFCAF_ENFORCE(op.GetSingleArgument<int>("match_outer", 0) == 0, op.DebugName(),
                  ": match_outer=1 is not supported");
}

SparseToDenseArgs::SparseToDenseArgs(const OperatorBase& op)
    : output_first_dim(op.GetSingleArgument<int64_t>("output_first_dim", 0)),
      wrap(op.GetSingleArgument<int>("wrap_indices", 0) != 0) {
  HALFCAF_ENFORCE(output_first_dim <= 0 || op.InputSize() == 2, op.DebugName(),
                  ": output_first_dim and the data_to_infer_dim input both give the first "
                  "output dim; give one of them");
}

void GatherOp::RunOnDevice() {
  const Tensor& D = Input(0);
  const Tensor& I = Input(1);
  EnforceIndexType(I, DebugName());
  const GatherPlan p = MakeGatherPlan(D.dims(), I.dims(), gather_.axis, DebugName());
  Tensor* Y = Output(0, p.out_dims);
  char* y = static_cast<char*>(Y->raw_mutable_data(D.dtype()));
  if (Y->numel() == 0) return;
  ReadIndices(I, &index_);
  CheckIndexRange(&index_, p.dim, gather_.wrap, DebugName());
  const size_t block = static_cast<size_t>(p.inner) * DataTypeSize(D.dtype());
  const char* d = static_cast<const char*>(D.raw_data());
  for (int64_t o = 0; o < p.outer; ++o) {
    for (int64_t i = 0; i < p.n; ++i) {
      std::memcpy(y + (o * p.n + i) * block, d + (o * p.dim + index_[i]) * block, block);
    }
  }
}

void BatchGatherGradientOp::RunOnDevice() {
  const Tensor& D = Input(0);
  const Tensor& I = Input(1);
  const Tensor& G = Input(2);
  const GatherPlan p = CheckBatchGatherGradientInputs(D, I, G, gather_.axis, DebugName());
  ReadIndices(I, &index_);
  index_.resize(static_cast<size_t>(p.n));  // none when the axis is empty (see MakeGatherPlan)
  CheckIndexRange(&index_, p.dim, gather_.wrap, DebugName());
  const float* g = ReadAsFloat(G, &grad_);
  const DataType dtype = G.dtype();
  Tensor* dD = Output(0, D.dims());
  FloatWriter out(dD, dtype, &out_);
  ScatterAddRows(p.outer, p.dim, p.inner, index_, g, out.data());
  out.Commit();
}

void SparseToDenseOp::RunOnDevice() {
  const Tensor& I = Input(0);
  const Tensor& V = Input(1);
  CheckSparseToDenseInputs(I, V, DebugName());
  const DataType dtype = V.dtype();
  ReadIndices(I, &index_);
  const int64_t first =
      SparseToDenseFirstDim(args_s2d_.output_first_dim, InputSize() == 3 ? &Input(2) : nullptr,
                            args_s2d_.wrap, DebugName(), &index_);
  Tensor* Y = Output(0, SparseToDenseDims(I.dims(), V.dims(), first, DebugName()));
  const int64_t inner = Y->size_from_dim(1);
  switch (dtype) {
    case DataType::INT32:
      ScatterAddRows(1, first, inner, index_, V.data<int32_t>(), Y->mutable_data<int32_t>());
      break;
    case DataType::INT64:
      ScatterAddRows(1, first, inner, index_, V.data<int64_t>(), Y->mutable_data<int64_t>());
      break;
    default: {
      const float* v = ReadAsFloat(V, &values_);
      FloatWriter out(Y, dtype, &out_);
      ScatterAddRows(1, first, inner, index_, v, out.data());
      out.Commit();
    }
  }
}

namespace {

class GetGatherGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    const int axis = args().GetSingleArgument<int>("axis", 0);
    const bool dense = args().GetSingleArgument<int>("dense_gradient", 0) != 0;
    // The gradient op must wrap exactly as the forward op did, whatever its own default.
    const Argument wrap = MakeArgument("wrap_indices", GatherWrapsIndices(args(), axis) ? 1 : 0);
    if (axis == 0) {
      if (dense) return SingleGradientDef("SparseToDense", {I(1), GO(0), I(0)}, {GI(0)}, {wrap});
      // Caffe2's sparse gradient: the rows named by INDICES get dOUTPUT's slices.
      g_input_.at(0) = GradientWrapper{"", I(1), GO(0)};
      return {};
    }
    HALFCAF_ENFORCE(!args().HasArgument("dense_gradient") || dense, "Gather along axis ", axis,
                    " has only a dense gradient (BatchGatherGradient); dense_gradient=0 asks for "
                    "a sparse one");
    return SingleGradientDef("BatchGatherGradient", {I(0), I(1), GO(0)}, {GI(0)},
                             {MakeArgument("axis", axis), wrap});
  }
};

class GetSparseToDenseGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("Gather", {GO(0), I(0)}, {GI(1)});
  }
};

std::vector<TensorShape> GatherShape(const OperatorDef& def, const std::vector<TensorShape>& in) {
  const int axis = ArgumentHelper(def).GetSingleArgument<int>("axis", 0);
  return {
      TensorShape{MakeGatherPlan(in[0].dims, in[1].dims, axis, def.type()).out_dims, in[0].dtype}};
}

OpCost GatherCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  OpCost c;
  const double out = static_cast<double>(GatherShape(def, in)[0].numel());
  c.bytes_read = out * DataTypeSize(in[0].dtype) +
                 static_cast<double>(in.at(1).numel()) * DataTypeSize(in[1].dtype);
  c.bytes_written = out * DataTypeSize(in[0].dtype);
  return c;
}

// Scatter-adds: one add per element of the gradient read, plus zeroing the output.
OpCost ScatterCost(int64_t read, DataType read_type, int64_t written, DataType written_type) {
  OpCost c;
  c.flops = static_cast<double>(read);
  c.bytes_read = static_cast<double>(read) * DataTypeSize(read_type);
  c.bytes_written = static_cast<double>(written) * DataTypeSize(written_type);
  return c;
}

std::vector<TensorShape> SparseToDenseShape(const OperatorDef& def,
                                            const std::vector<TensorShape>& in) {
  const int64_t arg = ArgumentHelper(def).GetSingleArgument<int64_t>("output_first_dim", 0);
  if (arg <= 0 && (in.size() < 3 || in[2].dims.empty())) {
    return {TensorShape{{}, in[1].dtype, true}};  // depends on the index values
  }
  const int64_t first = arg > 0 ? arg : in[2].dims[0];
  return {TensorShape{SparseToDenseDims(in[0].dims, in[1].dims, first, def.type()), in[1].dtype}};
}

}  // namespace

REGISTER_CPU_OPERATOR(Gather, GatherOp);
REGISTER_CPU_OPERATOR(BatchGatherGradient, BatchGatherGradientOp);
REGISTER_CPU_OPERATOR(SparseToDense, SparseToDenseOp);
REGISTER_GRADIENT(Gather, GetGatherGradient);
REGISTER_GRADIENT(SparseToDense, GetSparseToDenseGradient);

OPERATOR_SCHEMA(Gather)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction(GatherShape)
    .CostInferenceFunction(GatherCost)
    .SetDoc(
        "Takes the slices of DATA at INDICES along `axis`: OUTPUT.dims = DATA.dims[:axis] + "
        "INDICES.dims + DATA.dims[axis+1:]. With wrap_indices (the default for axis 0 only) "
        "a negative index counts from the end of the axis; any index outside the axis is an "
        "error. A DATA whose axis has size 0 gives an empty OUTPUT shaped like DATA. Any data "
        "type. Gradient (as in Caffe2): for axis 0 a sparse gradient (the INDICES and "
        "dOUTPUT blobs as indices and values, no op) unless dense_gradient=1, which emits "
        "SparseToDense(INDICES, dOUTPUT, DATA); for any other axis BatchGatherGradient("
        "DATA, INDICES, dOUTPUT). Training nets that update DATA as a dense parameter need "
        "dense_gradient=1 for axis 0. match_outer is not supported.")
    .Arg("axis", "int, default 0: the dim of DATA to index (negative counts from the end)")
    .Arg("wrap_indices", "int, default 1 for axis 0, else 0: negative indices count from the end")
    .Arg("dense_gradient", "int, default 0: axis 0 only; 1 makes the gradient a dense tensor")
    .Input(0, "DATA", "tensor of any type with at least one dim")
    .Input(1, "INDICES", "int32 or int64 tensor of any shape")
    .Output(0, "OUTPUT", "the gathered slices");

OPERATOR_SCHEMA(BatchGatherGradient)
    .NumInputs(3)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return std::vector<TensorShape>{{in[0].dims, in[2].dtype}};
    })
    .CostInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return ScatterCost(in.at(2).numel(), in[2].dtype, in[0].numel(), in[2].dtype);
    })
    .SetDoc(
        "Dense gradient of Gather along an axis: dDATA is zero except that GRAD's slice "
        "for each index is added at that index along `axis` (repeated indices add up). "
        "GRAD must have Gather's output dims. Float and float16 (sums in float).")
    .Arg("axis", "int, default 1: the gathered dim of DATA")
    .Arg("wrap_indices", "int, default 0: negative indices count from the end")
    .Input(0, "DATA", "the forward DATA (gives dDATA's dims)")
    .Input(1, "INDICES", "int32 or int64 indices of the forward op")
    .Input(2, "GRAD", "gradient of the gathered output")
    .Output(0, "dDATA", "gradient of DATA");

OPERATOR_SCHEMA(SparseToDense)
    .NumInputs(2, 3)
    .NumOutputs(1)
    .TensorInferenceFunction(SparseToDenseShape)
    .CostInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      const TensorShape out = SparseToDenseShape(def, in)[0];
      return ScatterCost(in.at(1).numel(), in[1].dtype, out.unknown ? 0 : out.numel(), in[1].dtype);
    })
    .SetDoc(
        "Turns (indices, values) pairs into a dense tensor: zeros, then values[i, ...] is "
        "added at row indices[i] (repeated indices add up). values.dims starts with "
        "indices.dims (Caffe2 accepts only 1-D indices; here any shape works the same way); "
        "the output has values' remaining dims after a first dim taken from "
        "output_first_dim, else from data_to_infer_dim's first dim, else max(indices) + 1. "
        "Negative or too large indices are an error unless wrap_indices is set (negatives "
        "then count from the end). Float, float16, int32, int64. Gradient: Gather(doutput, "
        "indices) -> dvalues.")
    .Arg("output_first_dim", "int, default 0: the first output dim when > 0 (2 inputs only)")
    .Arg("wrap_indices", "int, default 0: negative indices count from the end")
    .Input(0, "indices", "int32 or int64 row indices")
    .Input(1, "values", "slices, values.dims = indices.dims + slice dims")
    .Input(2, "data_to_infer_dim", "optional: its first dim is the output's first dim")
    .Output(0, "output", "dense tensor, values' dtype");

}  // namespace halfcaf
