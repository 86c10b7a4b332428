#include "core/workspace.h"

#include <algorithm>

#include "core/net.h"

namespace halfcaf {

Workspace::Workspace(std::string root_folder) : root_folder_(std::move(root_folder)) {}

Workspace::Workspace(Workspace* parent)
    : root_folder_(parent->root_folder()), parent_(parent) {}

Workspace::~Workspace() {
  nets_.clear();  // nets (and threads in them) go before the blobs they point at
}

Blob* Workspace::CreateBlob(const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(blobs_mutex_);
    auto it = blobs_.find(name);
    if (it != blobs_.end()) return it->second.get();
  }
  if (parent_ != nullptr) {
    if (Blob* shared = parent_->GetBlob(name)) return shared;
  }
  std::lock_guard<std::mutex> lock(blobs_mutex_);
  auto& slot = blobs_[name];
  if (!slot) slot = std::make_unique<Blob>(name);
  return slot.get();
}

Blob* Workspace::GetBlob(const std::string& name) {
  return const_cast<Blob*>(static_cast<const Workspace*>(this)->GetBlob(name));
}

const Blob* Workspace::GetBlob(const std::string& name) const {
  {
    std::lock_guard<std::mutex> lock(blobs_mutex_);
    auto it = blobs_.find(name);
    if (it != blobs_.end()) return it->second.get();
  }
  return parent_ != nullptr ? static_cast<const Workspace*>(parent_)->GetBlob(name) : nullptr;
}

bool Workspace::RemoveBlob(const std::string& name) {
  std::lock_guard<std::mutex> lock(blobs_mutex_);
  return blobs_.erase(name) > 0;
}

std::vector<std::string> Workspace::Blobs() const {
  std::vector<std::string> names = parent_ != nullptr ? parent_->Blobs() : std::vector<std::string>{};
  std::lock_guard<std::mutex> lock(blobs_mutex_);
  for (const auto& kv : blobs_) names.push_back(kv.first);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Tensor* Workspace::CreateTensor(const std::string& name, Device device) {
  return CreateBlob(name)->GetMutableTensor(device);
}

const Tensor& Workspace::GetTensor(const std::string& name) const {
  const Blob* b = GetBlob(name);
  HALFCAF_ENFORCE(b != nullptr, "blob '", name, "' does not exist in the workspace");
  HALFCAF_ENFORCE(b->IsTensor(), "blob '", name, "' does not hold a tensor");
  return b->GetTensor();
}

NetBase* Workspace::CreateNet(const NetDef& def, bool overwrite) {
  HALFCAF_ENFORCE(overwrite || nets_.count(def.name()) == 0, "a net named '", def.name(),
                  "' already exists");
  nets_.erase(def.name());
  auto net = halfcaf::CreateNet(def, this);
  NetBase* raw = net.get();
  nets_[def.name()] = std::move(net);
  return raw;
}

NetBase* Workspace::GetNet(const std::string& name) {
  auto it = nets_.find(name);
  return it == nets_.end() ? nullptr : it->second.get();
}

void Workspace::RunNet(const std::string& name) {
  NetBase* net = GetNet(name);
  HALFCAF_ENFORCE(net != nullptr, "no net named '", name, "' in the workspace");
  net->Run();
}

void Workspace::RunNetOnce(const NetDef& def) {
  auto net = halfcaf::CreateNet(def, this);
  net->Run();
  net->CheckDeferredErrors();
}

std::vector<std::string> Workspace::Nets() const {
  std::vector<std::string> names;
  for (const auto& kv : nets_) names.push_back(kv.first);
  return names;
}

}  // namespace halfcaf
