#include "core/argument.h"

#include <cstdint>
#include <limits>
#include <type_traits>

namespace halfcaf {

ArgumentHelper::ArgumentHelper(const OperatorDef& def) {
  for (const auto& a : def.arg()) {
    HALFCAF_ENFORCE(args_.count(a.name()) == 0, "argument '", a.name(), "' is given twice");
    args_[a.name()] = &a;
  }
}

ArgumentHelper::ArgumentHelper(const NetDef& def) {
  for (const auto& a : def.arg()) args_[a.name()] = &a;
}

const Argument* ArgumentHelper::Find(const std::string& name) const {
  auto it = args_.find(name);
  return it == args_.end() ? nullptr : it->second;
}

namespace {

template <typename T>
T NarrowInt(const std::string& name, int64_t v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    bool fits;
    if constexpr (std::is_signed_v<T>) {
      fits = v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
             v <= static_cast<int64_t>(std::numeric_limits<T>::max());
    } else {
      fits = v >= 0 && static_cast<uint64_t>(v) <= std::numeric_limits<T>::max();
    }
    HALFCAF_ENFORCE(fits, "argument '", name, "' = ", v, " does not fit its integer type");
    return static_cast<T>(v);
  }
}

}  // namespace

#define HALFCAF_INT_ARG(T)                                                                     \
  template <>                                                                                  \
  T ArgumentHelper::GetSingleArgument<T>(const std::string& name, const T& dflt) const {       \
    const Argument* a = Find(name);                                                            \
    if (!a) return dflt;                                                                       \
    HALFCAF_ENFORCE(a->has_i(), "argument '", name, "' must be an integer (field i)");        \
    return NarrowInt<T>(name, a->i());                                                         \
  }                                                                                            \
  template <>                                                                                  \
  bool ArgumentHelper::HasSingleArgumentOfType<T>(const std::string& name) const {             \
    const Argument* a = Find(name);                                                            \
    return a && a->has_i();                                                                    \
  }                                                                                            \
  template <>                                                                                  \
  std::vector<T> ArgumentHelper::GetRepeatedArgument<T>(const std::string& name,               \
                                                        const std::vector<T>& dflt) const {    \
    const Argument* a = Find(name);                                                            \
    if (!a) return dflt;                                                                       \
    std::vector<T> out;                                                                        \
    for (int64_t v : a->ints()) out.push_back(NarrowInt<T>(name, v));                          \
    return out;                                                                                \
  }
HALFCAF_INT_ARG(int)
HALFCAF_INT_ARG(int64_t)
HALFCAF_INT_ARG(bool)
HALFCAF_INT_ARG(size_t)
HALFCAF_INT_ARG(int16_t)
HALFCAF_INT_ARG(int8_t)
HALFCAF_INT_ARG(uint8_t)
HALFCAF_INT_ARG(uint16_t)
HALFCAF_INT_ARG(uint32_t)
#undef HALFCAF_INT_ARG

#define HALFCAF_FLOAT_ARG(T)                                                                   \
  template <>                                                                                  \
  T ArgumentHelper::GetSingleArgument<T>(const std::string& name, const T& dflt) const {       \
    const Argument* a = Find(name);                                                            \
    if (!a) return dflt;                                                                       \
    HALFCAF_ENFORCE(a->has_f(), "argument '", name, "' must be a float (field f)");           \
    return static_cast<T>(a->f());                                                             \
  }                                                                                            \
  template <>                                                                                  \
  bool ArgumentHelper::HasSingleArgumentOfType<T>(const std::string& name) const {             \
    const Argument* a = Find(name);                                                            \
    return a && a->has_f();                                                                    \
  }                                                                                            \
  template <>                                                                                  \
  std::vector<T> ArgumentHelper::GetRepeatedArgument<T>(const std::string& name,               \
                                                        const std::vector<T>& dflt) const {    \
    const Argument* a = Find(name);                                                            \
    if (!a) return dflt;                                                                       \
    return std::vector<T>(a->floats().begin(), a->floats().end());                             \
  }
HALFCAF_FLOAT_ARG(float)
HALFCAF_FLOAT_ARG(double)
#undef HALFCAF_FLOAT_ARG

template <>
std::string ArgumentHelper::GetSingleArgument<std::string>(const std::string& name,
                                                           const std::string& dflt) const {
  const Argument* a = Find(name);
  if (!a) return dflt;
  HALFCAF_ENFORCE(a->has_s(), "argument '", name, "' must be a string (field s)");
  return a->s();
}

template <>
bool ArgumentHelper::HasSingleArgumentOfType<std::string>(const std::string& name) const {
  const Argument* a = Find(name);
  return a && a->has_s();
}

template <>
std::vector<std::string> ArgumentHelper::GetRepeatedArgument<std::string>(
    const std::string& name, const std::vector<std::string>& dflt) const {
  const Argument* a = Find(name);
  if (!a) return dflt;
  return std::vector<std::string>(a->strings().begin(), a->strings().end());
}

Argument MakeArgument(const std::string& name, float v) {
  Argument a;
  a.set_name(name);
  a.set_f(v);
  return a;
}
Argument MakeArgument(const std::string& name, double v) {
  return MakeArgument(name, static_cast<float>(v));
}
Argument MakeArgument(const std::string& name, int64_t v) {
  Argument a;
  a.set_name(name);
  a.set_i(v);
  return a;
}
Argument MakeArgument(const std::string& name, int v) {
  return MakeArgument(name, static_cast<int64_t>(v));
}
Argument MakeArgument(const std::string& name, bool v) {
  return MakeArgument(name, static_cast<int64_t>(v));
}
Argument MakeArgument(const std::string& name, const std::string& v) {
  Argument a;
  a.set_name(name);
  a.set_s(v);
  return a;
}
Argument MakeArgument(const std::string& name, const char* v) {
  return MakeArgument(name, std::string(v));
}
Argument MakeArgument(const std::string& name, const std::vector<float>& v) {
  Argument a;
  a.set_name(name);
  for (float x : v) a.add_floats(x);
  return a;
}
Argument MakeArgument(const std::string& name, const std::vector<int64_t>& v) {
  Argument a;
  a.set_name(name);
  for (int64_t x : v) a.add_ints(x);
  return a;
}
Argument MakeArgument(const std::string& name, const std::vector<int>& v) {
  return MakeArgument(name, std::vector<int64_t>(v.begin(), v.end()));
}
Argument MakeArgument(const std::string& name, const std::vector<std::string>& v) {
  Argument a;
  a.set_name(name);
  for (const auto& x : v) a.add_strings(x);
  return a;
}

OperatorDef MakeOperatorDef(const std::string& type, const std::string& name,
                            const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs,
                            const std::vector<Argument>& args) {
  OperatorDef def;
  def.set_type(type);
  def.set_name(name);
  for (const auto& i : inputs) def.add_input(i);
  for (const auto& o : outputs) def.add_output(o);
  for (const auto& a : args) *def.add_arg() = a;
  return def;
}

}  // namespace halfcaf
