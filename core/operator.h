// OperatorBase / Operator<Context>: an operator resolves its input and output blobs once, when it
// is created, and then runs any number of times. Registries key implementations by device, type
// and engine; an unknown engine falls back to the default implementation.
#pragma once

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/blob.h"
#include "core/context.h"
#include "core/float_io.h"
#include "core/scratch.h"
#include "core/op_schema.h"
#include "core/workspace.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

class OperatorBase {
 public:
  OperatorBase(const OperatorDef& def, Workspace* ws);
  virtual ~OperatorBase() = default;
  OperatorBase(const OperatorBase&) = delete;
  OperatorBase& operator=(const OperatorBase&) = delete;

  // Runs the operator; errors throw EnforceNotMet (the net adds which op failed).
  virtual void Run(int stream_id = 0) = 0;

  const OperatorDef& def() const { return def_; }
  const std::string& type() const { return def_.type(); }
  // "FC 'fc1'" or "FC" for unnamed ops.
  std::string DebugName() const;

  // Arguments.
  bool HasArgument(const std::string& name) const { return args_.HasArgument(name); }
  template <typename T>
  T GetSingleArgument(const std::string& name, const T& default_value) const {
    return args_.GetSingleArgument<T>(name, default_value);
  }
  template <typename T>
  bool HasSingleArgumentOfType(const std::string& name) const {
    return args_.HasSingleArgumentOfType<T>(name);
  }
  template <typename T>
  std::vector<T> GetRepeatedArgument(const std::string& name,
                                     const std::vector<T>& default_value = {}) const {
    return args_.GetRepeatedArgument<T>(name, default_value);
  }

  // Blobs.
  int InputSize() const { return static_cast<int>(inputs_.size()); }
  int OutputSize() const { return static_cast<int>(outputs_.size()); }
  const Blob& InputBlob(int i) const { return *inputs_.at(i); }
  Blob* OutputBlob(int i) { return outputs_.at(i); }
  const std::string& input_name(int i) const { return def_.input(i); }
  const std::string& output_name(int i) const { return def_.output(i); }
  bool IsInputOutputAlias(int in, int out) const { return inputs_.at(in) == outputs_.at(out); }
  Workspace* workspace() const { return ws_; }

  // A CPU tensor input regardless of the op's device (counters, shape inputs).
  const Tensor& CPUInput(int i) const;

  // The op's random generator (its context's; nullptr for ops without a context). Trainers save
  // and restore its state so that random ops (Dropout) resume exactly.
  virtual std::mt19937* random_generator() { return nullptr; }

  // Reports errors the op found on its device in the runs since the last call, which it does not
  // wait for while it runs (the CUDA loss and metric ops' out-of-range labels): waits for the op's
  // device work and throws the EnforceNotMet that Run would have thrown, then forgets it. Whoever
  // runs a net repeatedly calls it when it reads the results anyway (NetBase::CheckDeferredErrors:
  // the trainer when it logs, Workspace::RunNetOnce after its run). The default finds nothing.
  virtual void CheckDeferredErrors() {}

 protected:
  const Tensor& TensorInput(int i, Device device) const;

  OperatorDef def_;
  ArgumentHelper args_;
  Workspace* ws_;
  std::vector<const Blob*> inputs_;
  std::vector<Blob*> outputs_;
};

template <class Context>
class Operator : public OperatorBase {
 public:
  Operator(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws), context_(def.device_option()) {}

  void Run(int stream_id) final {
    context_.SwitchToDevice(stream_id);
    auto exclusive = context_.ExclusiveStream();  // see CUDAContext::ExclusiveStream
    ScratchScope scratch;  // scratch memory (core/scratch.h) lives while the op runs
    RunOnDevice();
  }
  virtual void RunOnDevice() = 0;

  std::mt19937* random_generator() final { return &context_.RandGenerator(); }

  // An input tensor on this op's device (throws naming the blob if it is not one).
  const Tensor& Input(int i) const { return TensorInput(i, context_.device()); }
  // An output tensor on this op's device.
  Tensor* Output(int i) { return outputs_.at(i)->GetMutableTensor(context_.device()); }
  Tensor* Output(int i, std::vector<int64_t> dims) {
    Tensor* t = Output(i);
    t->Resize(std::move(dims));
    return t;
  }

 protected:
  Context context_;
};

// ---- registry ----------------------------------------------------------------------------------

using OperatorCreator =
    std::function<std::unique_ptr<OperatorBase>(const OperatorDef&, Workspace*)>;

struct OperatorKey {
  DeviceType device;
  std::string type;
  std::string engine;  // "" for the default implementation
};

class OperatorRegistry {
 public:
  static void Register(DeviceType device, const std::string& type, const std::string& engine,
                       OperatorCreator creator);
  static const OperatorCreator* Find(DeviceType device, const std::string& type,
                                     const std::string& engine);
  static bool HasType(DeviceType device, const std::string& type);
  static std::vector<OperatorKey> Keys();
  // Registered types (any device) closest to `type` by edit distance.
  static std::vector<std::string> CloseMatches(const std::string& type, size_t max_results = 3);
  // For operators left out of this build (an optional dependency was missing): what creating
  // one tells the user instead of "unknown operator type", e.g. which package to install.
  static void RegisterMissingHint(const std::string& type, const std::string& hint);
  static const std::string* MissingHint(const std::string& type);
};

// Creates an op for `def` on the device its device_option names: checks the schema, that every
// input blob exists, tries the listed engines (then CUDNN on CUDA, DNNL on CPU), then the default.
std::unique_ptr<OperatorBase> CreateOperator(const OperatorDef& def, Workspace* ws);

template <class OpClass>
struct OperatorRegisterer {
  OperatorRegisterer(DeviceType device, const char* type, const char* engine) {
    OperatorRegistry::Register(device, type, engine,
                               [](const OperatorDef& def, Workspace* ws) {
                                 return std::unique_ptr<OperatorBase>(new OpClass(def, ws));
                               });
  }
};

#define HALFCAF_REGISTER_OPERATOR(device, type, engine, ...)                             \
  [[maybe_unused]] static ::halfcaf::OperatorRegisterer<__VA_ARGS__> HALFCAF_CONCAT(     \
      g_op_registerer_##type##_, __LINE__)(::halfcaf::DeviceType::device, #type, engine)

#define REGISTER_CPU_OPERATOR(type, ...) HALFCAF_REGISTER_OPERATOR(CPU, type, "", __VA_ARGS__)
#define REGISTER_CPU_OPERATOR_WITH_ENGINE(type, engine, ...) \
  HALFCAF_REGISTER_OPERATOR(CPU, type, #engine, __VA_ARGS__)
#define REGISTER_CUDA_OPERATOR(type, ...) HALFCAF_REGISTER_OPERATOR(CUDA, type, "", __VA_ARGS__)
#define REGISTER_CUDA_OPERATOR_WITH_ENGINE(type, engine, ...) \
  HALFCAF_REGISTER_OPERATOR(CUDA, type, #engine, __VA_ARGS__)
#define REGISTER_CUDNN_OPERATOR(type, ...) \
  HALFCAF_REGISTER_OPERATOR(CUDA, type, "CUDNN", __VA_ARGS__)

}  // namespace halfcaf
