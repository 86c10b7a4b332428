// Type conversions.
//   Cast             X -> Y of type `to` (enum value or name; default FLOAT), any numeric types
//                    including float16 and bfloat16 (rounded to nearest even). Gradient: Cast back
//                    to `from_type`.
//   FloatToHalf      float -> float16;   HalfToFloat      float16 -> float (each other's gradient).
//   FloatToBFloat16  float -> bfloat16;  BFloat16ToFloat  bfloat16 -> float (the same).
#include "operators/tensor/cast_op.h"

#include <map>
#include <type_traits>

#include "core/float_io.h"
#include "core/gradient.h"
#include "core/operator.h"

namespace halfcaf {

DataType ReadTypeArg(const ArgumentHelper& args, const std::string& name, DataType dflt) {
  if (!args.HasArgument(name)) return dflt;
  if (args.HasSingleArgumentOfType<std::string>(name)) {
    return DataTypeFromName(args.GetSingleArgument<std::string>(name, ""));
  }
  return DataTypeFromInt(args.GetSingleArgument<int64_t>(name, 1));
}

void EnforceFixedCastInput(const Tensor& X, DataType from, const std::string& op_type) {
  HALFCAF_ENFORCE(X.dtype() == from, op_type, " expects ", DataTypeName(from), " input, got ",
                  X.DebugString());
}

namespace {

// 16-bit float types convert through float (exactly, then rounded once to the target).
template <typename Dst, typename Src>
void ConvertArray(const Src* src, Dst* dst, int64_t n) {
  if constexpr (kIsFloat16Storage<Src> && std::is_same_v<Dst, float>) {
    ToFloatArray(src, dst, n);
  } else if constexpr (std::is_same_v<Src, float> && kIsFloat16Storage<Dst>) {
    FromFloatArray(src, dst, n);
  } else if constexpr (kIsFloat16Storage<Dst>) {
    for (int64_t i = 0; i < n; ++i) dst[i] = Dst(static_cast<float>(src[i]));
  } else if constexpr (kIsFloat16Storage<Src>) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<Dst>(static_cast<float>(src[i]));
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<Dst>(src[i]);
  }
}

// Converts X into Y of type `to`.
void CastTensor(const Tensor& X, DataType to, Tensor* Y) {
  if (Y != &X) Y->Resize(X.dims());
  const int64_t n = X.numel();
  if (X.dtype() == to) {
    if (Y != &X) Y->CopyFrom(X);
    return;
  }
  // In place with a different element size: convert through a temporary.
  Tensor tmp;
  const Tensor* src = &X;
  if (Y == &X) {
    tmp.CopyFrom(X);
    src = &tmp;
  }
  DispatchAllTypes(src->dtype(), [&](auto stag) {
    using S = decltype(stag);
    DispatchAllTypes(to, [&](auto dtag) {
      using D = decltype(dtag);
      ConvertArray<D, S>(src->data<S>(), Y->mutable_data<D>(), n);
    });
  });
}

class CastOp final : public Operator<CPUContext> {
 public:
  CastOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), to_(ReadTypeArg(args_, "to", DataType::FLOAT)) {
    HALFCAF_ENFORCE(DataTypeSize(to_) > 0, "Cast cannot produce type ", DataTypeName(to_));
  }
  void RunOnDevice() override {
    CastTensor(Input(0), to_, Output(0));
  }

 private:
  DataType to_;
};

template <DataType kFrom, DataType kTo>
class FixedCastOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFixedCastInput(X, kFrom, type());
    CastTensor(X, kTo, Output(0));
  }
};

class GetCastGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  bool CopyArguments() const override { return false; }
  std::vector<OperatorDef> GetGradientDefs() override {
    HALFCAF_ENFORCE(args().HasArgument("from_type"), "the gradient of Cast needs its `from_type` "
                    "argument (the type to cast the gradient back to)");
    const Argument* to = args().Find("to");
    const Argument* from = args().Find("from_type");
    Argument new_to = *from, new_from = to ? *to : MakeArgument("to", 1);
    new_to.set_name("to");
    new_from.set_name("from_type");
    return SingleGradientDef("Cast", {GO(0)}, {GI(0)}, {new_to, new_from});
  }
};

