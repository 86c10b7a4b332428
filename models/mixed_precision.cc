#include "models/mixed_precision.h"

#include <map>

#include "core/argument.h"
#include "core/enforce.h"
#include "models/op_types.h"

namespace halfcaf {

namespace {

enum class Precision { kUnknown, kFloat, kHalf };

// Ops whose input 0 is the data and whose other inputs are FP32 parameters or non-float blobs.
bool DataOnlyInFirstInput(const std::string& type) {
  return type == "SpatialBN" || type == "Reshape" || type == "ResizeLike" || type == "Dropout";
}

// Ops whose inputs 1, 2 are weights and bias: they read 16-bit copies of their parameters.
bool ReadsWeightCopies(const std::string& type) {
  return IsConvOrFCType(type) || type == "ConvTranspose";
}

bool IsFillType(const std::string& type) {
  return type.size() > 4 && type.compare(type.size() - 4, 4, "Fill") == 0;
}

bool WritesBlob(const OperatorDef& op, const std::string& blob) {
  for (const auto& o : op.output()) {
    if (o == blob) return true;
  }
  return false;
}

}  // namespace

std::string Fp16CopyName(const std::string& param) { return param + "_fp16"; }

std::string LowPrecisionCopyName(const std::string& param, DataType type) {
  HALFCAF_ENFORCE(type == DataType::FLOAT16 || type == DataType::BFLOAT16,
                  "mixed precision: the low-precision type must be float16 or bfloat16, got ",
                  DataTypeName(type));
  return type == DataType::FLOAT16 ? Fp16CopyName(param) : param + "_bf16";
}

std::string CastOpType(DataType from, DataType to) {
  if (from == DataType::FLOAT && to == DataType::FLOAT16) return "FloatToHalf";
  if (from == DataType::FLOAT16 && to == DataType::FLOAT) return "HalfToFloat";
  if (from == DataType::FLOAT && to == DataType::BFLOAT16) return "FloatToBFloat16";
  if (from == DataType::BFLOAT16 && to == DataType::FLOAT) return "BFloat16ToFloat";
  HALFCAF_THROW("no cast operator from ", DataTypeName(from), " to ", DataTypeName(to));
}

bool RunsInFloat32(const std::string& type) {
  static const std::set<std::string> kFloat32{
      "Softmax", "SoftmaxWithLoss", "LabelCrossEntropy", "AveragedLoss", "Accuracy",
      "SquaredL2Distance", "SigmoidCrossEntropyWithLogits", "WeightedSigmoidCrossEntropyWithLogits",
      "L1Distance", "SmoothL1Loss", "CrossEntropy", "MakeTwoClass", "Print", "Summarize"};
  return kFloat32.count(type) > 0;
}

MixedPrecisionResult ToMixedPrecision(const NetDef& forward,
                                      const std::set<std::string>& float16_inputs,
                                      const std::set<std::string>& params, DataType low_type) {
  const std::string low_suffix = LowPrecisionCopyName("", low_type);
  MixedPrecisionResult result;
  NetDef& out = result.net;
  out = forward;
  out.clear_op();

  std::map<std::string, Precision> prec;  // current precision of each float blob
  for (const auto& b : float16_inputs) prec[b] = Precision::kHalf;
  for (const auto& p : params) prec[p] = Precision::kFloat;
  // Converted copies of the current version of a blob: (blob, target) -> name.
  std::map<std::pair<std::string, Precision>, std::string> casts;
  std::set<std::string> copies;

  auto cast_to = [&](const std::string& blob, Precision target, const OperatorDef& user) {
    auto key = std::make_pair(blob, target);
    auto it = casts.find(key);
    if (it != casts.end()) return it->second;
    const bool to_half = target == Precision::kHalf;
    std::string name = blob + (to_half ? low_suffix : "_fp32");
    OperatorDef cast = MakeOperatorDef(to_half ? CastOpType(DataType::FLOAT, low_type)
                                               : CastOpType(low_type, DataType::FLOAT),
                                       "", {blob}, {name});
    if (user.has_device_option()) *cast.mutable_device_option() = user.device_option();
    *out.add_op() = cast;
    casts[key] = name;
    prec[name] = target;
    return name;
  };

  for (const OperatorDef& src : forward.op()) {
    OperatorDef op = src;
    const std::string& type = op.type();
    Precision out_prec = Precision::kUnknown;
    if (ReadsWeightCopies(type)) {
      for (int i = 1; i < op.input_size(); ++i) {
        if (params.count(op.input(i))) {
          const std::string copy = LowPrecisionCopyName(op.input(i), low_type);
          if (!copies.count(op.input(i))) {
            copies.insert(op.input(i));
            result.fp16_params.push_back(op.input(i));
          }
          op.set_input(i, copy);
          prec[copy] = Precision::kHalf;
        } else if (prec[op.input(i)] == Precision::kFloat) {
          op.set_input(i, cast_to(op.input(i), Precision::kHalf, op));
        }
      }
      // Conv/FC data is float whenever it is not known to be float16 already.
      if (prec[op.input(0)] != Precision::kHalf) {
        op.set_input(0, cast_to(op.input(0), Precision::kHalf, op));
      }
      out_prec = Precision::kHalf;
    } else if (RunsInFloat32(type)) {
      for (int i = 0; i < op.input_size(); ++i) {
        if (prec[op.input(i)] == Precision::kHalf) {
          HALFCAF_ENFORCE(!WritesBlob(op, op.input(i)), "mixed precision: ", type,
                          " runs in place on '", op.input(i),
                          "', which is float16 here; give its output another name");
          op.set_input(i, cast_to(op.input(i), Precision::kFloat, op));
        }
      }
      out_prec = Precision::kFloat;
    } else if (IsFillType(type)) {
      // A fill's input gives only a shape; its output is float unless its arguments say
      // otherwise (then left alone).
      bool float_out = true;
      for (const auto& a : op.arg()) {
        if (a.name() == "dtype" || (a.name() == "value" && a.has_i())) float_out = false;
      }
      out_prec = float_out ? Precision::kFloat : Precision::kUnknown;
    } else if (DataOnlyInFirstInput(type)) {
      out_prec = prec[op.input_size() ? op.input(0) : std::string()];
    } else {
      // Element-wise, pooling and shape ops: follow the data. Mixed inputs are brought to the
      // precision of the first float input.
      Precision first = Precision::kUnknown;
      for (const auto& in : op.input()) {
        if (prec[in] != Precision::kUnknown) {
          first = prec[in];
          break;
        }
      }
      for (int i = 0; i < op.input_size(); ++i) {
        Precision p = prec[op.input(i)];
        if (p != Precision::kUnknown && p != first) {
          op.set_input(i, cast_to(op.input(i), first, op));
        }
      }
      out_prec = first;
    }
    *out.add_op() = op;
    for (int i = 0; i < op.output_size(); ++i) {
      const std::string& o = op.output(i);
      // Only output 0 carries the data; BN statistics stay float, masks and infos are not float.
      Precision p = out_prec;
      if (i > 0 && type != "Split" && type != "DepthSplit") {
        p = type == "SpatialBN" ? Precision::kFloat : Precision::kUnknown;
      }
      prec[o] = p;
      casts.erase({o, Precision::kHalf});
      casts.erase({o, Precision::kFloat});
    }
  }
  return result;
}

}  // namespace halfcaf
