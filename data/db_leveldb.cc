// LevelDB backend of the DB layer (compiled when CMake finds libleveldb: HALFCAF_WITH_LEVELDB).
// A LevelDB is a folder; records come back in byte-wise key order.
#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include <filesystem>

#include "core/enforce.h"
#include "data/db.h"

namespace halfcaf {
namespace db {
namespace {

class LevelDBCursor final : public Cursor {
 public:
  explicit LevelDBCursor(leveldb::DB* db) : iter_(db->NewIterator(leveldb::ReadOptions())) {
    SeekToFirst();
  }
  void SeekToFirst() override { iter_->SeekToFirst(); }
  void Next() override { iter_->Next(); }
  bool Valid() const override { return iter_->Valid(); }
  std::string key() const override { return iter_->key().ToString(); }
  std::string value() const override { return iter_->value().ToString(); }

 private:
  std::unique_ptr<leveldb::Iterator> iter_;
};

class LevelDBTransaction final : public Transaction {
 public:
  LevelDBTransaction(leveldb::DB* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~LevelDBTransaction() override {
    try {
      Commit();
    } catch (...) {
      // A destructor must not throw; an explicit Commit() reports the error.
    }
  }
  void Put(const std::string& key, const std::string& value) override { batch_.Put(key, value); }
  void Commit() override {
    leveldb::Status s = db_->Write(leveldb::WriteOptions(), &batch_);
    batch_.Clear();
    HALFCAF_ENFORCE(s.ok(), "cannot write to leveldb DB '", path_, "': ", s.ToString());
  }

 private:
  leveldb::DB* db_;
  std::string path_;
  leveldb::WriteBatch batch_;
};

class LevelDB final : public DB {
 public:
  LevelDB(const std::string& path, Mode mode) : path_(path) {
    std::error_code ec;
    if (mode == Mode::READ) {
      namespace fs = std::filesystem;
      HALFCAF_ENFORCE(fs::exists(path, ec), "cannot open leveldb DB '", path,
                      "': no such file or directory");
      // Checked here: LevelDB would leave LOCK and LOG files in a folder that is not a DB.
      HALFCAF_ENFORCE(fs::exists(fs::path(path) / "CURRENT", ec), "cannot open leveldb DB '",
                      path, "': ",
                      fs::is_directory(path, ec) ? "the folder holds no LevelDB (no CURRENT file)"
                                                 : "not a LevelDB folder");
    }
    leveldb::Options options;
    options.block_size = 64 << 10;
    options.write_buffer_size = 64 << 20;
    options.max_open_files = 100;
    options.error_if_exists = mode == Mode::NEW;
    options.create_if_missing = mode != Mode::READ;
    leveldb::DB* db = nullptr;
    leveldb::Status s = leveldb::DB::Open(options, path, &db);
    HALFCAF_ENFORCE(s.ok() && db != nullptr, "cannot open leveldb DB '", path, "': ",
                    s.ToString());
    db_.reset(db);
  }
  std::unique_ptr<Cursor> NewCursor() override {
    return std::make_unique<LevelDBCursor>(db_.get());
  }
  std::unique_ptr<Transaction> NewTransaction() override {
    return std::make_unique<LevelDBTransaction>(db_.get(), path_);
  }

 private:
  std::string path_;
  std::unique_ptr<leveldb::DB> db_;
};

[[maybe_unused]] const bool g_registered = [] {
  RegisterDBType("leveldb", [](const std::string& path, Mode mode) {
    return std::unique_ptr<DB>(new LevelDB(path, mode));
  });
  return true;
}();

}  // namespace
}  // namespace db
}  // namespace halfcaf
