#include "core/net.h"

#include <map>
#include <mutex>

#include "core/strings.h"

namespace halfcaf {

namespace {

std::map<std::string, NetCreator>& NetRegistry() {
  static std::map<std::string, NetCreator> m;
  return m;
}

struct GlobalCreators {
  std::mutex mu;
  int next_id = 0;
  std::map<int, NetObserverCreator> creators;
};

GlobalCreators& Creators() {
  static GlobalCreators* c = new GlobalCreators();  // never destroyed: nets may outlive main
  return *c;
}

std::string NetLabel(const NetDef& def) {
  return def.name().empty() ? std::string("net") : MakeString("net '", Abbreviate(def.name()), "'");
}

std::string OpLabel(const OperatorDef& op, int i) {
  return MakeString("op #", i, " (", Abbreviate(op.type()),
                    op.name().empty() ? std::string() : " '" + Abbreviate(op.name()) + "'", ")");
}

}  // namespace

NetBase::NetBase(const NetDef& def, Workspace* ws) : def_(def) {
  for (int i = 0; i < def_.op_size(); ++i) {
    OperatorDef op = def_.op(i);
    if (!op.has_device_option() && def_.has_device_option()) {
      *op.mutable_device_option() = def_.device_option();
    }
    try {
      ops_.push_back(CreateOperator(op, ws));
    } catch (EnforceNotMet& e) {
      e.AddContext(NetLabel(def_) + " " + OpLabel(op, i));
      throw;
    }
  }
}

namespace {

// splitmix64's output for the state z (its finaliser).
uint32_t SeedFromState(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return static_cast<uint32_t>(z ^ (z >> 31));
}

constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ull;  // splitmix64's increment

}  // namespace

void AssignRandomSeeds(NetDef* net, uint32_t seed, const std::string& salt) {
  uint64_t base = 0xcbf29ce484222325ull ^ seed;  // FNV-1a over the salt, then splitmix64 per op
  for (const unsigned char c : salt) base = (base ^ c) * 0x100000001b3ull;
  for (int i = 0; i < net->op_size(); ++i) {
    OperatorDef* op = net->mutable_op(i);
    if (op->has_device_option() && op->device_option().has_random_seed()) continue;
    if (!op->has_device_option() && net->has_device_option()) {
      *op->mutable_device_option() = net->device_option();
    }
    op->mutable_device_option()->set_random_seed(
        SeedFromState(base + kGamma * static_cast<uint64_t>(i + 1)));
  }
}

void MixRandomSeeds(NetDef* net, uint64_t salt) {
  for (auto& op : *net->mutable_op()) {
    if (!op.has_device_option() || !op.device_option().has_random_seed()) continue;
    op.mutable_device_option()->set_random_seed(
        SeedFromState(op.device_option().random_seed() + kGamma * salt));
  }
}

std::string NetBase::OpContext(size_t i) const {
  return NetLabel(def_) + " " + OpLabel(ops_[i]->def(), static_cast<int>(i));
}

void NetBase::Run() {
  if (observers_.empty()) {
    RunOps();
    return;
  }
  for (const auto& o : observers_) o->OnNetStart(*this);
  RunOps();
  for (const auto& o : observers_) o->OnNetEnd(*this);
}

void NetBase::RunOp(size_t i) {
  if (!observers_.empty()) {
    RunOpObserved(i);
    return;
  }
  try {
    ops_[i]->Run(0);
  } catch (EnforceNotMet& e) {
    e.AddContext(OpContext(i));
    throw;
  }
}

void NetBase::RunOpObserved(size_t i) {
  for (const auto& o : observers_) o->OnOpStart(*this, i);
  try {
    ops_[i]->Run(0);
  } catch (EnforceNotMet& e) {
    for (const auto& o : observers_) o->OnOpEnd(*this, i, true);
    e.AddContext(OpContext(i));
    throw;
  } catch (...) {
    for (const auto& o : observers_) o->OnOpEnd(*this, i, true);
    throw;
  }
  for (const auto& o : observers_) o->OnOpEnd(*this, i, false);
}

void NetBase::AttachObserver(std::shared_ptr<NetObserver> observer) {
  HALFCAF_ENFORCE(observer != nullptr, NetLabel(def_), ": AttachObserver(nullptr)");
  observers_.push_back(std::move(observer));
}

void NetBase::DetachObserver(const NetObserver* observer) {
  for (auto it = observers_.begin(); it != observers_.end(); ++it) {
    if (it->get() == observer) {
      observers_.erase(it);
      return;
    }
  }
}

int AddGlobalNetObserverCreator(NetObserverCreator creator) {
  HALFCAF_ENFORCE(creator != nullptr, "AddGlobalNetObserverCreator: no creator");
  GlobalCreators& c = Creators();
  std::lock_guard<std::mutex> lock(c.mu);
  const int id = c.next_id++;
  c.creators[id] = std::move(creator);
  return id;
}

void RemoveGlobalNetObserverCreator(int id) {
  GlobalCreators& c = Creators();
  std::lock_guard<std::mutex> lock(c.mu);
  c.creators.erase(id);
}

void NetBase::CheckDeferredErrors() {
  for (size_t i = 0; i < ops_.size(); ++i) {
    try {
      ops_[i]->CheckDeferredErrors();
    } catch (EnforceNotMet& e) {
      e.AddContext(OpContext(i));
      throw;
    }
  }
}

void SimpleNet::RunOps() {
  for (size_t i = 0; i < ops_.size(); ++i) RunOp(i);
}

void RegisterNetType(const std::string& type, NetCreator creator) {
  NetRegistry()[type] = std::move(creator);
}

std::vector<std::string> NetTypes() {
  std::vector<std::string> out;
  for (const auto& kv : NetRegistry()) out.push_back(kv.first);
  return out;
}

namespace {
[[maybe_unused]] const bool g_simple_registered = [] {
  RegisterNetType("simple", [](const NetDef& def, Workspace* ws) {
    return std::unique_ptr<NetBase>(new SimpleNet(def, ws));
  });
  return true;
}();
}  // namespace

std::unique_ptr<NetBase> CreateNet(const NetDef& def, Workspace* ws) {
  std::string type = def.type().empty() ? "simple" : def.type();
  auto it = NetRegistry().find(type);
  if (it == NetRegistry().end()) {
    std::string known;
    for (const auto& t : NetTypes()) known += (known.empty() ? "" : ", ") + t;
    HALFCAF_THROW(NetLabel(def), ": unknown net type '", Abbreviate(type), "' (known: ", known, ")");
  }
  std::unique_ptr<NetBase> net = it->second(def, ws);
  std::vector<NetObserverCreator> creators;
  {
    GlobalCreators& c = Creators();
    std::lock_guard<std::mutex> lock(c.mu);
    for (const auto& kv : c.creators) creators.push_back(kv.second);
  }
  for (const auto& create : creators) {
    if (auto observer = create(*net)) net->AttachObserver(std::move(observer));
  }
  return net;
}

}  // namespace halfcaf
