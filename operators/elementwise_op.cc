#include "operators/elementwise_op.h"

#include <type_traits>

#include "core/float_io.h"
#include "core/gradient.h"

namespace halfcaf {

namespace {

struct AddFunctor {
  static constexpr bool kDivides = false;
  template <typename T>
  static T Apply(T a, T b) { return static_cast<T>(a + b); }
};
struct SubFunctor {
  static constexpr bool kDivides = false;
  template <typename T>
  static T Apply(T a, T b) { return static_cast<T>(a - b); }
};
struct MulFunctor {
  static constexpr bool kDivides = false;
  template <typename T>
  static T Apply(T a, T b) { return static_cast<T>(a * b); }
};
struct DivFunctor {
  static constexpr bool kDivides = true;
  template <typename T>
  static T Apply(T a, T b) { return static_cast<T>(a / b); }
};

}  // namespace

template <class Functor>
BinaryElementwiseOp<Functor>::BinaryElementwiseOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws), bargs_(ParseLegacyBroadcastArgs(args_)) {
  HALFCAF_ENFORCE(!(bargs_.broadcast && IsInputOutputAlias(1, 0)), "with broadcast=1 only A ",
                  "may share its blob with the output C; B ('", input_name(1),
                  "') cannot be computed in place");
}

template <class Functor>
template <typename T>
void BinaryElementwiseOp<Functor>::RunTyped(const Tensor& A, const Tensor& B,
                                            const BroadcastSizes& s) {
  const T* a = A.data<T>();
  const T* b = B.data<T>();
  if constexpr (Functor::kDivides && std::is_integral_v<T>) {
    for (int64_t j = 0; j < s.n; ++j) {
      HALFCAF_ENFORCE(b[j] != 0, "integer division by zero: B ('", input_name(1),
                      "') has a zero at element ", j);
    }
  }
  T* c = Output(0, A.dims())->template mutable_data<T>();
  ApplyBroadcast(a, b, c, s, [](T x, T y) { return Functor::template Apply<T>(x, y); });
}

template <class Functor>
void BinaryElementwiseOp<Functor>::RunOnDevice() {
  const Tensor& A = Input(0);
  const Tensor& B = Input(1);
  const BroadcastSizes s = ComputeBinaryOpSizes(A.dims(), B.dims(), bargs_);
  const DataType dtype = A.dtype();
  if (IsFloatType(dtype) && IsFloatType(B.dtype())) {
    const float* a = ReadAsFloat(A, &a_);
    const float* b = ReadAsFloat(B, &b_);
    Tensor* C = Output(0, A.dims());
    FloatWriter c(C, dtype, &c_);
    ApplyBroadcast(a, b, c.data(), s,
                   [](float x, float y) { return Functor::template Apply<float>(x, y); });
    c.Commit();
    return;
  }
  HALFCAF_ENFORCE(dtype == B.dtype(), type(), ": A and B must have the same type, got ",
                  A.DebugString(), " and ", B.DebugString());
  switch (dtype) {
    case DataType::DOUBLE: RunTyped<double>(A, B, s); return;
    case DataType::INT32: RunTyped<int32_t>(A, B, s); return;
    case DataType::INT64: RunTyped<int64_t>(A, B, s); return;
    default: break;
  }
  HALFCAF_THROW(type(), " supports float, float16, double, int32 and int64 tensors, got ",
                A.DebugString());
}

void DivGradientOp::RunOnDevice() {
  const Tensor& B = Input(0);
  const Tensor& C = Input(1);
  const Tensor& dC = Input(2);
  HALFCAF_ENFORCE(B.dims() == C.dims() && C.dims() == dC.dims(),
                  "B, C and dC must have the same shape, got ", DimsString(B.dims()), ", ",
                  DimsString(C.dims()), " and ", DimsString(dC.dims()));
  const int64_t n = B.numel();
  if (B.dtype() == DataType::DOUBLE && C.dtype() == DataType::DOUBLE &&
      dC.dtype() == DataType::DOUBLE) {
    const double* b = B.data<double>();
    const double* c = C.data<double>();
    const double* dc = dC.data<double>();
    double* da = Output(0, B.dims())->mutable_data<double>();
    double* db = Output(1, B.dims())->mutable_data<double>();
    for (int64_t i = 0; i < n; ++i) {
      da[i] = dc[i] / b[i];
      db[i] = -da[i] * c[i];
    }
    return;
  }
  EnforceFloatType(B, "B");
  EnforceFloatType(C, "C");
  EnforceFloatType(dC, "dC");
  const float* b = ReadAsFloat(B, &b_);
  const float* c = ReadAsFloat(C, &c_);
  const float* dc = ReadAsFloat(dC, &dc_);
  const DataType da_type = dC.dtype(), db_type = B.dtype();
  FloatWriter da(Output(0, B.dims()), da_type, &da_);
  FloatWriter db(Output(1, B.dims()), db_type, &db_);
  float* dad = da.data();
  float* dbd = db.data();
  for (int64_t i = 0; i < n; ++i) {
    const float g = dc[i] / b[i];
    dad[i] = g;
    dbd[i] = -g * c[i];
  }
  da.Commit();
  db.Commit();
}

