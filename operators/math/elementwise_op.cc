#include "operators/math/elementwise_op.h"

#include <type_traits>

#include "core/bfloat16.h"
#include "core/float_io.h"
#include "core/gradient.h"
#include "core/nan_math.h"
#include "operators/cpu_parallel.h"
#include "operators/math/bf16_vector_loops.h"

namespace halfcaf {

namespace {

struct AddFunctor {
  static constexpr bool kDivides = false;
  static constexpr bool kFusesRelu = true;
  template <typename T>
  static T Apply(T a, T b) { return static_cast<T>(a + b); }
};
struct SubFunctor {
  static constexpr bool kDivides = false;
  static constexpr bool kFusesRelu = false;
  template <typename T>
  static T Apply(T a, T b) { return static_cast<T>(a - b); }
};
struct MulFunctor {
  static constexpr bool kDivides = false;
  static constexpr bool kFusesRelu = false;
  template <typename T>
  static T Apply(T a, T b) { return static_cast<T>(a * b); }
};
struct DivFunctor {
  static constexpr bool kDivides = true;
  static constexpr bool kFusesRelu = false;
  template <typename T>
  static T Apply(T a, T b) { return static_cast<T>(a / b); }
};

}  // namespace

template <class Functor>
BinaryElementwiseOp<Functor>::BinaryElementwiseOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      bargs_(ParseLegacyBroadcastArgs(args_)),
      fuse_relu_(GetSingleArgument<int>("fuse_relu", 0) != 0) {
  HALFCAF_ENFORCE(!(bargs_.broadcast && IsInputOutputAlias(1, 0)), "with broadcast=1 only A ",
                  "may share its blob with the output C; B ('", input_name(1),
                  "') cannot be computed in place");
  HALFCAF_ENFORCE(!fuse_relu_ || Functor::kFusesRelu, type(),
                  ": argument fuse_relu is Add's only (Add + Relu as one op)");
}

template <class Functor>
void BinaryElementwiseOp<Functor>::RunAddRelu(const Tensor& A, const Tensor& B) {
  HALFCAF_ENFORCE(
      IsFloatType(A.dtype()) && IsFloatType(B.dtype()) && A.dims() == B.dims(), type(),
      ": fuse_relu (Add + Relu as one op) takes float, float16 or bfloat16 A and B of one shape, "
      "got ",
      A.DebugString(), " and ", B.DebugString());
  if (A.dtype() == DataType::BFLOAT16 && B.dtype() == DataType::BFLOAT16) {
    // Bit patterns, on vectors where the CPU has them (bf16_vector_loops.h); before Output: C may
    // be A or B.
    const auto* a = reinterpret_cast<const uint16_t*>(A.data<BFloat16>());
    const auto* b = reinterpret_cast<const uint16_t*>(B.data<BFloat16>());
    auto* c = reinterpret_cast<uint16_t*>(Output(0, A.dims())->template mutable_data<BFloat16>());
    ForEachPiece(A.numel(), 1.0, [&](int64_t off, int64_t n) {
      for (int64_t i = off + AddReluBFloat16Vectors(a + off, b + off, c + off, n); i < off + n;
           ++i) {
        c[i] = FloatToBFloat16Bits(ReluNaN(BFloat16BitsToFloat(a[i]) + BFloat16BitsToFloat(b[i])));
      }
    });
    return;
  }
  if (A.dtype() != DataType::FLOAT || B.dtype() != DataType::FLOAT) {
    // As the unfused Add: converted piece by piece, C in A's type. Rounding keeps the sign (and
    // NaN), so rounding ReluNaN(a + b) is the Relu of the rounded sum.
    const FloatIn a(A), b(B);  // before Output: C may be A or B
    const FloatOut c(Output(0, A.dims()), A.dtype());
    ForEachPiece(A.numel(), 1.0, [&](int64_t off, int64_t n) {
      const float* ap = a.Read(off, n, 0);
      const float* bp = b.Read(off, n, 1);
      float* cp = c.Begin(off, n, 2);
      for (int64_t i = 0; i < n; ++i) cp[i] = ReluNaN(ap[i] + bp[i]);
      c.End(off, n, cp);
    });
    return;
  }
  const float* a = A.data<float>();
  const float* b = B.data<float>();
  float* c = Output(0, A.dims())->template mutable_data<float>();  // may be A or B
  ForEachPiece(A.numel(), 1.0, [&](int64_t off, int64_t n) {
    for (int64_t i = off; i < off + n; ++i) c[i] = ReluNaN(a[i] + b[i]);
  });
}

template <class Functor>
template <typename T>
void BinaryElementwiseOp<Functor>::RunTyped(const Tensor& A, const Tensor& B) {
  const T* a = A.data<T>();
  const T* b = B.data<T>();
  const std::vector<int64_t>& c_dims = numpy_ ? numpy_->out_dims : A.dims();
  if constexpr (Functor::kDivides && std::is_integral_v<T>) {
    // Every element of B is read unless the broadcast output is empty.
    const int64_t n = (numpy_ && numpy_->numel == 0) ? 0 : B.numel();
    for (int64_t j = 0; j < n; ++j) {
      HALFCAF_ENFORCE(b[j] != 0, "integer division by zero: B ('", input_name(1),
                      "') has a zero at element ", j);
    }
  }
  T* c = Output(0, c_dims)->template mutable_data<T>();
  Apply(a, b, c, [](T x, T y) { return Functor::template Apply<T>(x, y); });
}

template <class Functor>
void BinaryElementwiseOp<Functor>::RunOnDevice() {
  const Tensor& A = Input(0);
  const Tensor& B = Input(1);
  if (fuse_relu_) return RunAddRelu(A, B);
  numpy_ = nullptr;
  if (!bargs_.broadcast && A.dims() != B.dims()) {
    numpy_ = &plan_.Get(*this, A.dims(), B.dims());
  } else {
    sizes_ = ComputeBinaryOpSizes(A.dims(), B.dims(), bargs_);
  }
  const std::vector<int64_t>& c_dims = numpy_ ? numpy_->out_dims : A.dims();
  const DataType dtype = A.dtype();
  if (IsFloatType(dtype) && IsFloatType(B.dtype()) && A.dims() == B.dims() &&
      (dtype != DataType::FLOAT || B.dtype() != DataType::FLOAT)) {
    // 16-bit operands of one shape: converted piece by piece, in cache.
    const FloatIn a(A), b(B);  // before Output: C may be A or B
    const FloatOut c(Output(0, c_dims), dtype);
    ForEachPiece(A.numel(), 1.0, [&](int64_t off, int64_t n) {
      const float* ap = a.Read(off, n, 0);
      const float* bp = b.Read(off, n, 1);
      float* cp = c.Begin(off, n, 2);
      for (int64_t i = 0; i < n; ++i) cp[i] = Functor::template Apply<float>(ap[i], bp[i]);
      c.End(off, n, cp);
    });
    return;
  }
  if (IsFloatType(dtype) && IsFloatType(B.dtype())) {
    const float* a = ReadAsFloat(A, &a_);
    const float* b = ReadAsFloat(B, &b_);
    Tensor* C = Output(0, c_dims);
    FloatWriter c(C, dtype, &c_);
    Apply(a, b, c.data(), [](float x, float y) { return Functor::template Apply<float>(x, y); });
    c.Commit();
    return;
  }
  HALFCAF_ENFORCE(dtype == B.dtype(), type(), ": A and B must have the same type, got ",
                  A.DebugString(), " and ", B.DebugString());
  switch (dtype) {
    case DataType::DOUBLE: RunTyped<double>(A, B); return;
    case DataType::INT32: RunTyped<int32_t>(A, B); return;
    case DataType::INT64: RunTyped<int64_t>(A, B); return;
    default: break;
  }
  HALFCAF_THROW(type(), " supports float, float16, bfloat16, double, int32 and int64 tensors, got ",
                A.DebugString());
}

namespace {

// axis / axis_str / order of the forward op, with their defaults written out.
std::vector<Argument> AlignmentArgs(const ArgumentHelper& args) {
  return {MakeArgument("axis", args.GetSingleArgument<int>("axis", -1)),
          MakeArgument("axis_str", args.GetSingleArgument<std::string>("axis_str", "")),
          MakeArgument("order", args.GetSingleArgument<std::string>("order", "NCHW"))};
}

// The makers below emit Caffe2's gradient ops for identical shapes and for the legacy broadcast
// (the `broadcast` argument present). They cannot see shapes, so they treat an op without
// broadcast=1 as having identical input shapes unless the caller gave them input dims that
// differ (SetInputDims): then the forward op broadcast NumPy-style and the gradient is one of
// Caffe2 1.0's ops (AddGradient, ...; elementwise_gradient_op.h), which sum dC down to A's and
// B's shapes at run time.
class ElementwiseGradientMaker : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;

