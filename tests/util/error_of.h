// The message of the EnforceNotMet a call throws ("" when it throws none), for tests that check
// what an error says.
#pragma once

#include <functional>
#include <string>

#include "core/enforce.h"

namespace halfcaf {
namespace testing {

inline std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const EnforceNotMet& e) {
    return e.what();
  }
  return "";
}

}  // namespace testing
}  // namespace halfcaf
