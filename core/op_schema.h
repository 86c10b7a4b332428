// OpSchema: what an operator type accepts (input/output counts, in-place pairs), how its output
// shapes/types and cost follow from its inputs, and its documentation. Nets are checked against
// schemas before they run; `run_net --list_ops` prints the docs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/types.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

// Static shape of a blob for inference; unknown when it cannot be derived.
struct TensorShape {
  std::vector<int64_t> dims;
  DataType dtype = DataType::FLOAT;
  bool unknown = false;
  int64_t numel() const;
};

struct OpCost {
  double flops = 0;          // multiply-adds count as 2
  double bytes_read = 0;
  double bytes_written = 0;
  double params_bytes = 0;
};

class OpSchema {
 public:
  using ShapeFn = std::function<std::vector<TensorShape>(const OperatorDef&,
                                                         const std::vector<TensorShape>&)>;
  using CostFn = std::function<OpCost(const OperatorDef&, const std::vector<TensorShape>&)>;

  OpSchema(std::string type, std::string file, int line);

  // Counts.
  OpSchema& NumInputs(int n) { return NumInputs(n, n); }
  OpSchema& NumInputs(int min, int max);
  OpSchema& NumInputs(std::set<int> allowed);
  OpSchema& NumOutputs(int n) { return NumOutputs(n, n); }
  OpSchema& NumOutputs(int min, int max);
  OpSchema& NumOutputs(std::set<int> allowed);
  OpSchema& NumInputsOutputs(std::function<bool(int, int)> fn);
  // In-place: which (input, output) pairs may share a blob, and which must.
  OpSchema& AllowInplace(std::set<std::pair<int, int>> pairs);
  OpSchema& AllowInplace(std::function<bool(int, int)> fn);
  OpSchema& AllowOneToOneInplace();
  OpSchema& EnforceInplace(std::set<std::pair<int, int>> pairs);
  OpSchema& EnforceOneToOneInplace();
  // Inference.
  OpSchema& TensorInferenceFunction(ShapeFn fn);
  OpSchema& IdenticalTypeAndShape();
  OpSchema& IdenticalTypeAndShapeOfInput(int i);
  OpSchema& CostInferenceFunction(CostFn fn);
  OpSchema& PointwiseCost(double flops_per_element);
  // Documentation.
  OpSchema& SetDoc(std::string doc);
  OpSchema& Arg(std::string name, std::string description);
  OpSchema& Input(int i, std::string name, std::string description);
  OpSchema& Output(int i, std::string name, std::string description);

  // Whether input `in` and output `out` may (or must) be one blob.
  bool AllowsInplace(int in, int out) const {
    return allow_inplace_(in, out) || enforce_inplace_(in, out);
  }
  // Throws a clear error if `def` breaks the counts or the in-place rules.
  void Verify(const OperatorDef& def) const;
  bool HasShapeInference() const { return static_cast<bool>(shape_fn_); }
  std::vector<TensorShape> InferShapes(const OperatorDef& def,
                                       const std::vector<TensorShape>& inputs) const;
  bool HasCostInference() const { return static_cast<bool>(cost_fn_); }
  OpCost InferCost(const OperatorDef& def, const std::vector<TensorShape>& inputs) const;

  const std::string& type() const { return type_; }
  const std::string& doc() const { return doc_; }
  bool HasArg(const std::string& name) const;
  // Multi-line user documentation: doc, inputs, outputs, arguments, counts.
  std::string FormattedDoc() const;
  std::string file() const { return file_; }
  int line() const { return line_; }

 private:
  std::string CountsString() const;

  std::string type_, file_;
  int line_;
  int min_in_ = 0, max_in_ = 0, min_out_ = 0, max_out_ = 0;
  std::function<bool(int)> in_ok_, out_ok_;
  std::function<bool(int, int)> in_out_ok_;
  std::function<bool(int, int)> allow_inplace_ = [](int, int) { return false; };
  std::function<bool(int, int)> enforce_inplace_ = [](int, int) { return false; };
  ShapeFn shape_fn_;
  CostFn cost_fn_;
  std::string doc_;
  std::vector<std::pair<std::string, std::string>> args_;
  std::map<int, std::pair<std::string, std::string>> inputs_, outputs_;
};

// Whether `op` runs in training mode: its schema has an `is_test` argument (SpatialBN, Dropout,
// the input ops, ...) and the op does not set it. Nets with such an op are training nets, which
// inference-only rewrites (models/inference_optimize.h) refuse.
bool InTrainingMode(const OperatorDef& op);

class OpSchemaRegistry {
 public:
  static OpSchema& NewSchema(const std::string& type, const char* file, int line);
  static const OpSchema* Schema(const std::string& type);
  static std::vector<std::string> Types();
};

#define HALFCAF_CONCAT_IMPL(a, b) a##b
#define HALFCAF_CONCAT(a, b) HALFCAF_CONCAT_IMPL(a, b)

// OPERATOR_SCHEMA(Relu).NumInputs(1).NumOutputs(1)...;
#define OPERATOR_SCHEMA(type)                                                          \
  [[maybe_unused]] static ::halfcaf::OpSchema& HALFCAF_CONCAT(g_op_schema_##type##_,   \
                                                              __LINE__) =              \
      ::halfcaf::OpSchemaRegistry::NewSchema(#type, __FILE__, __LINE__)

}  // namespace halfcaf
