// What an ONNX node converter sees and does (internal to onnx/): the node and its attributes, its
// inputs' constant values and static shapes, and the halfcaf ops it emits. Ops whose inputs are
// all constants are run at import time (constant folding) instead of being emitted.
//
//   HALFCAF_ONNX_CONVERTER(Relu) { c.Emit(c.Op("Relu", {c.Input(0)}, {c.Output(0)})); }
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/op_schema.h"
#include "core/workspace.h"
#include "onnx/onnx_import.h"

namespace halfcaf {
namespace onnx_import {

class ConvertContext {
 public:
  // The importer's state a converter works on.
  struct Graph {
    Workspace consts;                            // constant values by ONNX name (CPU)
    // Initializers the predict net updates in place (a training BatchNormalization's running
    // statistics): their initial values still fill the init net, but nothing folds with them.
    std::set<std::string> variables;
    // Values some node reads or the graph outputs: an optional node output outside this set
    // needs no op to make it.
    std::set<std::string> used;
    std::map<std::string, TensorShape> shapes;   // static shapes and dtypes where known
    NetDef predict;
    int64_t opset = 0;
    int temp_counter = 0;
  };

  ConvertContext(const onnx::NodeProto& node, Graph* graph) : node_(node), g_(graph) {}

  const onnx::NodeProto& node() const { return node_; }
  const std::string& op_type() const { return node_.op_type(); }
  int64_t opset() const { return g_->opset; }
  // "node 'conv1' (Conv, opset 11)".
  std::string Describe() const;

  // Attributes. The typed getters throw OnnxUnsupported when the attribute has another type.
  bool Has(const std::string& name) const;
  int64_t Int(const std::string& name, int64_t dflt) const;
  float Float(const std::string& name, float dflt) const;
  std::string String(const std::string& name, const std::string& dflt) const;
  std::vector<int64_t> Ints(const std::string& name) const;  // empty when absent
  std::vector<float> Floats(const std::string& name) const;
  // A tensor attribute (Constant's value), as a CPU tensor; false when absent.
  bool TensorAttr(const std::string& name, Tensor* out) const;
  // Refuses every attribute not in `known`, naming it (an attribute would otherwise be ignored).
  void OnlyAttributes(const std::set<std::string>& known) const;

  // Inputs ("" for an absent optional one) and outputs.
  int NumInputs() const;  // trailing absent inputs not counted
  const std::string& Input(int i) const;
  bool HasInput(int i) const { return i < NumInputs() && !Input(i).empty(); }
  int NumOutputs() const;  // trailing absent outputs not counted
  const std::string& Output(int i) const;
  bool HasOutput(int i) const { return i < NumOutputs() && !Output(i).empty(); }

  // Input i's constant value, or nullptr when it is computed at run time.
  const Tensor* Const(int i) const;
  // Input i's constant value as integers (any integer or float type); refuses a run-time input,
  // naming `what` (e.g. "the shape input").
  std::vector<int64_t> ConstInts(int i, const std::string& what) const;
  std::vector<float> ConstFloats(int i, const std::string& what) const;
  // Input i's static shape, or nullptr when unknown.
  const TensorShape* Shape(int i) const;
  // Input i's static dims; refuses when unknown, naming `why` they are needed.
  const std::vector<int64_t>& Dims(int i, const std::string& why) const;
  // Input i's element type when known (UNDEFINED otherwise).
  DataType DType(int i) const;
  // Refuses unless input i is float or float16 (or of unknown type).
  void RequireFloat(int i) const;

  // An operator reading and writing these blobs, named after the node.
  OperatorDef Op(const std::string& type, const std::vector<std::string>& inputs,
                 const std::vector<std::string>& outputs,
                 const std::vector<Argument>& args = {}) const;
  // Adds `op` to the predict net, or runs it now when every input is a constant (its outputs
  // then are constants too).
  void Emit(const OperatorDef& op);
  // A fresh blob name derived from the node's first output.
  std::string Temp(const std::string& what);
  // Makes `name` a constant with this value.
  void SetConst(const std::string& name, const Tensor& value);
  // Makes `name` (an initializer) a variable: an op emitted earlier writes it at run time.
  void MarkVariable(const std::string& name) { g_->variables.insert(name); }
  // Whether a later node or the graph's outputs read output i.
  bool OutputUsed(int i) const { return HasOutput(i) && g_->used.count(Output(i)) > 0; }

  // Throws OnnxUnsupported: "<Describe()>: <what>".
  [[noreturn]] void Unsupported(const std::string& what) const;

 private:
  const onnx::AttributeProto* Attr(const std::string& name) const;

  const onnx::NodeProto& node_;
  Graph* g_;
};

using Converter = std::function<void(ConvertContext&)>;

// The converter of `op_type` (default domain), or nullptr.
const Converter* FindConverter(const std::string& op_type);
std::vector<std::string> ConvertedOpTypes();

struct ConverterRegistration {
  ConverterRegistration(const char* op_type, Converter fn);
};

#define HALFCAF_ONNX_CONVERTER(type)                                                      \
  static void ConvertOnnx##type(::halfcaf::onnx_import::ConvertContext& c);               \
  static const ::halfcaf::onnx_import::ConverterRegistration g_onnx_converter_##type(     \
      #type, ConvertOnnx##type);                                                          \
  static void ConvertOnnx##type(::halfcaf::onnx_import::ConvertContext& c)

// ONNX element type <-> halfcaf DataType (UNDEFINED for the types halfcaf cannot hold).
DataType FromOnnxType(int32_t onnx_type);
int32_t ToOnnxType(DataType t);
const char* OnnxTypeName(int32_t onnx_type);
// An ONNX TensorProto (typed fields, raw_data or external data under `dir`) as a CPU tensor.
void TensorFromOnnx(const onnx::TensorProto& proto, const std::string& dir, Tensor* out);

}  // namespace onnx_import
}  // namespace halfcaf
