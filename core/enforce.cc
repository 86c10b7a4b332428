#include "core/enforce.h"

#include <cstring>

namespace halfcaf {

EnforceNotMet::EnforceNotMet(const char* file, int line, std::string msg) : msg_(std::move(msg)) {
  // Keep the path from the project root only: "core/tensor.cc:42".
  const char* rel = file;
  for (const char* dir : {"/core/", "/operators/", "/gpu/", "/models/", "/tools/", "/tests/"}) {
    const char* p = std::strstr(file, dir);
    if (p) {
      rel = p + 1;
      break;
    }
  }
  location_ = MakeString(rel, ":", line);
  Rebuild();
}

void EnforceNotMet::AddContext(const std::string& context) {
  context_.insert(context_.begin(), context);
  Rebuild();
}

void EnforceNotMet::Rebuild() {
  full_.clear();
  for (const auto& c : context_) full_ += c + ": ";
  full_ += msg_ + " [" + location_ + "]";
}

}  // namespace halfcaf
