#include "distributed/store_handler.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "core/enforce.h"

#if HALFCAF_WITH_GLOO
#define HIREDIS_NESTED_INCLUDE 1
#include <gloo/rendezvous/redis_store.h>
#endif

namespace halfcaf {

void StoreHandler::Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  auto pause = std::chrono::milliseconds(1);
  while (!Check(keys)) {
    if (timeout.count() > 0 && std::chrono::steady_clock::now() - start >= timeout) {
      std::string missing;
      for (const auto& k : keys) {
        if (!Check({k})) missing += (missing.empty() ? "'" : ", '") + k + "'";
      }
      HALFCAF_THROW("timed out after ", timeout.count(), " ms waiting for key(s) ", missing,
                    " in ", Describe());
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

namespace {

// Keys become file names: letters, digits, '-', '_' stay; anything else is %XX.
std::string EncodeKey(const std::string& key) {
  std::string out;
  char buf[4];
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '_') {
      out += static_cast<char>(c);
    } else {
      std::snprintf(buf, sizeof(buf), "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

void MakeDirs(const std::string& path) {
  std::string partial;
  std::stringstream ss(path);
  std::string part;
  if (!path.empty() && path[0] == '/') partial = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    partial += part + "/";
    if (mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST) {
      HALFCAF_THROW("cannot create the store folder '", partial, "': ", std::strerror(errno));
    }
  }
}

class FileStoreHandler : public StoreHandler {
 public:
  FileStoreHandler(const std::string& path, const std::string& prefix) {
    HALFCAF_ENFORCE(!path.empty(), "FileStoreHandler: empty path");
    dir_ = path + "/" + (prefix.empty() ? "" : EncodeKey(prefix) + "/");
    MakeDirs(dir_);
  }

  void Set(const std::string& key, const std::string& value) override {
    const std::string final_path = dir_ + EncodeKey(key);
    const std::string tmp = dir_ + ".tmp." + EncodeKey(key) + "." + std::to_string(getpid()) +
                            "." + std::to_string(std::random_device()());
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      HALFCAF_ENFORCE(f.good(), "cannot write '", tmp, "' in ", Describe());
      f.write(value.data(), static_cast<std::streamsize>(value.size()));
      f.close();
      HALFCAF_ENFORCE(!f.fail(), "cannot write '", tmp, "' in ", Describe());
    }
    if (std::rename(tmp.c_str(), final_path.c_str()) != 0) {
      const int err = errno;
      std::remove(tmp.c_str());
      HALFCAF_THROW("cannot rename '", tmp, "' to '", final_path, "': ", std::strerror(err));
    }
  }

  std::string Get(const std::string& key) override {
    std::ifstream f(dir_ + EncodeKey(key), std::ios::binary);
    HALFCAF_ENFORCE(f.good(), "key '", key, "' is not in ", Describe());
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

  bool Check(const std::vector<std::string>& keys) override {
    struct stat st;
    for (const auto& k : keys) {
      if (stat((dir_ + EncodeKey(k)).c_str(), &st) != 0) return false;
    }
    return true;
  }

  std::string Describe() const override { return "file store '" + dir_ + "'"; }

 private:
  std::string dir_;
};

#if HALFCAF_WITH_GLOO
class RedisStoreHandler : public StoreHandler {
 public:
  RedisStoreHandler(const std::string& host, int port, const std::string& prefix)
      : host_(host), port_(port), prefix_(prefix) {
    try {
      store_ = std::make_unique<gloo::rendezvous::RedisStore>(host, port);
    } catch (const std::exception& e) {
      HALFCAF_THROW("cannot connect to the Redis server at ", host, ":", port, ": ", e.what());
    }
  }

  void Set(const std::string& key, const std::string& value) override {
    Call([&] { store_->set(prefix_ + key, std::vector<char>(value.begin(), value.end())); },
         key);
  }
  std::string Get(const std::string& key) override {
    HALFCAF_ENFORCE(Check({key}), "key '", key, "' is not in ", Describe());
    std::vector<char> v;
    Call([&] { v = store_->get(prefix_ + key); }, key);
    return std::string(v.begin(), v.end());
  }
  bool Check(const std::vector<std::string>& keys) override {
    std::vector<std::string> full;
    for (const auto& k : keys) full.push_back(prefix_ + k);
    bool ok = false;
    Call([&] { ok = store_->check(full); }, keys.empty() ? "" : keys[0]);
    return ok;
  }
  std::string Describe() const override {
    return MakeString("redis store ", host_, ":", port_, " prefix '", prefix_, "'");
  }

 private:
  template <typename Fn>
  void Call(Fn&& fn, const std::string& key) {
    try {
      fn();
    } catch (const EnforceNotMet&) {
      throw;
    } catch (const std::exception& e) {
      HALFCAF_THROW(Describe(), ", key '", key, "': ", e.what());
    }
  }

  std::string host_;
  int port_;
  std::string prefix_;
  std::unique_ptr<gloo::rendezvous::RedisStore> store_;
};
#endif

}  // namespace

std::unique_ptr<StoreHandler> CreateFileStoreHandler(const std::string& path,
                                                     const std::string& prefix) {
  return std::make_unique<FileStoreHandler>(path, prefix);
}

std::unique_ptr<StoreHandler> CreateRedisStoreHandler(const std::string& host, int port,
                                                      const std::string& prefix) {
#if HALFCAF_WITH_GLOO
  HALFCAF_ENFORCE(!host.empty() && port > 0 && port < 65536, "RedisStoreHandler: expected a host",
                  " and a port in 1..65535, got '", host, "' and ", port);
  return std::make_unique<RedisStoreHandler>(host, port, prefix);
#else
  HALFCAF_THROW("the Redis store needs Gloo (with hiredis), which this build lacks: install ",
                "libgloo-dev and rebuild");
#endif
}

std::unique_ptr<StoreHandler> CreateStoreHandler(const std::string& spec) {
  const std::string scheme = "redis://";
  if (spec.compare(0, scheme.size(), scheme) != 0) return CreateFileStoreHandler(spec);
  std::string rest = spec.substr(scheme.size());
  std::string prefix;
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    prefix = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  const size_t colon = rest.rfind(':');
  int port = 6379;
  std::string host = rest;
  if (colon != std::string::npos) {
    host = rest.substr(0, colon);
    const std::string p = rest.substr(colon + 1);
    char* end = nullptr;
    const long v = std::strtol(p.c_str(), &end, 10);
    HALFCAF_ENFORCE(!p.empty() && *end == '\0', "rendezvous '", spec,
                    "': expected redis://HOST:PORT[/PREFIX], the port is not a number");
    port = static_cast<int>(v);
  }
  HALFCAF_ENFORCE(!host.empty(), "rendezvous '", spec,
                  "': expected redis://HOST:PORT[/PREFIX], the host is empty");
  return CreateRedisStoreHandler(host, port, prefix);
}

}  // namespace halfcaf