namespace {

// axis / axis_str / order of the forward op, with their defaults written out.
std::vector<Argument> AlignmentArgs(const ArgumentHelper& args) {
  return {MakeArgument("axis", args.GetSingleArgument<int>("axis", -1)),
          MakeArgument("axis_str", args.GetSingleArgument<std::string>("axis_str", "")),
          MakeArgument("order", args.GetSingleArgument<std::string>("order", "NCHW"))};
}

// Add: dA = dC; dB = dC, or dC summed down to B's shape when the broadcast argument is present.
class GetAddGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    SetDense(0, GO(0));
    if (!args().HasArgument("broadcast")) {
      SetDense(1, GO(0));
      return {};
    }
    return SingleGradientDef("SumReduceLike", {GO(0), I(1)}, {GI(1)});
  }
};

// Sub: dA = dC; dB = -dC (summed down to B's shape with broadcast). Forward args not copied.
class GetSubGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  bool CopyArguments() const override { return false; }
  std::vector<OperatorDef> GetGradientDefs() override {
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
class GetMulGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  bool CopyArguments() const override { return false; }
  std::vector<OperatorDef> GetGradientDefs() override {
    HALFCAF_ENFORCE(O(0) != I(0) && O(0) != I(1), "the gradient of Mul needs A and B, but the "
                    "output '", O(0), "' overwrote one of them (Mul ran in place)");
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

// Div: DivGradient (B, C, dC) -> (dA, dB); not available with the broadcast argument.
class GetDivGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    HALFCAF_ENFORCE(!args().HasArgument("broadcast"),
                    "the gradient of Div is not supported when the 'broadcast' argument is set");
    return SingleGradientDef("DivGradient", {I(1), O(0), GO(0)}, {GI(0), GI(1)});
  }
};

std::vector<TensorShape> BinaryShapeInference(const OperatorDef& def,
                                              const std::vector<TensorShape>& in) {
  ComputeBinaryOpSizes(in[0].dims, in[1].dims, ParseLegacyBroadcastArgs(ArgumentHelper(def)));
  return {in[0]};
}

OpCost BinaryCost(const OperatorDef&, const std::vector<TensorShape>& in) {
  OpCost c;
  const double n = static_cast<double>(in[0].numel());
  c.flops = n;
  c.bytes_read = n * DataTypeSize(in[0].dtype) + in[1].numel() * DataTypeSize(in[1].dtype);
  c.bytes_written = n * DataTypeSize(in[0].dtype);
  return c;
}

void DescribeBinaryOp(OpSchema& s, const std::string& formula, bool b_in_place) {
  s.NumInputs(2)
      .NumOutputs(1)
      .TensorInferenceFunction(BinaryShapeInference)
      .CostInferenceFunction(BinaryCost)
      .SetDoc(
          "Element-wise " + formula +
          " with Caffe2's legacy broadcast. Without broadcast A and B must have identical dims. "
          "With broadcast=1, B (at most as many dims as A) is lined up with A starting at "
          "dimension `axis` (default: B's last dim on A's last dim); size-1 dims at either end "
          "of B are ignored and the remaining dims must equal A's, and B is repeated over the "
          "other dims of A. A B with one element is a scalar. Example: A (2, 3, 4, 5), B (3, 4), "
          "axis 1. Types: float, float16 (computed in float), double, int32, int64. In place: "
          "C may be A" +
          std::string(b_in_place ? ", or B when broadcast is off." : "."))
      .Arg("broadcast", "bool, default 0: allow B to be smaller than A")
      .Arg("axis", "int, default -1: dimension of A where B's dims start (-1: trailing)")
      .Arg("axis_str", "string, default \"\": the axis as one letter of `order` (e.g. \"C\"); "
                       "exclusive with axis")
      .Arg("order", "string, default \"NCHW\": layout used to look up axis_str")
      .Input(0, "A", "first operand, any shape")
      .Input(1, "B", "second operand, A's shape or (with broadcast) a shape aligned to A")
      .Output(0, "C", "result, A's shape and type");
  if (b_in_place) {
    s.AllowInplace({{0, 0}, {1, 0}});
  } else {
    s.AllowInplace({{0, 0}});
  }
}

[[maybe_unused]] const bool g_binary_schemas = [] {
  DescribeBinaryOp(OpSchemaRegistry::NewSchema("Add", __FILE__, __LINE__), "addition C = A + B",
                   true);
  DescribeBinaryOp(OpSchemaRegistry::NewSchema("Sub", __FILE__, __LINE__),
                   "subtraction C = A - B", true);
  DescribeBinaryOp(OpSchemaRegistry::NewSchema("Mul", __FILE__, __LINE__),
                   "multiplication C = A * B", true);
  DescribeBinaryOp(OpSchemaRegistry::NewSchema("Div", __FILE__, __LINE__),
                   "division C = A / B (integer division by zero is an error)", false);
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
REGISTER_CPU_OPERATOR(DivGradient, DivGradientOp);
REGISTER_GRADIENT(Add, GetAddGradient);
REGISTER_GRADIENT(Sub, GetSubGradient);
REGISTER_GRADIENT(Mul, GetMulGradient);
REGISTER_GRADIENT(Div, GetDivGradient);

OPERATOR_SCHEMA(DivGradient)
    .NumInputs(3)
    .NumOutputs(2)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return std::vector<TensorShape>{in[2], in[0]};
    })
    .PointwiseCost(3)
    .SetDoc("Gradient of Div without broadcast: dA = dC / B, dB = -dC * C / B (C = A / B is the "
            "forward output). Float, float16 (computed in float) and double.")
    .Input(0, "B", "forward divisor")
    .Input(1, "C", "forward output A / B")
    .Input(2, "dC", "gradient of C")
    .Output(0, "dA", "gradient of A (dC's type)")
    .Output(1, "dB", "gradient of B (B's type)");

}  // namespace halfcaf
