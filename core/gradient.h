// Gradient makers: for each forward op type, C++ code that writes the gradient ops (Caffe2's
// conventions: GI(k) = input + "_grad", device option / engine / args copied, is_gradient_op set).
// models/backward builds whole backward passes from these.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/enforce.h"
#include "core/op_schema.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

// A gradient blob: dense (one name), sparse (indices + values), or absent.
struct GradientWrapper {
  std::string dense;
  std::string indices;
  std::string values;
  bool IsDense() const { return !dense.empty(); }
  bool IsSparse() const { return !indices.empty() || !values.empty(); }
  bool IsEmpty() const { return !IsDense() && !IsSparse(); }
};

struct GradientOpsMeta {
  std::vector<OperatorDef> ops;
  std::vector<GradientWrapper> g_input;  // one per forward input (empty: no gradient)
};

class GradientMakerBase {
 public:
  GradientMakerBase(const OperatorDef& def, const std::vector<GradientWrapper>& g_output);
  virtual ~GradientMakerBase() = default;

  virtual std::vector<OperatorDef> GetGradientDefs() = 0;
  virtual bool CopyDeviceOption() const { return true; }
  virtual bool CopyEngine() const { return true; }
  virtual bool CopyArguments() const { return true; }

  // Runs the maker and applies the copy rules.
  GradientOpsMeta Get();

  // The forward inputs' dims, one entry per input, when the caller knows them (null: unknown;
  // the vector must outlive Get()). Makers whose gradient ops depend on the shapes read them
  // through InputDims (Add/Sub/Mul/Div broadcasting NumPy-style); the others ignore them.
  void SetInputDims(const std::vector<std::vector<int64_t>>* input_dims);

 protected:
  const std::string& I(int i) const { return def_.input(i); }
  const std::string& O(int i) const { return def_.output(i); }
  // Gradient of forward input i (records that it will be produced).
  std::string GI(int i);
  std::string GI_I(int i);
  std::string GI_V(int i);
  // Gradient of forward output i (must be dense).
  std::string GO(int i) const;
  bool HasGO(int i) const { return g_output_.at(i).IsDense(); }
  // Declares that input i's gradient is an existing blob (no op needed).
  void SetDense(int i, const std::string& name);
  int NumInputs() const { return def_.input_size(); }
  int NumOutputs() const { return def_.output_size(); }
  const ArgumentHelper& args() const { return args_; }
  // Dims of forward input i, or null when the caller did not give them (SetInputDims).
  const std::vector<int64_t>* InputDims(int i) const;

  static std::vector<OperatorDef> SingleGradientDef(const std::string& type,
                                                    const std::vector<std::string>& inputs,
                                                    const std::vector<std::string>& outputs,
                                                    const std::vector<Argument>& args = {});

  const OperatorDef& def_;
  ArgumentHelper args_;
  const std::vector<GradientWrapper>& g_output_;
  std::vector<GradientWrapper> g_input_;
  const std::vector<std::vector<int64_t>>* input_dims_ = nullptr;
};

using GradientMakerCreator = std::function<std::unique_ptr<GradientMakerBase>(
    const OperatorDef&, const std::vector<GradientWrapper>&)>;

class GradientRegistry {
 public:
  static void Register(const std::string& type, GradientMakerCreator creator);
  static const GradientMakerCreator* Find(const std::string& type);
  static std::vector<std::string> Types();
};

// Gradient ops for one forward op given its output gradients; throws if the type has none.
// `input_dims` (optional, one entry per forward input) are the dims the inputs will have at run
// time, for the makers that need them (see GradientMakerBase::SetInputDims).
GradientOpsMeta GetGradientForOp(const OperatorDef& def,
                                 const std::vector<GradientWrapper>& g_output,
                                 const std::vector<std::vector<int64_t>>* input_dims = nullptr);

// Marker makers.
class NoGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override { return {}; }
};

class ThrowInGradient : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    HALFCAF_THROW("operator ", def_.type(), " should not be differentiated (it is not part of "
                  "a differentiable path; put it after the loss or behind StopGradient)");
  }
};

class GradientNotImplementedYet : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    HALFCAF_THROW("the gradient of operator ", def_.type(), " is not implemented yet");
  }
};

template <class Maker>
struct GradientRegisterer {
  explicit GradientRegisterer(const char* type) {
    GradientRegistry::Register(type, [](const OperatorDef& def,
                                        const std::vector<GradientWrapper>& g_output) {
      return std::unique_ptr<GradientMakerBase>(new Maker(def, g_output));
    });
  }
};

#define REGISTER_GRADIENT(type, ...)                                                    \
  [[maybe_unused]] static ::halfcaf::GradientRegisterer<__VA_ARGS__> HALFCAF_CONCAT(    \
      g_grad_registerer_##type##_, __LINE__)(#type)
#define NO_GRADIENT(type) REGISTER_GRADIENT(type, ::halfcaf::NoGradient)
#define SHOULD_NOT_DO_GRADIENT(type) REGISTER_GRADIENT(type, ::halfcaf::ThrowInGradient)
#define GRADIENT_NOT_IMPLEMENTED_YET(type) \
  REGISTER_GRADIENT(type, ::halfcaf::GradientNotImplementedYet)

}  // namespace halfcaf
