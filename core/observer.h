// Observers of net runs (Caffe2's NetObserver): an observer attached to a net is told when each
// run of the net starts and ends and when each of its ops starts and ends, on the thread that runs
// the op (a "dag" net's worker), so it can time, count or record them. Nothing is called and
// nothing is paid beyond one emptiness check per op when a net has no observer.
//
// Observers reach a net in two ways: NetBase::AttachObserver on one net, or a global creator
// (AddGlobalNetObserverCreator), which every net created afterwards asks for its observer (the
// way train_net --trace sees the nets the trainer creates inside).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

namespace halfcaf {

class NetBase;

class NetObserver {
 public:
  virtual ~NetObserver() = default;
  // Called on the thread that called NetBase::Run.
  virtual void OnNetStart(const NetBase& /*net*/) {}
  virtual void OnNetEnd(const NetBase& /*net*/) {}
  // Op `i` of `net` (its index in net.ops()), on the thread that runs it. OnOpEnd is called
  // also when the op throws (`failed` true), before the error leaves the net.
  virtual void OnOpStart(const NetBase& /*net*/, size_t /*i*/) {}
  virtual void OnOpEnd(const NetBase& /*net*/, size_t /*i*/, bool /*failed*/) {}
};

// Returns the observer for a newly created net, or nullptr for none.
using NetObserverCreator = std::function<std::shared_ptr<NetObserver>(const NetBase&)>;

// Registers `creator` for every net created from now on; returns its id for removal. Nets that
// exist keep the observers they have.
int AddGlobalNetObserverCreator(NetObserverCreator creator);
void RemoveGlobalNetObserverCreator(int id);

}  // namespace halfcaf
