// Errors: user-caused problems throw EnforceNotMet (tools print it once and exit non-zero);
// internal invariants use glog CHECK.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace halfcaf {

namespace detail {
inline void StreamAll(std::ostringstream&) {}
template <typename T, typename... Rest>
void StreamAll(std::ostringstream& ss, const T& first, const Rest&... rest) {
  ss << first;
  StreamAll(ss, rest...);
}
}  // namespace detail

// Concatenates anything streamable into one string.
template <typename... Args>
std::string MakeString(const Args&... args) {
  std::ostringstream ss;
  detail::StreamAll(ss, args...);
  return ss.str();
}

// "[2, 3, 4]" for a dims vector.
template <typename T>
std::string DimsString(const std::vector<T>& dims) {
  std::ostringstream ss;
  ss << "[";
  for (size_t i = 0; i < dims.size(); ++i) ss << (i ? ", " : "") << dims[i];
  ss << "]";
  return ss.str();
}

// The one exception type for errors a user can cause. Context (the net, the op) is prepended as
// the error travels outwards, so what() reads "net 'x' op #2 (FC 'fc1'): <message> [file:line]".
class EnforceNotMet : public std::exception {
 public:
  EnforceNotMet(const char* file, int line, std::string msg);
  const char* what() const noexcept override { return full_.c_str(); }
  const std::string& message() const { return msg_; }
  void AddContext(const std::string& context);

 private:
  void Rebuild();
  std::string msg_;
  std::string location_;
  std::vector<std::string> context_;
  std::string full_;
};

// Thrown by an engine-specific operator constructor that cannot handle its arguments; creation
// then falls back to the next engine.
class UnsupportedOperatorFeature : public EnforceNotMet {
 public:
  using EnforceNotMet::EnforceNotMet;
};

}  // namespace halfcaf

#define HALFCAF_THROW(...) \
  throw ::halfcaf::EnforceNotMet(__FILE__, __LINE__, ::halfcaf::MakeString(__VA_ARGS__))

#define HALFCAF_ENFORCE(cond, ...)                                                     \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      throw ::halfcaf::EnforceNotMet(__FILE__, __LINE__,                               \
                                     ::halfcaf::MakeString(__VA_ARGS__));              \
    }                                                                                  \
  } while (0)

#define HALFCAF_ENFORCE_EQ(a, b, ...)                                                  \
  do {                                                                                 \
    const auto& hc_a_ = (a);                                                           \
    const auto& hc_b_ = (b);                                                           \
    if (!(hc_a_ == hc_b_)) {                                                           \
      throw ::halfcaf::EnforceNotMet(                                                  \
          __FILE__, __LINE__,                                                          \
          ::halfcaf::MakeString(__VA_ARGS__, " (expected ", #a, " == ", #b, ", got ",  \
                                hc_a_, " vs ", hc_b_, ")"));                           \
    }                                                                                  \
  } while (0)

#define HALFCAF_UNSUPPORTED(...)                                                        \
  throw ::halfcaf::UnsupportedOperatorFeature(__FILE__, __LINE__,                       \
                                              ::halfcaf::MakeString(__VA_ARGS__))
