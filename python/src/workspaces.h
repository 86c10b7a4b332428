// The Python package's workspaces: Caffe2's model of one current workspace among named ones
// ("default" at start), switched and reset from Python. Each is held by a shared_ptr so that a
// net running with the GIL released keeps its workspace alive even if Python resets it meanwhile.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/workspace.h"

namespace halfcaf {
namespace python {

std::shared_ptr<Workspace> CurrentWorkspace();
const std::string& CurrentWorkspaceName();
// Makes `name` current; a missing one is created when `create_if_missing`, else an error.
void SwitchWorkspace(const std::string& name, bool create_if_missing);
// Replaces the current workspace by an empty one (blobs and nets gone), rooted at `root_folder`
// ("" keeps the current root).
void ResetWorkspace(const std::string& root_folder);
std::vector<std::string> WorkspaceNames();
// Drops every workspace (at interpreter exit, while Python can still release shared arrays).
void ClearWorkspaces();

}  // namespace python
}  // namespace halfcaf
