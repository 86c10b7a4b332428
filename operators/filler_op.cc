#include "operators/filler_op.h"

#include <cmath>
#include <random>

#include "core/float_io.h"
#include "core/gradient.h"

namespace halfcaf {

FillerOp::FillerOp(const OperatorDef& def, Workspace* ws)
    : Operator(def, ws),
      shape_(GetRepeatedArgument<int64_t>("shape")),
      extra_shape_(GetRepeatedArgument<int64_t>("extra_shape")),
      input_as_shape_(GetSingleArgument<bool>("input_as_shape", false)) {
  const Argument* shape_arg = args_.Find("shape");
  HALFCAF_ENFORCE(!shape_arg || !shape_arg->has_i(),
                  "`shape` must be a list of ints (ints), not a single int");
  if (InputSize() == 0) {
    HALFCAF_ENFORCE(extra_shape_.empty(), "`extra_shape` is only allowed with an input");
    HALFCAF_ENFORCE(!input_as_shape_, "input_as_shape=1 needs an input holding the shape");
  } else {
    HALFCAF_ENFORCE(shape_.empty(), "give either `shape` or an input, not both");
  }
  for (int64_t d : shape_) HALFCAF_ENFORCE(d >= 0, "negative dimension in shape ", DimsString(shape_));
}

void FillerOp::RunOnDevice() {
  std::vector<int64_t> dims;
  if (InputSize() == 0) {
    dims = shape_;
  } else if (input_as_shape_) {
    const Tensor& s = CPUInput(0);
    HALFCAF_ENFORCE(s.ndim() == 1 && (s.dtype() == DataType::INT64 || s.dtype() == DataType::INT32),
                    "with input_as_shape=1 the input must be a 1-D int64 tensor, got ",
                    s.DebugString());
    for (int64_t i = 0; i < s.numel(); ++i) {
      dims.push_back(s.dtype() == DataType::INT64 ? s.data<int64_t>()[i] : s.data<int32_t>()[i]);
    }
  } else {
    dims = InputBlob(0).GetTensor().dims();
  }
  dims.insert(dims.end(), extra_shape_.begin(), extra_shape_.end());
  Tensor* out = Output(0, dims);
  Fill(out);
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

// Writes float values produced by gen(i) into a float or float16 tensor.
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

class ConstantFillOp final : public FillerOp {
 public:
  ConstantFillOp(const OperatorDef& def, Workspace* ws) : FillerOp(def, ws) {
    DataType inferred = DataType::FLOAT;
    if (HasSingleArgumentOfType<int64_t>("value")) inferred = DataType::INT64;
    dtype_ = FillDType(args_, inferred);
    const Argument* v = args_.Find("value");
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

 protected:
  void Fill(Tensor* out) override {
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

 private:
  double value_ = 0.0;
};

class FloatFillerOp : public FillerOp {
 public:
  FloatFillerOp(const OperatorDef& def, Workspace* ws) : FillerOp(def, ws) {
    dtype_ = FillDType(args_, DataType::FLOAT);
    HALFCAF_ENFORCE(IsFloatType(dtype_), type(), " fills float or float16, not ",
                    DataTypeName(dtype_));
  }
};

class UniformFillOp final : public FloatFillerOp {
 public:
  UniformFillOp(const OperatorDef& def, Workspace* ws)
      : FloatFillerOp(def, ws),
        min_(GetSingleArgument<float>("min", 0.f)),
        max_(GetSingleArgument<float>("max", 1.f)) {
    HALFCAF_ENFORCE(min_ < max_, "UniformFill needs min < max, got min ", min_, " max ", max_);
  }

 protected:
  void Fill(Tensor* out) override {
    std::uniform_real_distribution<float> u(min_, max_);
    FillFloat(out, dtype_, [&](int64_t) { return u(context_.RandGenerator()); });
  }

 private:
  float min_, max_;
};

class UniformIntFillOp final : public FillerOp {
 public:
  UniformIntFillOp(const OperatorDef& def, Workspace* ws)
      : FillerOp(def, ws),
        min_(GetSingleArgument<int>("min", 0)),
        max_(GetSingleArgument<int>("max", 1)) {
    HALFCAF_ENFORCE(min_ <= max_, "UniformIntFill needs min <= max, got ", min_, " > ", max_);
    dtype_ = DataType::INT32;
  }

 protected:
  void Fill(Tensor* out) override {
    std::uniform_int_distribution<int32_t> u(min_, max_);
    int32_t* d = out->mutable_data<int32_t>();
    for (int64_t i = 0; i < out->numel(); ++i) d[i] = u(context_.RandGenerator());
  }

 private:
  int min_, max_;
};

class GaussianFillOp final : public FloatFillerOp {
 public:
  GaussianFillOp(const OperatorDef& def, Workspace* ws)
      : FloatFillerOp(def, ws),
        mean_(GetSingleArgument<float>("mean", 0.f)),
        std_(GetSingleArgument<float>("std", 1.f)) {
    HALFCAF_ENFORCE(std_ >= 0.f, "GaussianFill needs std >= 0, got ", std_);
  }

 protected:
  void Fill(Tensor* out) override {
    std::normal_distribution<float> n(mean_, std_ > 0 ? std_ : 1.f);
    FillFloat(out, dtype_, [&](int64_t) {
      return std_ > 0 ? n(context_.RandGenerator()) : mean_;
    });
  }

 private:
  float mean_, std_;
};

// XavierFill: uniform in +-sqrt(3 / fan_in), fan_in = numel / dims[0].
class XavierFillOp final : public FloatFillerOp {
 public:
  using FloatFillerOp::FloatFillerOp;

 protected:
  void Fill(Tensor* out) override {
    HALFCAF_ENFORCE(out->ndim() >= 1 && out->dim(0) > 0, "XavierFill needs a non-empty shape, got ",
                    DimsString(out->dims()));
    const float fan_in = static_cast<float>(out->numel() / out->dim(0));
    const float scale = std::sqrt(3.f / std::max(fan_in, 1.f));
    std::uniform_real_distribution<float> u(-scale, scale);
    FillFloat(out, dtype_, [&](int64_t) { return u(context_.RandGenerator()); });
  }
};

// MSRAFill: normal(0, sqrt(2 / fan_out)), fan_out = numel / dims[1].
class MSRAFillOp final : public FloatFillerOp {
 public:
  using FloatFillerOp::FloatFillerOp;

 protected:
  void Fill(Tensor* out) override {
    HALFCAF_ENFORCE(out->ndim() >= 2 && out->dim(1) > 0,
                    "MSRAFill needs at least 2 dims with dims[1] > 0, got ", DimsString(out->dims()));
    const float fan_out = static_cast<float>(out->numel() / out->dim(1));
    std::normal_distribution<float> n(0.f, std::sqrt(2.f / std::max(fan_out, 1.f)));
    FillFloat(out, dtype_, [&](int64_t) { return n(context_.RandGenerator()); });
  }
};

std::vector<TensorShape> FillShapes(const OperatorDef& def, const std::vector<TensorShape>& in,
                                    DataType dtype) {
  return {TensorShape{FillOutputDims(def, in), dtype}};
}

}  // namespace

REGISTER_CPU_OPERATOR(ConstantFill, ConstantFillOp);
REGISTER_CPU_OPERATOR(UniformFill, UniformFillOp);
REGISTER_CPU_OPERATOR(UniformIntFill, UniformIntFillOp);
REGISTER_CPU_OPERATOR(GaussianFill, GaussianFillOp);
REGISTER_CPU_OPERATOR(XavierFill, XavierFillOp);
REGISTER_CPU_OPERATOR(MSRAFill, MSRAFillOp);
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
                    "type: float, float16, double, int8/16/32/64, uint8/16, bool.")
    .Arg("value", "the constant")
    .Arg("dtype", "element type");
HALFCAF_FILL_SCHEMA(UniformFill, DataType::FLOAT,
                    "Fills with uniform random values in [min, max) (float or float16 via dtype).")
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
