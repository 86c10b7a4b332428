// Workspace: the blobs by name, and the nets created over them. A child workspace (Caffe2's
// shared workspace, which a plan's create_workspace step runs in) sees its parent's blobs:
// looking a name up finds the child's own blob, else the parent's; creating a blob the parent
// has returns the parent's, otherwise the blob is the child's own and goes with it. Nets are
// each workspace's own. The blob map is guarded, so concurrent plan steps may create blobs.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/blob.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

class NetBase;

class Workspace {
 public:
  explicit Workspace(std::string root_folder = ".");
  // A child of `parent` (which must outlive it), with the parent's root folder.
  explicit Workspace(Workspace* parent);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // Returns the blob, creating an empty one if needed. Blob pointers stay valid until removal.
  Blob* CreateBlob(const std::string& name);
  Blob* GetBlob(const std::string& name);  // nullptr if absent
  const Blob* GetBlob(const std::string& name) const;
  bool HasBlob(const std::string& name) const { return GetBlob(name) != nullptr; }
  bool RemoveBlob(const std::string& name);
  std::vector<std::string> Blobs() const;

  // Tensor conveniences; GetTensor throws naming the blob if it is absent or not a tensor.
  Tensor* CreateTensor(const std::string& name, Device device = Device());
  const Tensor& GetTensor(const std::string& name) const;

  // Nets. CreateNet validates every op (schema, inputs present) and throws before anything runs.
  NetBase* CreateNet(const NetDef& def, bool overwrite = true);
  NetBase* GetNet(const std::string& name);
  void RunNet(const std::string& name);
  // Creates, runs and drops a net; also reports the errors its ops found on their devices
  // (NetBase::CheckDeferredErrors), since nobody can ask later.
  void RunNetOnce(const NetDef& def);
  std::vector<std::string> Nets() const;

  const std::string& root_folder() const { return root_folder_; }
  Workspace* parent() const { return parent_; }

 private:
  std::string root_folder_;
  Workspace* parent_ = nullptr;
  mutable std::mutex blobs_mutex_;  // guards blobs_
  std::map<std::string, std::unique_ptr<Blob>> blobs_;
  std::map<std::string, std::unique_ptr<NetBase>> nets_;
};

}  // namespace halfcaf
