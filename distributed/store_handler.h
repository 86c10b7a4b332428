// StoreHandler: the key-value store that processes meet through before they can talk directly
// (rendezvous). Caffe2's FileStoreHandler (a folder every process can reach: /tmp on one machine,
// NFS between machines) and RedisStoreHandler (a Redis server). Keys are written once and never
// change; readers wait for them with a bounded timeout.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace halfcaf {

class StoreHandler {
 public:
  virtual ~StoreHandler() = default;

  // Writes `value` under `key` (the handler's prefix is prepended).
  virtual void Set(const std::string& key, const std::string& value) = 0;
  // The value under `key`; throws EnforceNotMet if it is not there (Wait for it first).
  virtual std::string Get(const std::string& key) = 0;
  // Whether every key is there, without waiting.
  virtual bool Check(const std::vector<std::string>& keys) = 0;
  // "file store '/tmp/run1/'" or "redis store 127.0.0.1:6379 prefix 'run1/'", for messages.
  virtual std::string Describe() const = 0;

  // Waits until every key is there. Past `timeout` it throws EnforceNotMet listing the missing
  // keys; a timeout of zero or less waits forever.
  void Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
};

// A folder store: one file per key in `path`/`prefix` (created if missing), written atomically
// (temporary file + rename). Stale keys from an earlier run in the same folder would be taken as
// fresh: use a new folder or prefix per run.
std::unique_ptr<StoreHandler> CreateFileStoreHandler(const std::string& path,
                                                     const std::string& prefix = "");
// A Redis store (needs Gloo, which brings hiredis): keys are `prefix` + key on host:port. Redis
// keeps keys until it restarts: use a new prefix per run.
std::unique_ptr<StoreHandler> CreateRedisStoreHandler(const std::string& host, int port,
                                                      const std::string& prefix = "");
// From a rendezvous spec: "redis://HOST:PORT[/PREFIX]" or a folder path (file store).
std::unique_ptr<StoreHandler> CreateStoreHandler(const std::string& spec);

}  // namespace halfcaf
