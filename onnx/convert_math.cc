// ONNX element-wise nodes: activations, unary math, binary arithmetic with NumPy broadcasting,
// n-ary Sum / Mean / Max / Min, Clip, Cast, CastLike, Identity, Dropout (inference).
#include <algorithm>
#include <cmath>

#include "core/argument.h"
#include "core/operator.h"
#include "core/strings.h"
#include "onnx/convert_util.h"

namespace halfcaf {
namespace onnx_import {
namespace {

// One input, one output, same shape: ONNX type -> halfcaf type (with fixed arguments).
void Unary(ConvertContext& c, const std::string& type, const std::vector<Argument>& args = {}) {
  RequireOperator(c, type);
  c.RequireFloat(0);
  c.Emit(c.Op(type, {c.Input(0)}, {c.Output(0)}, args));
}

}  // namespace

HALFCAF_ONNX_CONVERTER(Relu) {
  c.OnlyAttributes({});
  Unary(c, "Relu");
}
HALFCAF_ONNX_CONVERTER(Sigmoid) {
  c.OnlyAttributes({});
  Unary(c, "Sigmoid");
}
HALFCAF_ONNX_CONVERTER(Tanh) {
  c.OnlyAttributes({});
  Unary(c, "Tanh");
}
HALFCAF_ONNX_CONVERTER(Neg) {
  c.OnlyAttributes({});
  Unary(c, "Negative");
}
HALFCAF_ONNX_CONVERTER(Exp) {
  c.OnlyAttributes({});
  Unary(c, "Exp");
}
HALFCAF_ONNX_CONVERTER(Log) {
  c.OnlyAttributes({});
  Unary(c, "Log");
}
HALFCAF_ONNX_CONVERTER(Sqrt) {
  c.OnlyAttributes({});
  Unary(c, "Sqrt");
}
HALFCAF_ONNX_CONVERTER(Abs) {
  c.OnlyAttributes({});
  Unary(c, "Abs");
}
HALFCAF_ONNX_CONVERTER(Reciprocal) {
  c.OnlyAttributes({});
  Unary(c, "Reciprocal");
}
HALFCAF_ONNX_CONVERTER(LeakyRelu) {
  c.OnlyAttributes({"alpha"});
  Unary(c, "LeakyRelu", {MakeArgument("alpha", c.Float("alpha", 0.01f))});
}
HALFCAF_ONNX_CONVERTER(Elu) {
  c.OnlyAttributes({"alpha"});
  Unary(c, "Elu", {MakeArgument("alpha", c.Float("alpha", 1.f))});
}

HALFCAF_ONNX_CONVERTER(HardSigmoid) {
  c.OnlyAttributes({"alpha", "beta"});
  Unary(c, "HardSigmoid",
        {MakeArgument("alpha", c.Float("alpha", 0.2f)), MakeArgument("beta", c.Float("beta", 0.5f))});
}
HALFCAF_ONNX_CONVERTER(Floor) {
  c.OnlyAttributes({});
  Unary(c, "Floor");
}
HALFCAF_ONNX_CONVERTER(Ceil) {
  c.OnlyAttributes({});
  Unary(c, "Ceil");
}

// Emits type(x, y) -> out with NumPy broadcasting (defined below).
static void EmitBroadcastBinary(ConvertContext& c, const std::string& type, const std::string& x,
                                const std::string& y, const std::string& out,
                                const TensorShape* a, const TensorShape* b);

// PRelu with one slope, or one per channel (dim 1) in any shape that broadcasts that way
// ((C), (C, 1, 1), ...), is Caffe2's PRelu with a 1-D slope; so is a 1-D slope of C elements in
// opsets 1-6, where PRelu's slope was per channel rather than broadcast. Other slopes that
// broadcast to X are lowered exactly to ONNX's formula max(x, 0) + min(x, 0) * slope as
// Relu(x) - Relu(-x) * slope.
HALFCAF_ONNX_CONVERTER(PRelu) {
  c.OnlyAttributes({});
  RequireOperator(c, "PRelu");
  c.RequireFloat(0);
  c.RequireFloat(1);
  const std::vector<int64_t>& x = c.Dims(0, "the slope's broadcast depends on it");
  const TensorShape* s = c.Shape(1);
  if (!s) c.Unsupported("the slope's shape is not known at import");
  const int64_t n = s->numel();
  bool per_channel = x.size() >= 2 && n == x[1] && n > 1;
  if (per_channel && !(c.opset() < 7 && s->dims.size() == 1)) {
    // The slope's non-1 dim must line up with dim 1 of X under NumPy's trailing alignment.
    const size_t offset = x.size() - s->dims.size();
    for (size_t k = 0; k < s->dims.size(); ++k) {
      if (s->dims[k] != 1 && offset + k != 1) per_channel = false;
    }
  }
  if (n == 1 || per_channel) {
    std::string slope = c.Input(1);
    if (s->dims.size() != 1) {
      slope = c.Temp("slope");
      c.Emit(c.Op("Reshape", {c.Input(1)}, {slope, c.Temp("old_shape")},
                  {MakeArgument("shape", std::vector<int64_t>{n})}));
    }
    c.Emit(c.Op("PRelu", {c.Input(0), slope}, {c.Output(0)}, {MakeArgument("order", "NCHW")}));
    return;
  }
  std::vector<int64_t> result;
  if (c.opset() < 7 || !BroadcastShape(x, s->dims, &result) || result != x) {
    c.Unsupported("a slope of shape " + DimsString(s->dims) + " for input " + DimsString(x) +
                  (c.opset() < 7 ? " (only one slope, or one per channel)"
                                 : " (the slope must broadcast to the input's shape)"));
  }
  RequireOperator(c, "Relu");
  RequireOperator(c, "Negative");
  const std::string positive = c.Temp("positive"), negated = c.Temp("negated");
  const std::string negative_part = c.Temp("negative_part"), scaled = c.Temp("scaled");
  c.Emit(c.Op("Relu", {c.Input(0)}, {positive}));
  c.Emit(c.Op("Negative", {c.Input(0)}, {negated}));
  c.Emit(c.Op("Relu", {negated}, {negative_part}));
  EmitBroadcastBinary(c, "Mul", negative_part, c.Input(1), scaled, c.Shape(0), s);
  c.Emit(c.Op("Sub", {positive, scaled}, {c.Output(0)}));
}

// Add / Sub / Mul / Div with NumPy (multidirectional) broadcasting. Where Caffe2's one-directional
// legacy broadcast can express it (B repeated over A, B's dims without leading and trailing ones
// matching a run of A's dims) the op gets broadcast=1, as Caffe2's exporters expect; a smaller A
// is swapped with B for Add and Mul, and for Sub via -(B - A). Other shapes, and shapes unknown
// at import, use the ops' own NumPy broadcasting (no broadcast argument).
static void EmitBroadcastBinary(ConvertContext& c, const std::string& type, const std::string& x,
                                const std::string& y, const std::string& out,
                                const TensorShape* a, const TensorShape* b) {
  if (!a || !b) {
    // A 0-d B is the legacy scalar whatever A's shape; other shapes broadcast at run time.
    const bool scalar_b = b && b->dims.empty();
    c.Emit(c.Op(type, {x, y}, {out},
                scalar_b ? std::vector<Argument>{MakeArgument("broadcast", 1)}
                         : std::vector<Argument>{}));
    return;
  }
  if (a->dims == b->dims) {
    c.Emit(c.Op(type, {x, y}, {out}));
    return;
  }
  std::vector<int64_t> result;
  if (!BroadcastShape(a->dims, b->dims, &result)) {
    c.Unsupported("inputs of shapes " + DimsString(a->dims) + " and " + DimsString(b->dims) +
                  " do not broadcast");
  }
  const std::vector<Argument> bcast{MakeArgument("broadcast", 1)};
  if (result == a->dims && CaffeBroadcastable(a->dims, b->dims)) {
    c.Emit(c.Op(type, {x, y}, {out}, bcast));
  } else if (result == b->dims && CaffeBroadcastable(b->dims, a->dims) &&
             (type == "Add" || type == "Mul")) {
    c.Emit(c.Op(type, {y, x}, {out}, bcast));
  } else if (result == b->dims && CaffeBroadcastable(b->dims, a->dims) && type == "Sub") {
    const std::string diff = c.Temp("reversed_difference");
    c.Emit(c.Op("Sub", {y, x}, {diff}, bcast));
    c.Emit(c.Op("Negative", {diff}, {out}));
  } else {
    c.Emit(c.Op(type, {x, y}, {out}));
  }
}

static void Binary(ConvertContext& c, const std::string& type) {
  RequireOperator(c, type);
  for (int i : {0, 1}) {
    const DataType t = c.DType(i);
    if (t == DataType::INT32 || t == DataType::INT64) continue;  // halfcaf's integer kernels
    c.RequireFloat(i);
  }
  if (c.opset() < 7) {
    // Opsets 1-6: Caffe2's own legacy broadcast (broadcast=1, axis), passed through.
    c.OnlyAttributes({"broadcast", "axis", "consumed_inputs"});
    std::vector<Argument> args;
    if (c.Int("broadcast", 0) != 0) {
      args.push_back(MakeArgument("broadcast", 1));
      if (c.Has("axis")) args.push_back(MakeArgument("axis", c.Int("axis", -1)));
    }
    c.Emit(c.Op(type, {c.Input(0), c.Input(1)}, {c.Output(0)}, args));
    return;
  }
  c.OnlyAttributes({});
  EmitBroadcastBinary(c, type, c.Input(0), c.Input(1), c.Output(0), c.Shape(0), c.Shape(1));
}

HALFCAF_ONNX_CONVERTER(Add) { Binary(c, "Add"); }
HALFCAF_ONNX_CONVERTER(Sub) { Binary(c, "Sub"); }
HALFCAF_ONNX_CONVERTER(Mul) { Binary(c, "Mul"); }
HALFCAF_ONNX_CONVERTER(Div) { Binary(c, "Div"); }

// Pow: a constant scalar exponent is Caffe2's `exponent` argument; a run-time exponent is Pow's
// two-input form, which takes one shape: inputs of other (broadcasting) shapes are first
// multiplied by ones of the result's shape (x * 1 is x exactly, NaN and -0 included).
HALFCAF_ONNX_CONVERTER(Pow) {
  c.OnlyAttributes({});
  RequireOperator(c, "Pow");
  c.RequireFloat(0);
  if (const Tensor* e = c.Const(1)) {
    if (e->numel() == 1) {
      const float exponent = c.ConstFloats(1, "the exponent")[0];
      c.Emit(c.Op("Pow", {c.Input(0)}, {c.Output(0)}, {MakeArgument("exponent", exponent)}));
      return;
    }
  }
  c.RequireFloat(1);
  const TensorShape* a = c.Shape(0);
  const TensorShape* b = c.Shape(1);
  if (!a || !b) c.Unsupported("the shapes of a run-time exponent and its base must be known");
  std::vector<int64_t> result;
  if (!BroadcastShape(a->dims, b->dims, &result)) {
    c.Unsupported("a base of shape " + DimsString(a->dims) + " and an exponent of shape " +
                  DimsString(b->dims) + " do not broadcast");
  }
  std::string inputs[2] = {c.Input(0), c.Input(1)};
  const TensorShape* shapes[2] = {a, b};
  std::string ones;
  for (int i : {0, 1}) {
    if (shapes[i]->dims == result) continue;
    if (ones.empty()) {
      Tensor value(result, DataType::FLOAT);
      std::fill_n(value.mutable_data<float>(), value.numel(), 1.f);
      ones = c.Temp("ones");
      c.SetConst(ones, value);
    }
    const std::string expanded = c.Temp(i == 0 ? "base" : "exponent");
    c.Emit(c.Op("Mul", {inputs[i], ones}, {expanded}));
    inputs[i] = expanded;
  }
  c.Emit(c.Op("Pow", {inputs[0], inputs[1]}, {c.Output(0)}));
}

// Sum, Mean, Max, Min of n inputs (of one shape; opset 8+ broadcasting between them is refused).
static void Nary(ConvertContext& c, const std::string& type) {
  c.OnlyAttributes({});
  const std::string op_type = type == "Mean" ? "Sum" : type;
  RequireOperator(c, op_type);
  std::vector<std::string> inputs;
  const TensorShape* first = c.Shape(0);
  for (int i = 0; i < c.NumInputs(); ++i) {
    c.RequireFloat(i);
    const TensorShape* s = c.Shape(i);
    if (c.NumInputs() > 1 && (!s || !first || s->dims != first->dims)) {
      c.Unsupported("inputs of different (or unknown) shapes; halfcaf's " + op_type +
                    " takes inputs of one shape");
    }
    inputs.push_back(c.Input(i));
  }
  if (inputs.size() == 1) {
    c.Emit(c.Op("Copy", inputs, {c.Output(0)}));
    return;
  }
  if (type != "Mean") {
    c.Emit(c.Op(type, inputs, {c.Output(0)}));
    return;
  }
  const std::string sum = c.Temp("sum");
  c.Emit(c.Op("Sum", inputs, {sum}));
  c.Emit(c.Op("Scale", {sum}, {c.Output(0)},
              {MakeArgument("scale", 1.f / static_cast<float>(inputs.size()))}));
}

HALFCAF_ONNX_CONVERTER(Sum) { Nary(c, "Sum"); }
HALFCAF_ONNX_CONVERTER(Mean) { Nary(c, "Mean"); }
HALFCAF_ONNX_CONVERTER(Max) { Nary(c, "Max"); }
HALFCAF_ONNX_CONVERTER(Min) { Nary(c, "Min"); }

HALFCAF_ONNX_CONVERTER(Clip) {
  c.RequireFloat(0);
  float lo = -INFINITY, hi = INFINITY;
  if (c.opset() < 11) {
    c.OnlyAttributes({"min", "max"});
    lo = c.Float("min", lo);
    hi = c.Float("max", hi);
  } else {
    c.OnlyAttributes({});
    if (c.HasInput(1)) lo = c.ConstFloats(1, "the min input").at(0);
    if (c.HasInput(2)) hi = c.ConstFloats(2, "the max input").at(0);
  }
  c.Emit(c.Op("Clip", {c.Input(0)}, {c.Output(0)},
              {MakeArgument("min", lo), MakeArgument("max", hi)}));
}

HALFCAF_ONNX_CONVERTER(Cast) {
  c.OnlyAttributes({"to", "saturate"});
  const int32_t to = static_cast<int32_t>(c.Int("to", 0));
  const DataType t = FromOnnxType(to);
  if (t == DataType::UNDEFINED) {
    c.Unsupported(std::string("casting to ") + OnnxTypeName(to) + " is not supported");
  }
  c.Emit(c.Op("Cast", {c.Input(0)}, {c.Output(0)},
              {MakeArgument("to", static_cast<int64_t>(t))}));
}

// CastLike (opset 15): Cast to the type of its second input, which must be known at import.
HALFCAF_ONNX_CONVERTER(CastLike) {
  c.OnlyAttributes({"saturate"});
  const DataType t = c.DType(1);
  if (t == DataType::UNDEFINED) {
    c.Unsupported("the type of the target_type input '" + c.Input(1) + "' is unknown at import");
  }
  c.Emit(c.Op("Cast", {c.Input(0)}, {c.Output(0)},
              {MakeArgument("to", static_cast<int64_t>(t))}));
}

HALFCAF_ONNX_CONVERTER(Identity) {
  c.OnlyAttributes({});
  c.Emit(c.Op("Copy", {c.Input(0)}, {c.Output(0)}));
}

// Dropout passes its input through, except in a model exported for training (training_mode
// input true, opset 12+: what PyTorch's TrainingMode.TRAINING export writes), where it is
// Caffe2's Dropout in training mode with the node's ratio: random, as ONNX defines it (its mask
// output is the kept elements, bool, as ONNX's; a seed attribute seeds the op's generator).
HALFCAF_ONNX_CONVERTER(Dropout) {
  c.OnlyAttributes({"ratio", "seed", "is_test", "consumed_inputs"});
  bool training = false;
  if (c.HasInput(2)) {
    const std::vector<int64_t> mode = c.ConstInts(2, "the training_mode input");
    training = !mode.empty() && mode[0] != 0;
  }
  if (!training) {
    if (c.HasOutput(1)) c.Unsupported("the mask output is supported in training mode only");
    c.Emit(c.Op("Copy", {c.Input(0)}, {c.Output(0)}));
    return;
  }
  float ratio = c.Float("ratio", 0.5f);
  if (c.HasInput(1)) {
    const std::vector<float> r = c.ConstFloats(1, "the ratio input");
    if (r.size() != 1) c.Unsupported("the ratio input must be one value");
    ratio = r[0];
  }
  if (!(ratio >= 0.f && ratio < 1.f)) c.Unsupported("the ratio must be in [0, 1)");
  OperatorDef op = c.Op("Dropout", {c.Input(0)},
                        {c.Output(0), c.HasOutput(1) ? c.Output(1) : c.Temp("mask")},
                        {MakeArgument("ratio", ratio), MakeArgument("is_test", 0)});
  // The node's seed seeds the op's generator (the same masks each run; not numpy's masks).
  if (c.Has("seed")) op.mutable_device_option()->set_random_seed(c.Int("seed", 0));
  c.Emit(op);
}

}  // namespace onnx_import
}  // namespace halfcaf
