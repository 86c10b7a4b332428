// Key-value databases of serialized records (Caffe2's DB layer): the storage behind CreateDB and
// TensorProtosDBInput and the tool make_mnist_db.
//
//   DB           an open database; NewCursor() iterates it in key order, NewTransaction() writes.
//   Cursor       SeekToFirst / Next / Valid / key / value.
//   Transaction  Put(key, value) buffers a record; Commit() writes the buffered records.
//   DBReader     what CreateDB stores in its output blob: an open DB and a cursor. Read() returns
//                the next record and wraps to the first one at the end; with num_shards > 1
//                reader `shard_id` sees records shard_id, shard_id + num_shards, ...
//
// Backends are optional at build time: "leveldb" (libleveldb-dev) and "lmdb" (liblmdb-dev) are
// compiled when CMake finds them (HALFCAF_WITH_LEVELDB / HALFCAF_WITH_LMDB). Type names are
// case-insensitive ("leveldb" = "LevelDB"). Every failure throws EnforceNotMet naming the
// db_type and the path.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace halfcaf {
namespace db {

enum class Mode {
  READ,   // an existing DB, read only
  WRITE,  // an existing DB or a new one, records added
  NEW,    // a new DB; fails if one exists at the path
};

class Cursor {
 public:
  virtual ~Cursor() = default;
  virtual void SeekToFirst() = 0;
  virtual void Next() = 0;
  virtual bool Valid() const = 0;
  virtual std::string key() const = 0;
  virtual std::string value() const = 0;
};

class Transaction {
 public:
  virtual ~Transaction() = default;
  virtual void Put(const std::string& key, const std::string& value) = 0;
  virtual void Commit() = 0;
};

class DB {
 public:
  virtual ~DB() = default;
  virtual std::unique_ptr<Cursor> NewCursor() = 0;
  virtual std::unique_ptr<Transaction> NewTransaction() = 0;
};

using DBOpener = std::function<std::unique_ptr<DB>(const std::string& path, Mode mode)>;

// Backends register themselves under a lower-case name (db_leveldb.cc, db_lmdb.cc).
void RegisterDBType(const std::string& name, DBOpener opener);
// The registered (compiled-in) backend names, lower case.
std::vector<std::string> RegisteredDBTypes();
bool DBTypeAvailable(const std::string& db_type);

// Opens a DB. Throws naming db_type and path if the type is unknown or not compiled in (saying
// which package to install), or if the DB cannot be opened.
std::unique_ptr<DB> OpenDB(const std::string& db_type, const std::string& path, Mode mode);

class DBReader {
 public:
  // Opens `path` for reading and positions the cursor on record `shard_id`. Throws if the DB
  // cannot be opened or holds no record for this shard.
  DBReader(const std::string& db_type, const std::string& path, int num_shards = 1,
           int shard_id = 0);

  // The next record; after the last one, reading continues from the first. Thread-safe.
  void Read(std::string* key, std::string* value) const;

  const std::string& db_type() const { return db_type_; }
  const std::string& path() const { return path_; }
  // "leveldb DB '/data/mnist'": for messages.
  std::string Describe() const;

 private:
  void SeekToShardStart() const;

  std::string db_type_, path_;
  int num_shards_, shard_id_;
  std::unique_ptr<DB> db_;
  std::unique_ptr<Cursor> cursor_;
  mutable std::mutex mu_;
};

}  // namespace db
}  // namespace halfcaf
