// GivenTensorFill and its typed variants: a tensor of `shape` holding exactly `values`.
//   GivenTensorFill       values in floats; `dtype` may select DOUBLE, FLOAT16 or BFLOAT16
//                         (stored rounded), INT32, INT64 or BOOL (then values are read from ints
//                         for the integer types, as Caffe2 does)
//   GivenTensorIntFill    int32 from ints      GivenTensorInt64Fill  int64 from ints
//   GivenTensorDoubleFill double from floats   GivenTensorBoolFill   bool from ints
#include "core/float_io.h"
#include "core/gradient.h"
#include "operators/fill/filler_op.h"

namespace halfcaf {

namespace {

// The values of a GivenTensor*Fill; `fixed` is the element type, or UNDEFINED for plain
// GivenTensorFill (dtype argument).
class GivenTensorFillSpec final : public FillSpec {
 public:
  GivenTensorFillSpec(DataType fixed, const ArgumentHelper& args) {
    dtype_ = fixed;
    if (fixed == DataType::UNDEFINED) {  // plain GivenTensorFill: dtype argument or FLOAT
      dtype_ = DataType::FLOAT;
      if (args.HasSingleArgumentOfType<std::string>("dtype")) {
        dtype_ = DataTypeFromName(args.GetSingleArgument<std::string>("dtype", ""));
      } else if (args.HasArgument("dtype")) {
        dtype_ = DataTypeFromInt(args.GetSingleArgument<int64_t>("dtype", 1));
      }
    }
    const bool from_ints = !(IsFloatType(dtype_) || dtype_ == DataType::DOUBLE);
    if (from_ints) {
      ints_ = args.GetRepeatedArgument<int64_t>("values");
      count_ = ints_.size();
    } else {
      floats_ = args.GetRepeatedArgument<float>("values");
      count_ = floats_.size();
    }
    HALFCAF_ENFORCE(dtype_ != DataType::STRING, "string tensors are not supported");
    HALFCAF_ENFORCE(args.HasArgument("values"), "`values` is required");
  }

  void Fill(Tensor* out, std::mt19937*) const override {
    HALFCAF_ENFORCE(static_cast<int64_t>(count_) == out->numel(), "shape ",
                    DimsString(out->dims()), " holds ", out->numel(), " elements but ", count_,
                    " values were given");
    if (IsFloatType(dtype_)) {
      std::vector<float> scratch;
      FloatWriter w(out, dtype_, &scratch);
      std::copy(floats_.begin(), floats_.end(), w.data());
      w.Commit();
      return;
    }
    DispatchAllTypes(dtype_, [&](auto tag) {
      using T = decltype(tag);
      T* d = out->mutable_data<T>();
      if (dtype_ == DataType::DOUBLE) {
        for (size_t i = 0; i < count_; ++i) d[i] = static_cast<T>(floats_[i]);
      } else {
        for (size_t i = 0; i < count_; ++i) d[i] = static_cast<T>(ints_[i]);
      }
    });
  }

 private:
  std::vector<float> floats_;
  std::vector<int64_t> ints_;
  size_t count_ = 0;
};

}  // namespace

std::unique_ptr<FillSpec> MakeGivenTensorFillSpec(const std::string& type,
                                                  const ArgumentHelper& args) {
  DataType fixed;
  if (type == "GivenTensorFill") {
    fixed = DataType::UNDEFINED;
  } else if (type == "GivenTensorIntFill") {
    fixed = DataType::INT32;
  } else if (type == "GivenTensorInt64Fill") {
    fixed = DataType::INT64;
  } else if (type == "GivenTensorDoubleFill") {
    fixed = DataType::DOUBLE;
  } else if (type == "GivenTensorBoolFill") {
    fixed = DataType::BOOL;
  } else {
    HALFCAF_THROW("no fill spec for operator type '", type, "'");
  }
  return std::make_unique<GivenTensorFillSpec>(fixed, args);
}

REGISTER_CPU_OPERATOR(GivenTensorFill, FillerOp);
REGISTER_CPU_OPERATOR(GivenTensorIntFill, FillerOp);
REGISTER_CPU_OPERATOR(GivenTensorInt64Fill, FillerOp);
REGISTER_CPU_OPERATOR(GivenTensorDoubleFill, FillerOp);
REGISTER_CPU_OPERATOR(GivenTensorBoolFill, FillerOp);
NO_GRADIENT(GivenTensorFill);
NO_GRADIENT(GivenTensorIntFill);
NO_GRADIENT(GivenTensorInt64Fill);
NO_GRADIENT(GivenTensorDoubleFill);
NO_GRADIENT(GivenTensorBoolFill);

#define HALFCAF_GIVEN_SCHEMA(type, dtype, doc)                                                 \
  OPERATOR_SCHEMA(type)                                                                        \
      .NumInputs(0, 1)                                                                         \
      .NumOutputs(1)                                                                           \
      .AllowInplace({{0, 0}})                                                                  \
      .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) { \
        return std::vector<TensorShape>{TensorShape{FillOutputDims(def, in), dtype}};          \
      })                                                                                       \
      .SetDoc(doc)                                                                             \
      .Arg("values", "the elements, row-major; their count must equal the shape's size")      \
      .Arg("shape", "ints: output dims")                                                       \
      .Output(0, "output", "the tensor")

HALFCAF_GIVEN_SCHEMA(GivenTensorFill, DataType::FLOAT,
                     "A tensor holding exactly `values` (floats). `dtype` may select DOUBLE, "
                     "FLOAT16 or BFLOAT16 (values rounded to nearest even), or INT32/INT64/BOOL "
                     "(values from ints).")
    .Arg("dtype", "element type (enum value or name), default FLOAT");
HALFCAF_GIVEN_SCHEMA(GivenTensorIntFill, DataType::INT32, "An int32 tensor holding `values` (ints).");
HALFCAF_GIVEN_SCHEMA(GivenTensorInt64Fill, DataType::INT64,
                     "An int64 tensor holding `values` (ints).");
HALFCAF_GIVEN_SCHEMA(GivenTensorDoubleFill, DataType::DOUBLE,
                     "A double tensor holding `values` (floats).");
HALFCAF_GIVEN_SCHEMA(GivenTensorBoolFill, DataType::BOOL, "A bool tensor holding `values` (ints).");
#undef HALFCAF_GIVEN_SCHEMA

}  // namespace halfcaf
