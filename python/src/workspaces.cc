#include "python/src/workspaces.h"

#include <map>

#include "core/enforce.h"

namespace halfcaf {
namespace python {
namespace {

struct Registry {
  std::map<std::string, std::shared_ptr<Workspace>> by_name;
  std::string current = "default";
};

// Only touched with the GIL held (every binding that calls in holds it).
Registry& Get() {
  static Registry* r = [] {
    auto* reg = new Registry;
    reg->by_name["default"] = std::make_shared<Workspace>();
    return reg;
  }();
  return *r;
}

}  // namespace

std::shared_ptr<Workspace> CurrentWorkspace() {
  Registry& r = Get();
  auto it = r.by_name.find(r.current);
  if (it == r.by_name.end()) it = r.by_name.emplace(r.current, std::make_shared<Workspace>()).first;
  return it->second;
}

const std::string& CurrentWorkspaceName() { return Get().current; }

void SwitchWorkspace(const std::string& name, bool create_if_missing) {
  Registry& r = Get();
  HALFCAF_ENFORCE(!name.empty(), "a workspace needs a name");
  if (!r.by_name.count(name)) {
    HALFCAF_ENFORCE(create_if_missing, "workspace '", name,
                    "' does not exist (pass create_if_missing=True to create it)");
    r.by_name[name] = std::make_shared<Workspace>();
  }
  r.current = name;
}

void ResetWorkspace(const std::string& root_folder) {
  Registry& r = Get();
  const std::string root = root_folder.empty() ? CurrentWorkspace()->root_folder() : root_folder;
  r.by_name[r.current] = std::make_shared<Workspace>(root);
}

std::vector<std::string> WorkspaceNames() {
  std::vector<std::string> names;
  for (const auto& kv : Get().by_name) names.push_back(kv.first);
  return names;
}

void ClearWorkspaces() { Get().by_name.clear(); }

}  // namespace python
}  // namespace halfcaf