 protected:
  bool NumpyBroadcast() const {
    const std::vector<int64_t>* a = InputDims(0);
    const std::vector<int64_t>* b = InputDims(1);
    return !args().GetSingleArgument<bool>("broadcast", false) && a && b && *a != *b;
  }
  // (dC, A, B) -> (dA, dB) with the gradient op `type`.
  std::vector<OperatorDef> NumpyGradient(const std::string& type) {
    return SingleGradientDef(type, {GO(0), I(0), I(1)}, {GI(0), GI(1)});
  }
};

// Add: dA = dC; dB = dC, or dC summed down to B's shape when the broadcast argument is present.
class GetAddGradient : public ElementwiseGradientMaker {
 public:
  using ElementwiseGradientMaker::ElementwiseGradientMaker;
  std::vector<OperatorDef> GetGradientDefs() override {
    if (NumpyBroadcast()) return NumpyGradient("AddGradient");
    SetDense(0, GO(0));
    if (!args().HasArgument("broadcast")) {
      SetDense(1, GO(0));
      return {};
    }
    return SingleGradientDef("SumReduceLike", {GO(0), I(1)}, {GI(1)});
  }
};

// Sub: dA = dC; dB = -dC (summed down to B's shape with broadcast). Forward args not copied.
class GetSubGradient : public ElementwiseGradientMaker {
 public:
  using ElementwiseGradientMaker::ElementwiseGradientMaker;
  bool CopyArguments() const override { return false; }
  std::vector<OperatorDef> GetGradientDefs() override {
    if (NumpyBroadcast()) return NumpyGradient("SubGradient");
    SetDense(0, GO(0));
    if (!args().HasArgument("broadcast")) {
      return SingleGradientDef("Negative", {GO(0)}, {GI(1)});
    }
    const std::string pre_red = GI(1) + "_autogen_pre_red";
    return {MakeOperatorDef("Negative", "", {GO(0)}, {pre_red}),
            MakeOperatorDef("SumReduceLike", "", {pre_red, I(1)}, {GI(1)}, AlignmentArgs(args()))};
  }
};

// Mul: dA = dC * B; dB = dC * A (summed down to B's shape with broadcast). Forward args not copied.
class GetMulGradient : public ElementwiseGradientMaker {
 public:
  using ElementwiseGradientMaker::ElementwiseGradientMaker;
  bool CopyArguments() const override { return false; }
  std::vector<OperatorDef> GetGradientDefs() override {
    HALFCAF_ENFORCE(O(0) != I(0) && O(0) != I(1), "the gradient of Mul needs A and B, but the "
                    "output '", O(0), "' overwrote one of them (Mul ran in place)");
    if (NumpyBroadcast()) return NumpyGradient("MulGradient");
    if (!args().HasArgument("broadcast")) {
      return {MakeOperatorDef("Mul", "", {GO(0), I(1)}, {GI(0)}),
              MakeOperatorDef("Mul", "", {GO(0), I(0)}, {GI(1)})};
    }
    std::vector<Argument> da_args = AlignmentArgs(args());
    da_args.insert(da_args.begin(),
                   MakeArgument("broadcast", args().GetSingleArgument<int>("broadcast", 0)));
    const std::string pre_red = GI(1) + "_autogen_pre_red";
    return {MakeOperatorDef("Mul", "", {GO(0), I(1)}, {GI(0)}, da_args),
            MakeOperatorDef("Mul", "", {GO(0), I(0)}, {pre_red}),
            MakeOperatorDef("SumReduceLike", "", {pre_red, I(1)}, {GI(1)}, AlignmentArgs(args()))};
  }
};

// Div: DivGradient (B, C, dC) -> (dA, dB), or (dC, A, B, C) -> (dA, dB) when broadcasting
// NumPy-style; not available with the broadcast argument otherwise.
class GetDivGradient : public ElementwiseGradientMaker {
 public:
  using ElementwiseGradientMaker::ElementwiseGradientMaker;
  std::vector<OperatorDef> GetGradientDefs() override {
    if (NumpyBroadcast()) {
      return SingleGradientDef("DivGradient", {GO(0), I(0), I(1), O(0)}, {GI(0), GI(1)});
    }
    HALFCAF_ENFORCE(!args().HasArgument("broadcast"),
                    "the gradient of Div is not supported when the 'broadcast' argument is set");
    return SingleGradientDef("DivGradient", {I(1), O(0), GO(0)}, {GI(0), GI(1)});
  }
};

// C's dims: A's with broadcast=1 or identical shapes, else the NumPy broadcast.
std::vector<int64_t> OutputDims(const OperatorDef& def, const std::vector<TensorShape>& in) {
  const LegacyBroadcastArgs args = ParseLegacyBroadcastArgs(ArgumentHelper(def));
  if (!args.broadcast && in[0].dims != in[1].dims) {
    return NumpyBroadcastDims(def.type(), in[0].dims, in[1].dims);
  }
  ComputeBinaryOpSizes(in[0].dims, in[1].dims, args);
  return in[0].dims;
}

std::vector<TensorShape> BinaryShapeInference(const OperatorDef& def,
                                              const std::vector<TensorShape>& in) {
  return {TensorShape{OutputDims(def, in), in[0].dtype}};
}

OpCost BinaryCost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  OpCost c;
  const double n = static_cast<double>(TensorShape{OutputDims(def, in), in[0].dtype}.numel());
  c.flops = n;
  c.bytes_read = in[0].numel() * static_cast<double>(DataTypeSize(in[0].dtype)) +
                 in[1].numel() * static_cast<double>(DataTypeSize(in[1].dtype));
  c.bytes_written = n * DataTypeSize(in[0].dtype);
  return c;
}