// A fixed cast's gradient is the opposite cast of the output gradient.
class GetFixedCastGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    static const std::map<std::string, std::string> kInverse = {
        {"FloatToHalf", "HalfToFloat"},
        {"HalfToFloat", "FloatToHalf"},
        {"FloatToBFloat16", "BFloat16ToFloat"},
        {"BFloat16ToFloat", "FloatToBFloat16"}};
    return SingleGradientDef(kInverse.at(def_.type()), {GO(0)}, {GI(0)});
  }
};

template <DataType kTo>
std::vector<TensorShape> FixedCastShape(const OperatorDef&, const std::vector<TensorShape>& in) {
  return {TensorShape{in[0].dims, kTo}};
}

std::vector<TensorShape> CastShape(const OperatorDef& def, const std::vector<TensorShape>& in) {
  ArgumentHelper args(def);
  return {TensorShape{in[0].dims, ReadTypeArg(args, "to", DataType::FLOAT)}};
}

}  // namespace

REGISTER_CPU_OPERATOR(Cast, CastOp);
REGISTER_CPU_OPERATOR(FloatToHalf, FixedCastOp<DataType::FLOAT, DataType::FLOAT16>);
REGISTER_CPU_OPERATOR(HalfToFloat, FixedCastOp<DataType::FLOAT16, DataType::FLOAT>);
REGISTER_GRADIENT(Cast, GetCastGradient);
REGISTER_GRADIENT(FloatToHalf, GetFixedCastGradient);
REGISTER_GRADIENT(HalfToFloat, GetFixedCastGradient);
REGISTER_CPU_OPERATOR(FloatToBFloat16, FixedCastOp<DataType::FLOAT, DataType::BFLOAT16>);
REGISTER_CPU_OPERATOR(BFloat16ToFloat, FixedCastOp<DataType::BFLOAT16, DataType::FLOAT>);
REGISTER_GRADIENT(FloatToBFloat16, GetFixedCastGradient);
REGISTER_GRADIENT(BFloat16ToFloat, GetFixedCastGradient);

OPERATOR_SCHEMA(Cast)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(CastShape)
    .PointwiseCost(0)
    .SetDoc("Converts X to the type `to`: float, float16 or bfloat16 (round to nearest even), "
            "double, int8/16/32/64, uint8/16, bool. Float to integer truncates toward zero.")
    .Arg("to", "target type, TensorProto.DataType value or name (default FLOAT; BFLOAT16 is 16)")
    .Arg("from_type", "X's type; needed only to build the gradient")
    .Input(0, "X", "input")
    .Output(0, "Y", "converted output, same shape");

// A fixed cast: X of type `from` (a name) -> Y of DataType `to`, same shape.
#define HALFCAF_FIXED_CAST_SCHEMA(type, from, to, doc)       \
  OPERATOR_SCHEMA(type)                                      \
      .NumInputs(1)                                          \
      .NumOutputs(1)                                         \
      .TensorInferenceFunction(FixedCastShape<DataType::to>) \
      .PointwiseCost(0)                                      \
      .SetDoc(doc)                                           \
      .Input(0, "X", from " input")                          \
      .Output(0, "Y", "output, X's shape")

HALFCAF_FIXED_CAST_SCHEMA(FloatToHalf, "float", FLOAT16,
                          "Converts a float tensor to float16 (round to nearest even; overflow "
                          "gives inf).");
HALFCAF_FIXED_CAST_SCHEMA(HalfToFloat, "float16", FLOAT,
                          "Converts a float16 tensor to float (exact).");
HALFCAF_FIXED_CAST_SCHEMA(FloatToBFloat16, "float", BFLOAT16,
                          "Converts a float tensor to bfloat16 (round to nearest even, subnormals "
                          "kept; overflow gives inf; NaN stays NaN).");
HALFCAF_FIXED_CAST_SCHEMA(BFloat16ToFloat, "bfloat16", FLOAT,
                          "Converts a bfloat16 tensor to float (exact).");

}  // namespace halfcaf
