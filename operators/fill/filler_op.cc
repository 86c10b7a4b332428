#include "operators/fill/filler_op.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/checked_math.h"
#include "core/float_io.h"
#include "core/gradient.h"

namespace halfcaf {

FillShapeArgs ParseFillShapeArgs(const OperatorBase& op) {
  FillShapeArgs a;
  a.shape = op.GetRepeatedArgument<int64_t>("shape");
  a.extra_shape = op.GetRepeatedArgument<int64_t>("extra_shape");
  a.input_as_shape = op.GetSingleArgument<bool>("input_as_shape", false);
  const Argument* shape_arg = ArgumentHelper(op.def()).Find("shape");
  HALFCAF_ENFORCE(!shape_arg || !shape_arg->has_i(),
                  "`shape` must be a list of ints (ints), not a single int");
  if (op.InputSize() == 0) {
    HALFCAF_ENFORCE(a.extra_shape.empty(), "`extra_shape` is only allowed with an input");
    HALFCAF_ENFORCE(!a.input_as_shape, "input_as_shape=1 needs an input holding the shape");
  } else {
    HALFCAF_ENFORCE(a.shape.empty(), "give either `shape` or an input, not both");
  }
  CheckedNumel(a.shape, "`shape`");
  CheckedNumel(a.extra_shape, "`extra_shape`");
  return a;
}

std::vector<int64_t> FillRunDims(const OperatorBase& op, const FillShapeArgs& args) {
  std::vector<int64_t> dims;
  if (op.InputSize() == 0) {
    dims = args.shape;
  } else if (args.input_as_shape) {
    const Tensor& s = op.CPUInput(0);
    HALFCAF_ENFORCE(s.ndim() == 1 && (s.dtype() == DataType::INT64 || s.dtype() == DataType::INT32),
                    "with input_as_shape=1 the input must be a 1-D int64 tensor, got ",
                    s.DebugString());
    for (int64_t i = 0; i < s.numel(); ++i) {
      dims.push_back(s.dtype() == DataType::INT64 ? s.data<int64_t>()[i] : s.data<int32_t>()[i]);
    }
  } else {
    dims = op.InputBlob(0).GetTensor().dims();
  }
  dims.insert(dims.end(), args.extra_shape.begin(), args.extra_shape.end());
  return dims;
}

FillerOp::FillerOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      shape_args_(ParseFillShapeArgs(*this)),
      spec_(MakeFillSpec(def.type(), args_)) {}

void FillerOp::RunOnDevice() {
  Tensor* out = Output(0, FillRunDims(*this, shape_args_));
  spec_->Fill(out, &context_.RandGenerator());
}

std::vector<int64_t> FillOutputDims(const OperatorDef& def, const std::vector<TensorShape>& in) {
  ArgumentHelper args(def);
  std::vector<int64_t> dims;
  if (in.empty()) {
    dims = args.GetRepeatedArgument<int64_t>("shape");
  } else if (!args.GetSingleArgument<bool>("input_as_shape", false)) {
    dims = in[0].dims;
  } else {
    HALFCAF_THROW("shape depends on the input's values");
  }
  auto extra = args.GetRepeatedArgument<int64_t>("extra_shape");
  dims.insert(dims.end(), extra.begin(), extra.end());
  return dims;
}

namespace {

// Writes float values produced by gen(i) into a float, float16 or bfloat16 tensor.
template <typename Gen>
void FillFloat(Tensor* out, DataType dtype, Gen gen) {
  std::vector<float> scratch;
  FloatWriter w(out, dtype, &scratch);
  for (int64_t i = 0; i < out->numel(); ++i) w.data()[i] = gen(i);
  w.Commit();
}

DataType FillDType(const ArgumentHelper& args, DataType dflt) {
  if (!args.HasArgument("dtype")) return dflt;
  if (args.HasSingleArgumentOfType<std::string>("dtype")) {
    return DataTypeFromName(args.GetSingleArgument<std::string>("dtype", ""));
  }
  return DataTypeFromInt(args.GetSingleArgument<int64_t>("dtype", 1));
}

class ConstantFillSpec final : public FillSpec {
 public:
  explicit ConstantFillSpec(const ArgumentHelper& args) {
    DataType inferred = DataType::FLOAT;
    if (args.HasSingleArgumentOfType<int64_t>("value")) inferred = DataType::INT64;
    dtype_ = FillDType(args, inferred);
    const Argument* v = args.Find("value");
    if (v && v->has_f()) {
      value_ = v->f();
    } else if (v && v->has_i()) {
      value_ = static_cast<double>(v->i());
    } else {
      HALFCAF_ENFORCE(!v, "`value` must be a number (f or i)");
    }
    HALFCAF_ENFORCE(dtype_ != DataType::STRING && dtype_ != DataType::UNDEFINED,
                    "ConstantFill cannot fill type ", DataTypeName(dtype_));
  }