void DescribeBinaryOp(OpSchema& s, const std::string& formula, const std::string& gradient,
                      bool b_in_place) {
  s.NumInputs(2)
      .NumOutputs(1)
      .TensorInferenceFunction(BinaryShapeInference)
      .CostInferenceFunction(BinaryCost)
      .SetDoc(
          "Element-wise " + formula +
          " with Caffe2's two broadcasts. With broadcast=1 (the legacy broadcast), B (at most as "
          "many dims as A) is lined up with A starting at dimension `axis` (default: B's last dim "
          "on A's last dim); size-1 dims at either end of B are ignored and the remaining dims "
          "must equal A's, and B is repeated over the other dims of A; C has A's shape. A B with "
          "one element is a scalar. Example: A (2, 3, 4, 5), B (3, 4), axis 1. Without "
          "broadcast=1, A and B of different shapes broadcast NumPy-style (Caffe2 1.0): trailing "
          "dims line up, each pair must be equal or contain a 1, C takes the larger of each pair "
          "and an input is repeated along its size-1 (or missing) dims. Examples: (3, 4, 5) with "
          "(3, 1, 5) or (5) gives (3, 4, 5); (1, 4, 1) with (3, 1, 5) gives (3, 4, 5). Types: "
          "float, float16 (computed in float), double, int32, int64; C has A's type. In place: "
          "C may be A" +
          std::string(b_in_place ? ", or B when broadcast is off" : "") +
          ", when that input has C's shape. Gradient: Caffe2's ops for identical shapes and "
          "for broadcast=1; under NumPy broadcasting, " +
          gradient +
          ", which sums dC down to A's and B's shapes, when the backward pass is built with "
          "the inputs' dims (Backward's blob_dims), else the identical-shape ops.")
      .Arg("broadcast", "bool, default 0: 1 = the legacy broadcast of B over A")
      .Arg("axis", "int, default -1: dimension of A where B's dims start (-1: trailing)")
      .Arg("axis_str",
           "string, default \"\": the axis as one letter of `order` (e.g. \"C\"); "
           "exclusive with axis")
      .Arg("order", "string, default \"NCHW\": layout used to look up axis_str")
      .Arg("fuse_relu",
           "int, default 0 (halfcaf, Add only): C = max(A + B, 0) (NaN stays NaN), "
           "the Relu after it in the same pass; float A and B of one shape, CPU")
      .Input(0, "A", "first operand, any shape")
      .Input(1, "B",
             "second operand: A's shape, a shape that broadcasts with A's, or (with "
             "broadcast=1) a shape aligned to A")
      .Output(0, "C", "result, A's type; A's shape with broadcast=1, else the broadcast shape");
  if (b_in_place) {
    s.AllowInplace({{0, 0}, {1, 0}});
  } else {
    s.AllowInplace({{0, 0}});
  }
}

