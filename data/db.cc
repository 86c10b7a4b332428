#include "data/db.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "core/enforce.h"
#include "core/strings.h"

namespace halfcaf {
namespace db {

namespace {

std::map<std::string, DBOpener>& Registry() {
  static std::map<std::string, DBOpener> m;
  return m;
}

std::mutex& RegistryMutex() {
  static std::mutex mu;
  return mu;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Caffe2's DB types that halfcaf may lack: why, and what to do about it.
std::string MissingTypeHint(const std::string& type) {
  if (type == "leveldb") {
    return "halfcaf was built without LevelDB support: install libleveldb-dev (Debian/Ubuntu) "
           "and re-run cmake";
  }
  if (type == "lmdb") {
    return "halfcaf was built without LMDB support: install liblmdb-dev (Debian/Ubuntu) and "
           "re-run cmake";
  }
  if (type == "minidb" || type == "protodb" || type == "zmqdb") {
    return "this Caffe2 DB type is not supported by halfcaf; convert the data to a LevelDB or "
           "LMDB (e.g. with make_mnist_db)";
  }
  return "unknown DB type";
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? std::string("none") : out;
}

}  // namespace

void RegisterDBType(const std::string& name, DBOpener opener) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry()[Lower(name)] = std::move(opener);
}

std::vector<std::string> RegisteredDBTypes() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::vector<std::string> out;
  for (const auto& kv : Registry()) out.push_back(kv.first);
  return out;
}

bool DBTypeAvailable(const std::string& db_type) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  return Registry().count(Lower(db_type)) > 0;
}

std::unique_ptr<DB> OpenDB(const std::string& db_type, const std::string& path, Mode mode) {
  const std::string type = Lower(db_type);
  DBOpener opener;
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    auto it = Registry().find(type);
    if (it != Registry().end()) opener = it->second;
  }
  if (!opener) {
    HALFCAF_THROW("cannot open ", db_type.empty() ? "(empty)" : db_type, " DB '", path, "': ",
                  MissingTypeHint(type), " (available DB types: ",
                  JoinNames(RegisteredDBTypes()), ")");
  }
  HALFCAF_ENFORCE(!path.empty(), "cannot open ", type, " DB: the path is empty");
  return opener(path, mode);
}

DBReader::DBReader(const std::string& db_type, const std::string& path, int num_shards,
                   int shard_id)
    : db_type_(Lower(db_type)), path_(path), num_shards_(num_shards), shard_id_(shard_id) {
  HALFCAF_ENFORCE(num_shards >= 1, "DB reader for ", Describe(), ": num_shards must be >= 1, got ",
                  num_shards);
  HALFCAF_ENFORCE(shard_id >= 0 && shard_id < num_shards, "DB reader for ", Describe(),
                  ": shard_id must be in [0, num_shards = ", num_shards, "), got ", shard_id);
  db_ = OpenDB(db_type_, path_, Mode::READ);
  cursor_ = db_->NewCursor();
  SeekToShardStart();
}

std::string DBReader::Describe() const { return MakeString(db_type_, " DB '", path_, "'"); }

void DBReader::SeekToShardStart() const {
  cursor_->SeekToFirst();
  for (int i = 0; i < shard_id_ && cursor_->Valid(); ++i) cursor_->Next();
  HALFCAF_ENFORCE(cursor_->Valid(), Describe(),
                  shard_id_ == 0 ? std::string(" holds no records")
                                 : MakeString(" holds no record for shard ", shard_id_, " of ",
                                              num_shards_));
}

void DBReader::Read(std::string* key, std::string* value) const {
  std::lock_guard<std::mutex> lock(mu_);
  *key = cursor_->key();
  *value = cursor_->value();
  for (int i = 0; i < num_shards_; ++i) {
    cursor_->Next();
    if (!cursor_->Valid()) {
      SeekToShardStart();
      break;
    }
  }
}

}  // namespace db
}  // namespace halfcaf