  void Fill(Tensor* out, std::mt19937*) const override {
    if (IsFloatType(dtype_)) {
      FillFloat(out, dtype_, [this](int64_t) { return static_cast<float>(value_); });
      return;
    }
    DispatchAllTypes(dtype_, [&](auto tag) {
      using T = decltype(tag);
      T* d = out->mutable_data<T>();
      std::fill(d, d + out->numel(), static_cast<T>(value_));
    });
  }

  bool Constant(double* value) const override {
    *value = value_;
    return true;
  }

 private:
  double value_ = 0.0;
};

DataType FloatFillDType(const std::string& type, const ArgumentHelper& args) {
  const DataType dtype = FillDType(args, DataType::FLOAT);
  HALFCAF_ENFORCE(IsFloatType(dtype), type, " fills float, float16 or bfloat16, not ",
                  DataTypeName(dtype));
  return dtype;
}

class UniformFillSpec final : public FillSpec {
 public:
  UniformFillSpec(const std::string& type, const ArgumentHelper& args)
      : min_(args.GetSingleArgument<float>("min", 0.f)),
        max_(args.GetSingleArgument<float>("max", 1.f)) {
    dtype_ = FloatFillDType(type, args);
    HALFCAF_ENFORCE(min_ < max_, "UniformFill needs min < max, got min ", min_, " max ", max_);
  }

  void Fill(Tensor* out, std::mt19937* rng) const override {
    std::uniform_real_distribution<float> u(min_, max_);
    FillFloat(out, dtype_, [&](int64_t) { return u(*rng); });
  }

 private:
  float min_, max_;
};

class UniformIntFillSpec final : public FillSpec {
 public:
  explicit UniformIntFillSpec(const ArgumentHelper& args)
      : min_(args.GetSingleArgument<int>("min", 0)), max_(args.GetSingleArgument<int>("max", 1)) {
    HALFCAF_ENFORCE(min_ <= max_, "UniformIntFill needs min <= max, got ", min_, " > ", max_);
    dtype_ = DataType::INT32;
  }

  void Fill(Tensor* out, std::mt19937* rng) const override {
    std::uniform_int_distribution<int32_t> u(min_, max_);
    int32_t* d = out->mutable_data<int32_t>();
    for (int64_t i = 0; i < out->numel(); ++i) d[i] = u(*rng);
  }

 private:
  int min_, max_;
};

class GaussianFillSpec final : public FillSpec {
 public:
  GaussianFillSpec(const std::string& type, const ArgumentHelper& args)
      : mean_(args.GetSingleArgument<float>("mean", 0.f)),
        std_(args.GetSingleArgument<float>("std", 1.f)) {
    dtype_ = FloatFillDType(type, args);
    HALFCAF_ENFORCE(std_ >= 0.f, "GaussianFill needs std >= 0, got ", std_);
  }

  void Fill(Tensor* out, std::mt19937* rng) const override {
    std::normal_distribution<float> n(mean_, std_ > 0 ? std_ : 1.f);
    FillFloat(out, dtype_, [&](int64_t) { return std_ > 0 ? n(*rng) : mean_; });
  }

 private:
  float mean_, std_;
};

// XavierFill: uniform in +-sqrt(3 / fan_in), fan_in = numel / dims[0].
class XavierFillSpec final : public FillSpec {
 public:
  XavierFillSpec(const std::string& type, const ArgumentHelper& args) {
    dtype_ = FloatFillDType(type, args);
  }

  void Fill(Tensor* out, std::mt19937* rng) const override {
    HALFCAF_ENFORCE(out->ndim() >= 1 && out->dim(0) > 0, "XavierFill needs a non-empty shape, got ",
                    DimsString(out->dims()));
    const float fan_in = static_cast<float>(out->numel() / out->dim(0));
    const float scale = std::sqrt(3.f / std::max(fan_in, 1.f));
    std::uniform_real_distribution<float> u(-scale, scale);
    FillFloat(out, dtype_, [&](int64_t) { return u(*rng); });
  }
};

// MSRAFill: normal(0, sqrt(2 / fan_out)), fan_out = numel / dims[1].
class MSRAFillSpec final : public FillSpec {
 public:
  MSRAFillSpec(const std::string& type, const ArgumentHelper& args) {
    dtype_ = FloatFillDType(type, args);
  }

