// Reading OperatorDef / NetDef arguments with Caffe2's rules: floats from `f`, integers (and
// bools) from `i` with a lossless-narrowing check, strings from `s`, lists from floats/ints/strings.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/enforce.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

class ArgumentHelper {
 public:
  explicit ArgumentHelper(const OperatorDef& def);
  explicit ArgumentHelper(const NetDef& def);

  bool HasArgument(const std::string& name) const { return args_.count(name) > 0; }
  // T in {float, double, int, int64_t, bool, size_t, std::string, ...}.
  template <typename T>
  T GetSingleArgument(const std::string& name, const T& default_value) const;
  template <typename T>
  bool HasSingleArgumentOfType(const std::string& name) const;
  template <typename T>
  std::vector<T> GetRepeatedArgument(const std::string& name,
                                     const std::vector<T>& default_value = {}) const;
  const Argument* Find(const std::string& name) const;

 private:
  std::map<std::string, const Argument*> args_;
};

// Specializations live in argument.cc.
#define HALFCAF_DECLARE_ARG_TYPE(T)                                                         \
  template <>                                                                               \
  T ArgumentHelper::GetSingleArgument<T>(const std::string&, const T&) const;               \
  template <>                                                                               \
  bool ArgumentHelper::HasSingleArgumentOfType<T>(const std::string&) const;                \
  template <>                                                                               \
  std::vector<T> ArgumentHelper::GetRepeatedArgument<T>(const std::string&,                 \
                                                        const std::vector<T>&) const;
HALFCAF_DECLARE_ARG_TYPE(int)
HALFCAF_DECLARE_ARG_TYPE(int64_t)
HALFCAF_DECLARE_ARG_TYPE(bool)
HALFCAF_DECLARE_ARG_TYPE(size_t)
HALFCAF_DECLARE_ARG_TYPE(int16_t)
HALFCAF_DECLARE_ARG_TYPE(int8_t)
HALFCAF_DECLARE_ARG_TYPE(uint8_t)
HALFCAF_DECLARE_ARG_TYPE(uint16_t)
HALFCAF_DECLARE_ARG_TYPE(uint32_t)
HALFCAF_DECLARE_ARG_TYPE(float)
HALFCAF_DECLARE_ARG_TYPE(double)
HALFCAF_DECLARE_ARG_TYPE(std::string)
#undef HALFCAF_DECLARE_ARG_TYPE

// Builds an Argument (for code that writes ops: gradient makers, model builders, transforms).
Argument MakeArgument(const std::string& name, float v);
Argument MakeArgument(const std::string& name, double v);
Argument MakeArgument(const std::string& name, int v);
Argument MakeArgument(const std::string& name, int64_t v);
Argument MakeArgument(const std::string& name, bool v);
Argument MakeArgument(const std::string& name, const std::string& v);
Argument MakeArgument(const std::string& name, const char* v);
Argument MakeArgument(const std::string& name, const std::vector<float>& v);
Argument MakeArgument(const std::string& name, const std::vector<int64_t>& v);
Argument MakeArgument(const std::string& name, const std::vector<int>& v);
Argument MakeArgument(const std::string& name, const std::vector<std::string>& v);

// Sets (or replaces) an argument on an op.
template <typename T>
void SetArgument(OperatorDef* def, const std::string& name, const T& value) {
  Argument arg = MakeArgument(name, value);
  for (auto& a : *def->mutable_arg()) {
    if (a.name() == name) {
      a = arg;
      return;
    }
  }
  *def->add_arg() = arg;
}

// Builds an OperatorDef.
OperatorDef MakeOperatorDef(const std::string& type, const std::string& name,
                            const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs,
                            const std::vector<Argument>& args = {});

}  // namespace halfcaf