[[maybe_unused]] const bool g_binary_schemas = [] {
  DescribeBinaryOp(OpSchemaRegistry::NewSchema("Add", __FILE__, __LINE__), "addition C = A + B",
                   "AddGradient (dC, A, B)", true);
  DescribeBinaryOp(OpSchemaRegistry::NewSchema("Sub", __FILE__, __LINE__),
                   "subtraction C = A - B", "SubGradient (dC, A, B)", true);
  DescribeBinaryOp(OpSchemaRegistry::NewSchema("Mul", __FILE__, __LINE__),
                   "multiplication C = A * B", "MulGradient (dC, A, B)", true);
  DescribeBinaryOp(OpSchemaRegistry::NewSchema("Div", __FILE__, __LINE__),
                   "division C = A / B (integer division by zero is an error)",
                   "DivGradient (dC, A, B, C)", false);
  return true;
}();

}  // namespace

template class BinaryElementwiseOp<AddFunctor>;
template class BinaryElementwiseOp<SubFunctor>;
template class BinaryElementwiseOp<MulFunctor>;
template class BinaryElementwiseOp<DivFunctor>;

REGISTER_CPU_OPERATOR(Add, BinaryElementwiseOp<AddFunctor>);
REGISTER_CPU_OPERATOR(Sub, BinaryElementwiseOp<SubFunctor>);
REGISTER_CPU_OPERATOR(Mul, BinaryElementwiseOp<MulFunctor>);
REGISTER_CPU_OPERATOR(Div, BinaryElementwiseOp<DivFunctor>);
REGISTER_GRADIENT(Add, GetAddGradient);
REGISTER_GRADIENT(Sub, GetSubGradient);
REGISTER_GRADIENT(Mul, GetMulGradient);
REGISTER_GRADIENT(Div, GetDivGradient);

}  // namespace halfcaf