  void Fill(Tensor* out, std::mt19937* rng) const override {
    HALFCAF_ENFORCE(out->ndim() >= 2 && out->dim(1) > 0,
                    "MSRAFill needs at least 2 dims with dims[1] > 0, got ", DimsString(out->dims()));
    const float fan_out = static_cast<float>(out->numel() / out->dim(1));
    std::normal_distribution<float> n(0.f, std::sqrt(2.f / std::max(fan_out, 1.f)));
    FillFloat(out, dtype_, [&](int64_t) { return n(*rng); });
  }
};

}  // namespace

std::unique_ptr<FillSpec> MakeFillSpec(const std::string& type, const ArgumentHelper& args) {
  if (type == "ConstantFill") return std::make_unique<ConstantFillSpec>(args);
  if (type == "UniformFill") return std::make_unique<UniformFillSpec>(type, args);
  if (type == "UniformIntFill") return std::make_unique<UniformIntFillSpec>(args);
  if (type == "GaussianFill") return std::make_unique<GaussianFillSpec>(type, args);
  if (type == "XavierFill") return std::make_unique<XavierFillSpec>(type, args);
  if (type == "MSRAFill") return std::make_unique<MSRAFillSpec>(type, args);
  if (type.rfind("GivenTensor", 0) == 0) return MakeGivenTensorFillSpec(type, args);
  HALFCAF_THROW("no fill spec for operator type '", type, "'");
}

namespace {

std::vector<TensorShape> FillShapes(const OperatorDef& def, const std::vector<TensorShape>& in,
                                    DataType dtype) {
  return {TensorShape{FillOutputDims(def, in), dtype}};
}

}  // namespace

REGISTER_CPU_OPERATOR(ConstantFill, FillerOp);
REGISTER_CPU_OPERATOR(UniformFill, FillerOp);
REGISTER_CPU_OPERATOR(UniformIntFill, FillerOp);
REGISTER_CPU_OPERATOR(GaussianFill, FillerOp);
REGISTER_CPU_OPERATOR(XavierFill, FillerOp);
REGISTER_CPU_OPERATOR(MSRAFill, FillerOp);
NO_GRADIENT(ConstantFill);
NO_GRADIENT(UniformFill);
NO_GRADIENT(UniformIntFill);
NO_GRADIENT(GaussianFill);
NO_GRADIENT(XavierFill);
NO_GRADIENT(MSRAFill);

#define HALFCAF_FILL_SCHEMA(type, dtype, doc)                                                  \
  OPERATOR_SCHEMA(type)                                                                        \
      .NumInputs(0, 1)                                                                         \
      .NumOutputs(1)                                                                           \
      .AllowInplace({{0, 0}})                                                                  \
      .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) { \
        return FillShapes(def, in, dtype);                                                     \
      })                                                                                       \
      .SetDoc(doc)                                                                             \
      .Arg("shape", "ints: output dims when there is no input")                                \
      .Arg("extra_shape", "ints: appended to the input's dims (only with an input)")           \
      .Arg("input_as_shape", "int, default 0: the input is a 1-D int64 tensor of dims")        \
      .Input(0, "input", "optional: the output copies its shape")                              \
      .Output(0, "output", "the filled tensor")

HALFCAF_FILL_SCHEMA(ConstantFill, DataType::FLOAT,
                    "Fills with `value` (float in f or integer in i, default 0). `dtype` (enum "
                    "value or name; default FLOAT, or INT64 when value is given in i) selects the "
                    "type: float, float16, bfloat16, double, int8/16/32/64, uint8/16, bool.")
    .Arg("value", "the constant")
    .Arg("dtype", "element type");
HALFCAF_FILL_SCHEMA(UniformFill, DataType::FLOAT,
                    "Fills with uniform random values in [min, max) (float, float16 or bfloat16 "
                    "via dtype).")
    .Arg("min", "float, default 0")
    .Arg("max", "float, default 1; must exceed min");
HALFCAF_FILL_SCHEMA(UniformIntFill, DataType::INT32,
                    "Fills with uniform random int32 values in [min, max].")
    .Arg("min", "int, default 0")
    .Arg("max", "int, default 1");
HALFCAF_FILL_SCHEMA(GaussianFill, DataType::FLOAT,
                    "Fills with normal random values N(mean, std^2).")
    .Arg("mean", "float, default 0")
    .Arg("std", "float, default 1");
HALFCAF_FILL_SCHEMA(XavierFill, DataType::FLOAT,
                    "Fills with uniform values in +-sqrt(3 / fan_in), fan_in = numel / dims[0].");
HALFCAF_FILL_SCHEMA(MSRAFill, DataType::FLOAT,
                    "Fills with normal values N(0, 2 / fan_out), fan_out = numel / dims[1].");
#undef HALFCAF_FILL_SCHEMA

}  // namespace halfcaf
