// Nets: a NetDef's operators created over a workspace and run in order ("simple") or as a
// dependency graph with independent ops running concurrently ("dag"). NetDef.type picks one.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/observer.h"
#include "core/operator.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

class NetBase {
 public:
  // Creates every op (validating schema and inputs); errors name the op and its position.
  NetBase(const NetDef& def, Workspace* ws);
  virtual ~NetBase() = default;
  // Runs every op once (the net type's order), telling the observers.
  void Run();

  const NetDef& def() const { return def_; }
  const std::string& name() const { return def_.name(); }
  const std::vector<std::unique_ptr<OperatorBase>>& ops() const { return ops_; }

  // Every op's CheckDeferredErrors, in net order: throws the first error an op found on its
  // device since the last call, with the op's context as a failed Run would have it.
  void CheckDeferredErrors();

  // Observers (core/observer.h). Attach and detach only while the net is not running.
  void AttachObserver(std::shared_ptr<NetObserver> observer);
  void DetachObserver(const NetObserver* observer);
  size_t num_observers() const { return observers_.size(); }

 protected:
  // The net type's run: every op once, each through RunOp.
  virtual void RunOps() = 0;
  // Runs op i, adding "net 'x' op #i (Type 'name')" to any error.
  void RunOp(size_t i);
  std::string OpContext(size_t i) const;

  NetDef def_;
  std::vector<std::unique_ptr<OperatorBase>> ops_;

 private:
  void RunOpObserved(size_t i);
  std::vector<std::shared_ptr<NetObserver>> observers_;
};

class SimpleNet : public NetBase {
 public:
  SimpleNet(const NetDef& def, Workspace* ws) : NetBase(def, ws) {}

 protected:
  void RunOps() override;
};

using NetCreator = std::function<std::unique_ptr<NetBase>(const NetDef&, Workspace*)>;
void RegisterNetType(const std::string& type, NetCreator creator);
std::vector<std::string> NetTypes();

// Net of the def's type ("simple" when empty). Ops without a device_option take the net's. The
// global observer creators (core/observer.h) are asked for its observers.
std::unique_ptr<NetBase> CreateNet(const NetDef& def, Workspace* ws);

// Gives every op of `net` that has no DeviceOption random_seed its own, a function of `seed`,
// `salt` (e.g. the net's role) and the op's position, so the net draws the same random numbers
// wherever and whenever it is created (a plan run elsewhere, a net created after others). An op
// without a device_option first takes the net's, so its placement is kept.
void AssignRandomSeeds(NetDef* net, uint32_t seed, const std::string& salt);

// Replaces every random_seed the ops of `net` have with a mix of it and `salt` (a data-parallel
// replica's index across the run's processes: each replica's copy of a seeded op draws its own
// numbers). Ops without a seed are left alone.
void MixRandomSeeds(NetDef* net, uint64_t salt);

}  // namespace halfcaf
